import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express, RequestHandler } from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { eventually } from '../../../test/fault-clients.js';
import {
  hideProc,
  moveBeforeName,
  onProcRead,
  removeBeforeOpen,
  removeOnOpen,
  swapBeforeMkdir,
  swapBeforeOpen,
  swapBeforeRmdir,
  swapBeforeUse,
  watchCalls,
} from '../../../test/folder-swap.js';
import { pathgate, STORAGE_CODES } from '../src/index.js';
import {
  descriptorsUnder,
  entriesUnder,
  filePart,
  multipart,
  multipartPost,
  onApp,
  sleep,
  tempRoot,
  until,
  upload,
} from './helpers.js';

// A folder on the way to an upload, swapped for a link to a folder outside
// the sandbox after the storage's walk checked it and before it opens its
// temporary file (see swapBeforeOpen). On Linux the storage reads back where
// the open file really is (/proc/self/fd) and refuses it before a byte is written.
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('../../../test/folder-swap.js')).withFolderSwap(importOriginal),
);

const linux = process.platform === 'linux';
const descriptors = () => readdirSync('/proc/self/fd').length;

/**
 * Whether the storage let go of its files: no descriptor of this process
 * leads below the root or the outside folder, and no more are open than
 * `before` (a socket of an earlier test closing meanwhile only lowers it).
 */
const released = (before: number, root: string) => () =>
  descriptorsUnder(root).length === 0 &&
  descriptorsUnder(outside).length === 0 &&
  descriptors() <= before;

/** The storage's answer to a folder that is not where its walk checked it. */
const REFUSED = {
  status: 403,
  code: STORAGE_CODES.NOT_A_DIRECTORY,
  message: 'path component is not a directory',
};

const stored: RequestHandler = (req, res) => {
  res.status(201).json({ files: (req.files as Express.Multer.File[]).map((f) => f.originalname) });
};

/** POST /up: any file of field doc, below uploads/ (with uploads/a made), to the safe disk storage. */
const withUploads = (root: string, app: Express) => {
  mkdirSync(join(root, 'uploads', 'a'), { recursive: true });
  const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
  const docs = { file: 'doc', under: 'uploads' } as const;
  const replacing = gate.multer({ storage: gate.diskStorage({ overwrite: true }) });
  app.post('/up', gate.write(docs), gate.multer().any(), stored);
  app.post('/replace', gate.write(docs), replacing.any(), stored);
};

let outside: string;
beforeAll(() => {
  // As /proc spells it: the temp dir's own path may go through a link.
  outside = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-outside-')));
});
afterEach(() => {
  hideProc(false);
  onProcRead(undefined);
  for (const name of readdirSync(outside)) rmSync(join(outside, name), { recursive: true });
});
afterAll(() => rmSync(outside, { recursive: true, force: true }));

/** Two releases, and a link to the first, as a deployment's `current -> releases/N`; all removed after. */
async function withReleases(run: (one: string, two: string, linked: string) => Promise<void>) {
  const [one, two] = [tempRoot(), tempRoot()];
  const via = mkdtempSync(join(tmpdir(), 'pathgate-via-'));
  try {
    const linked = join(via, 'root');
    symlinkSync(one.root, linked);
    await run(one.root, two.root, linked);
  } finally {
    one.remove();
    two.remove();
    rmSync(via, { recursive: true, force: true });
  }
}

interface Retarget {
  readonly linked: string;
  readonly two: string;
  readonly overwrite: boolean;
}

/**
 * POSTs `body` to the safe disk storage at `linked` (below uploads/, files
 * up to 4 bytes) up to `cut`; once `reached` holds, the link moves to `two`,
 * and the rest is sent. Resolves to the answer's status.
 */
async function retargetMidUpload(
  { linked, two, overwrite }: Retarget,
  body: Buffer,
  cut: number,
  reached: () => boolean,
): Promise<number> {
  const small = (_root: string, app: Express) => {
    const gate = pathgate({ root: linked, fs: ['rw:uploads/**'], log: () => {} });
    const storage = gate.diskStorage({ overwrite });
    const limited = gate.multer({ storage, limits: { fileSize: 4 } });
    app.post('/small', gate.write({ file: 'doc', under: 'uploads' }), limited.any(), stored);
  };
  return onApp(small, async (port) => {
    const req = multipartPost(port, '/small', body.length);
    const answer = new Promise<Answer>((resolve) => {
      req.on('response', (res) => readAnswer(res).then(resolve));
    });
    req.write(body.subarray(0, cut));
    expect(await until(reached)).toBe(true);
    rmSync(linked);
    symlinkSync(two, linked);
    req.end(body.subarray(cut));
    return (await answer).status;
  });
}

/**
 * Whether `folder` holds the first part's `a.txt`, stored whole, and beside
 * it a temporary file of another (the second part's, open).
 */
function secondTempBeside(folder: string): boolean {
  try {
    const first = statSync(join(folder, 'a.txt'));
    if (readFileSync(join(folder, 'a.txt'), 'utf8') !== 'ok') return false;
    return readdirSync(folder).some(
      (name) => name.endsWith('.part') && statSync(join(folder, name)).ino !== first.ino,
    );
  } catch {
    return false; // a file gone between two looks: not yet
  }
}

describe('the safe disk storage, a folder swapped for a link after the walk', () => {
  it.skipIf(!linux).each(['/up', '/replace'])(
    '%s: is a 403 naming no path: nothing outside, nothing inside, the file closed',
    async (route) => {
      await onApp(withUploads, async (port, root) => {
        const before = descriptors();
        swapBeforeOpen(join(root, 'uploads', 'a'), outside);
        const res = await upload(port, route, [filePart('doc', 'a/new.txt', 'escaped')]);
        expect(lstatSync(join(root, 'uploads', 'a')).isSymbolicLink()).toBe(true); // swapped
        expect([res.status, res.json]).toEqual([403, REFUSED]);
        expect(res.text).not.toContain(root);
        expect(res.text).not.toContain(outside);
        // Its own temporary file, created outside, is removed: not one byte stays there.
        expect(readdirSync(outside)).toEqual([]);
        expect(entriesUnder(root)).toEqual(['uploads/', 'uploads/a']);
        expect(await eventually(released(before, root))).toBe(true);
      });
    },
  );

  // Removed only if still the one there: the folders may be swapped again
  // between the read of /proc and the removal, so that name holds another file.
  it.skipIf(!linux)(
    'the refused upload leaves a file put at its temporary name since',
    async () => {
      await onApp(withUploads, async (port, root) => {
        onProcRead(async (found) => {
          const path = found.toString();
          if (!path.startsWith(`${outside}/`) || !path.endsWith('.part')) return;
          renameSync(path, join(outside, 'ours'));
          writeFileSync(path, 'OTHER');
        });
        swapBeforeOpen(join(root, 'uploads', 'a'), outside);
        const res = await upload(port, '/up', [filePart('doc', 'a/new.txt', 'escaped')]);
        expect([res.status, res.json]).toEqual([403, REFUSED]);
        const others = readdirSync(outside).filter((name) => name.endsWith('.part'));
        expect(others.map((name) => readFileSync(join(outside, name), 'utf8'))).toEqual(['OTHER']);
      });
    },
  );

  // The walk made uploads/a/b; a is swapped for a link to a folder that has a b of its own.
  it.skipIf(!linux)('the refused upload removes no folder outside, through the link', async () => {
    await onApp(withUploads, async (port, root) => {
      mkdirSync(join(outside, 'b'));
      swapBeforeOpen(join(root, 'uploads', 'a'), outside);
      const res = await upload(port, '/up', [filePart('doc', 'a/b/new.txt', 'escaped')]);
      expect(res.status).toBe(403);
      expect(entriesUnder(outside)).toEqual(['b/']);
    });
  });

  // In a folder of its own: the walk makes it, through the open folder or by path.
  it('an upload with no folder swapped is stored, also where /proc cannot be read', async () => {
    await onApp(withUploads, async (port, root) => {
      for (const hidden of [false, true]) {
        hideProc(hidden);
        const name = `a/${hidden}/kept.txt`;
        const res = await upload(port, '/up', [filePart('doc', name, 'inside')]);
        expect([res.status, res.json]).toEqual([201, { files: [name] }]);
        expect(readFileSync(join(root, 'uploads', name), 'utf8')).toBe('inside');
      }
      expect(entriesUnder(root)).toEqual([
        'uploads/',
        'uploads/a/',
        'uploads/a/false/',
        'uploads/a/false/kept.txt',
        'uploads/a/true/',
        'uploads/a/true/kept.txt',
      ]);
    });
  });

  // Once linked, the file has its name: removing the temporary one is cleanup,
  // and its failure (the name gone already: a tmp reaper) is no failed upload.
  it('the temporary name gone before the storage removes it: still stored, a 201', async () => {
    await onApp(withUploads, async (port, root) => {
      const folder = join(root, 'uploads', 'a');
      watchCalls(() => {
        if (!existsSync(join(folder, 'new.txt'))) return;
        watchCalls(undefined);
        for (const name of readdirSync(folder))
          if (name.endsWith('.part')) rmSync(join(folder, name));
      });
      const res = await upload(port, '/up', [filePart('doc', 'a/new.txt', 'inside')]);
      expect([res.status, res.json]).toEqual([201, { files: ['a/new.txt'] }]);
      expect(readdirSync(folder)).toEqual(['new.txt']);
    });
  });

  // Absent is not unreadable: a read that fails otherwise confirms nothing, so nothing is stored.
  it.skipIf(!linux)(
    'where /proc fails to be read (EACCES), a 500: nothing stored, the file closed',
    async () => {
      await onApp(withUploads, async (port, root) => {
        const before = descriptors();
        onProcRead(async (found) => {
          if (!found.toString().endsWith('.part')) return;
          throw Object.assign(new Error(`EACCES: permission denied, readlink '${found}'`), {
            code: 'EACCES',
          });
        });
        const res = await upload(port, '/up', [filePart('doc', 'a/new.txt', 'inside')]);
        expect([res.status, res.json]).toEqual([
          500,
          { status: 500, code: STORAGE_CODES.FAILED, message: 'the file could not be stored' },
        ]);
        expect(entriesUnder(root)).toEqual(['uploads/', 'uploads/a/']);
        expect(await eventually(released(before, root))).toBe(true);
      });
    },
  );

  // /proc answered for the root, then no more (ENOENT) for a folder on the way:
  // where that folder is can no longer be told, so the walk refuses it (fail
  // closed) rather than go on by path, which a swap meanwhile would redirect.
  it.skipIf(!linux)(
    'where /proc stops answering during the walk, a 403: nothing stored',
    async () => {
      await onApp(withUploads, async (port, root) => {
        onProcRead(async (found) => {
          if (!found.toString().endsWith('/uploads/a')) return;
          throw Object.assign(new Error(`ENOENT: no such file, readlink '${found}'`), {
            code: 'ENOENT',
          });
        });
        const res = await upload(port, '/up', [filePart('doc', 'a/new.txt', 'inside')]);
        expect([res.status, res.json]).toEqual([403, REFUSED]);
        expect(entriesUnder(root)).toEqual(['uploads/', 'uploads/a/']);
      });
    },
  );

  // The README's stated limit: with no /proc to read back, the check before the open stands alone.
  it('where /proc cannot be read, the swap is still followed (as before)', async () => {
    await onApp(withUploads, async (port, root) => {
      hideProc(true);
      swapBeforeOpen(join(root, 'uploads', 'a'), outside);
      const res = await upload(port, '/up', [filePart('doc', 'a/new.txt', 'escaped')]);
      expect(res.status).toBe(201);
      expect(readFileSync(join(outside, 'new.txt'), 'utf8')).toBe('escaped');
    });
  });

  // Not a swap: the walk by path refuses a link there before, as the walk through open folders does.
  it('where /proc cannot be read, a link planted on the way is still a 403', async () => {
    await onApp(withUploads, async (port, root) => {
      hideProc(true);
      symlinkSync(outside, join(root, 'uploads', 'out'));
      const res = await upload(port, '/up', [filePart('doc', 'out/new.txt', 'escaped')]);
      expect([res.status, res.json]).toEqual([403, REFUSED]);
      expect(readdirSync(outside)).toEqual([]);
    });
  });

  it('a root given through a link stores as usual: its real path is what is compared', async () => {
    const real = tempRoot();
    const via = mkdtempSync(join(tmpdir(), 'pathgate-via-'));
    try {
      const linked = join(via, 'root');
      symlinkSync(real.root, linked);
      await onApp(
        (_root, app) => withUploads(linked, app),
        async (port) => {
          const res = await upload(port, '/up', [filePart('doc', 'a/deep/new.txt', 'inside')]);
          expect([res.status, res.json]).toEqual([201, { files: ['a/deep/new.txt'] }]);
          expect(readFileSync(join(real.root, 'uploads/a/deep/new.txt'), 'utf8')).toBe('inside');
        },
      );
    } finally {
      real.remove();
      rmSync(via, { recursive: true, force: true });
    }
  });

  // As a deployment retargets `current -> releases/N` without a restart.
  it('a root link retargeted between two uploads: both are stored, each where the link led', async () => {
    const [first, second] = [tempRoot(), tempRoot()];
    const via = mkdtempSync(join(tmpdir(), 'pathgate-via-'));
    try {
      const linked = join(via, 'root');
      symlinkSync(first.root, linked);
      mkdirSync(join(second.root, 'uploads', 'a'), { recursive: true });
      await onApp(
        (_root, app) => withUploads(linked, app),
        async (port) => {
          const before = await upload(port, '/up', [filePart('doc', 'a/one.txt', '1')]);
          expect(before.status).toBe(201);
          rmSync(linked);
          symlinkSync(second.root, linked);
          const after = await upload(port, '/up', [filePart('doc', 'a/two.txt', '2')]);
          expect([after.status, after.json]).toEqual([201, { files: ['a/two.txt'] }]);
          expect(readFileSync(join(first.root, 'uploads/a/one.txt'), 'utf8')).toBe('1');
          expect(readFileSync(join(second.root, 'uploads/a/two.txt'), 'utf8')).toBe('2');
        },
      );
    } finally {
      first.remove();
      second.remove();
      rmSync(via, { recursive: true, force: true });
    }
  });

  // Retargeted between the store's resolving the root and the walk's open of
  // it: the root opened is not where it was resolved, and still there (not a
  // folder removed, walked again): refused.
  it.skipIf(!linux)(
    'a root link retargeted as the walk opens it: a 403, nothing stored in either',
    async () => {
      await withReleases(async (one, two, linked) => {
        mkdirSync(join(two, 'uploads', 'a'), { recursive: true });
        await onApp(
          (_root, app) => withUploads(linked, app),
          async (port) => {
            swapBeforeUse(linked, two);
            const res = await upload(port, '/up', [filePart('doc', 'a/x.txt', 'x')]);
            expect([res.status, res.json]).toEqual([403, REFUSED]);
            for (const release of [one, two]) {
              expect(entriesUnder(release)).toEqual(['uploads/', 'uploads/a/']);
            }
          },
        );
      });
    },
  );

  // A deployment retargets `current -> releases/N` while an upload is under
  // way: its failure takes back the folder it made in the old release, and
  // never the folder of the same name the new release has, empty or not.
  it('a root link retargeted mid-upload: the new release keeps its folder', async () => {
    await withReleases(async (one, two, linked) => {
      mkdirSync(join(one, 'uploads'));
      mkdirSync(join(two, 'uploads', 'p'), { recursive: true }); // the new release's own
      const second = filePart('doc', 'p/b.txt', 'too large');
      const body = multipart([filePart('doc', 'p/a.txt', 'ok'), second]);
      // The first part whole, stored in the old release; the second's headers not yet sent.
      const cut = body.indexOf(Buffer.from(second.headers));
      const storedOld = () =>
        entriesUnder(one).join() === ['uploads/', 'uploads/p/', 'uploads/p/a.txt'].join();
      const status = await retargetMidUpload(
        { linked, two, overwrite: false },
        body,
        cut,
        storedOld,
      );
      expect(status).toBe(413);
      // Its removals run after the answer: wait for them, then look.
      await sleep(200);
      expect(entriesUnder(two)).toEqual(['uploads/', 'uploads/p/']);
    });
  });

  // The same, the link retargeted once the failing part's temporary file is
  // open in the old release: the failure takes back what it stored there (with
  // `overwrite`, the file it replaced is back), and never touches the file of
  // the same name the new release has.
  it.each([
    { overwrite: false, left: ['uploads/'] },
    { overwrite: true, left: ['uploads/', 'uploads/p/', 'uploads/p/a.txt'] },
  ])(
    'a root link retargeted mid-upload, overwrite $overwrite: the old release as before, the new one untouched',
    async ({ overwrite, left }) => {
      await withReleases(async (one, two, linked) => {
        mkdirSync(join(one, 'uploads'));
        if (overwrite) mkdirSync(join(one, 'uploads', 'p'));
        if (overwrite) writeFileSync(join(one, 'uploads', 'p', 'a.txt'), 'old one');
        mkdirSync(join(two, 'uploads', 'p'), { recursive: true });
        writeFileSync(join(two, 'uploads', 'p', 'a.txt'), 'release two');
        const second = filePart('doc', 'p/b.txt', 'too large');
        const body = multipart([filePart('doc', 'p/a.txt', 'ok'), second]);
        // The first part whole; of the second, its headers and two bytes.
        const cut = body.indexOf(Buffer.from(second.headers)) + second.headers.length + 6;
        const opened = () => secondTempBeside(join(one, 'uploads', 'p'));
        const status = await retargetMidUpload({ linked, two, overwrite }, body, cut, opened);
        expect(status).toBe(413);
        // Its removals run after the answer.
        await until(() => entriesUnder(one).join() === left.join());
        expect(entriesUnder(one)).toEqual(left);
        if (overwrite) expect(readFileSync(join(one, 'uploads/p/a.txt'), 'utf8')).toBe('old one');
        expect(entriesUnder(two)).toEqual(['uploads/', 'uploads/p/', 'uploads/p/a.txt']);
        expect(readFileSync(join(two, 'uploads/p/a.txt'), 'utf8')).toBe('release two');
      });
    },
  );

  it('a root made after the gate: a 500 before (nothing stored), stored once it exists', async () => {
    const parent = tempRoot();
    const root = join(parent.root, 'later');
    try {
      await onApp(
        (_root, app) => {
          const gate = pathgate({ root, fs: ['rw:**'], log: () => {} });
          app.post('/up', gate.write({ file: 'doc' }), gate.multer().any(), stored);
        },
        async (port) => {
          const missing = await upload(port, '/up', [filePart('doc', 'x.txt', 'early')]);
          expect(missing.status).toBe(500);
          expect(readdirSync(parent.root)).toEqual([]);
          mkdirSync(root);
          const res = await upload(port, '/up', [filePart('doc', 'x.txt', 'later')]);
          expect([res.status, res.json]).toEqual([201, { files: ['x.txt'] }]);
          expect(readFileSync(join(root, 'x.txt'), 'utf8')).toBe('later');
        },
      );
    } finally {
      parent.remove();
    }
  });
});

// A folder on the way swapped for a link to a folder outside right before
// the walk makes the next folder in it (see swapBeforeMkdir): `uploads/a`,
// there before, or `new`, the first one the walk made. On Linux each new
// folder is made through the one above it, open and confirmed, so none is
// made through the link.
describe('the safe disk storage, a folder swapped for a link before the walk makes the next', () => {
  const CASES = [
    { swapped: 'a', upload: 'a/new/x.txt', left: ['uploads/', 'uploads/a'] },
    {
      swapped: 'a/new',
      upload: 'a/new/deeper/x.txt',
      left: ['uploads/', 'uploads/a/', 'uploads/a/new'],
    },
  ] as const;

  it.skipIf(!linux).each(CASES)(
    'uploads/$swapped: a 403 naming no path, no folder made outside, none left inside',
    async ({ swapped, upload: name, left }) => {
      await onApp(withUploads, async (port, root) => {
        const before = descriptors();
        swapBeforeMkdir(join(root, 'uploads', swapped), outside);
        const res = await upload(port, '/up', [filePart('doc', name, 'escaped')]);
        expect(lstatSync(join(root, 'uploads', swapped)).isSymbolicLink()).toBe(true); // swapped
        expect([res.status, res.json]).toEqual([403, REFUSED]);
        expect(res.text).not.toContain(root);
        expect(res.text).not.toContain(outside);
        expect(readdirSync(outside)).toEqual([]);
        expect(entriesUnder(root)).toEqual(left);
        expect(await eventually(released(before, root))).toBe(true);
      });
    },
  );
});

// A failed upload removes the folder its walk made (uploads/a/b), and
// uploads/a is swapped for a link to a folder with an empty b of its own
// right before (see swapBeforeRmdir). On Linux the folder is removed through
// the one above it, open and confirmed: never through the link.
describe('the safe disk storage, a folder swapped for a link before a made one is removed', () => {
  const tooLarge = (root: string, app: Express) => {
    mkdirSync(join(root, 'uploads', 'a'), { recursive: true });
    const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
    const small = gate.multer({ limits: { fileSize: 3 } });
    app.post('/small', gate.write({ file: 'doc', under: 'uploads' }), small.any(), stored);
  };

  it.skipIf(!linux)('the upload fails, the empty folder outside stays', async () => {
    await onApp(tooLarge, async (port, root) => {
      mkdirSync(join(outside, 'b'));
      swapBeforeRmdir(join(root, 'uploads', 'a'), outside);
      const res = await upload(port, '/small', [filePart('doc', 'a/b/x.txt', 'too large')]);
      expect(res.status).toBe(413);
      expect(lstatSync(join(root, 'uploads', 'a')).isSymbolicLink()).toBe(true); // swapped
      expect(entriesUnder(outside)).toEqual(['b/']);
    });
  });

  // Where /proc cannot be read, the folder is removed by its real path once
  // that still leads to it: a swap before that check (here once its
  // temporary file is open) is seen; only one right after it is followed.
  it('where /proc cannot be read, a swap before the removal: the empty folder outside stays', async () => {
    await onApp(tooLarge, async (port, root) => {
      hideProc(true);
      mkdirSync(join(outside, 'b'));
      const made = join(root, 'uploads', 'a', 'b');
      watchCalls(() => {
        if (!existsSync(made) || !readdirSync(made).some((name) => name.endsWith('.part'))) return;
        watchCalls(undefined);
        swapBeforeUse(join(root, 'uploads', 'a'), outside);
      });
      const res = await upload(port, '/small', [filePart('doc', 'a/b/x.txt', 'too large')]);
      expect(res.status).toBe(413);
      expect(lstatSync(join(root, 'uploads', 'a')).isSymbolicLink()).toBe(true); // swapped
      expect(entriesUnder(outside)).toEqual(['b/']);
    });
  });

  it('with no swap, the folder it made is removed, also where /proc cannot be read', async () => {
    await onApp(tooLarge, async (port, root) => {
      for (const hidden of [false, true]) {
        hideProc(hidden);
        const res = await upload(port, '/small', [filePart('doc', 'a/b/x.txt', 'too large')]);
        expect(res.status).toBe(413);
        expect(entriesUnder(root)).toEqual(['uploads/', 'uploads/a/']);
      }
    });
  });
});

// The folder moved away once the file in it was created and checked, before
// the file gets its name (see moveBeforeName), and a link left in its place.
// The link or rename names the file beside its temporary one: it can land
// only in the folder that holds it (wherever that went), never at the link's target.
describe('the safe disk storage, a folder moved away before the file is named', () => {
  let away: string;
  beforeAll(() => {
    away = mkdtempSync(join(tmpdir(), 'pathgate-away-'));
  });
  afterEach(() => {
    for (const name of readdirSync(away)) rmSync(join(away, name), { recursive: true });
  });
  afterAll(() => rmSync(away, { recursive: true, force: true }));

  const named = (dir: string) => readdirSync(dir).filter((name) => !name.startsWith('.pathgate-'));

  it.each(['/up', '/replace'])(
    '%s, a link to another folder left: a 403 naming no path, no file named anywhere',
    async (route) => {
      await onApp(withUploads, async (port, root) => {
        const moved = join(away, 'a');
        moveBeforeName(join(root, 'uploads', 'a'), moved, outside);
        const res = await upload(port, route, [filePart('doc', 'a/new.txt', 'escaped')]);
        expect([res.status, res.json]).toEqual([403, REFUSED]);
        expect(res.text).not.toContain(root);
        expect(readdirSync(outside)).toEqual([]);
        expect(named(moved)).toEqual([]);
      });
    },
  );

  // The README's stated limit: whoever can move the folder has the file anyway.
  it('a link to where it went left: the file is named there, beside its temporary file', async () => {
    await onApp(withUploads, async (port, root) => {
      const moved = join(away, 'a');
      moveBeforeName(join(root, 'uploads', 'a'), moved, moved);
      const res = await upload(port, '/up', [filePart('doc', 'a/new.txt', 'moved')]);
      expect(res.status).toBe(201);
      expect(readFileSync(join(moved, 'new.txt'), 'utf8')).toBe('moved');
      expect(readdirSync(outside)).toEqual([]);
    });
  });
});

// Failed uploads beside this one take back a new folder they share while it
// is still empty: the store's open then finds it gone, and walks again.
describe('the safe disk storage, a new folder removed under the store', () => {
  it.each([1, 3])('%i time(s) before its file is created: the upload is stored', async (times) => {
    await onApp(withUploads, async (port, root) => {
      removeBeforeOpen(join(root, 'uploads', 'a', 'new'), times);
      const res = await upload(port, '/up', [filePart('doc', 'a/new/x.txt', 'kept')]);
      expect([res.status, res.json]).toEqual([201, { files: ['a/new/x.txt'] }]);
      expect(readFileSync(join(root, 'uploads', 'a', 'new', 'x.txt'), 'utf8')).toBe('kept');
    });
  });

  // On Linux, as the walk reads back where the folder it opened is: a folder removed is walked again, not refused.
  it('right after the walk opened it: the upload is stored', async () => {
    await onApp(withUploads, async (port, root) => {
      removeOnOpen(join(root, 'uploads', 'a', 'new'));
      const res = await upload(port, '/up', [filePart('doc', 'a/new/x.txt', 'kept')]);
      expect([res.status, res.json]).toEqual([201, { files: ['a/new/x.txt'] }]);
      expect(readFileSync(join(root, 'uploads', 'a', 'new', 'x.txt'), 'utf8')).toBe('kept');
    });
  });

  it('removed every time: an answer, not a loop, and nothing stored', async () => {
    await onApp(withUploads, async (port, root) => {
      removeBeforeOpen(join(root, 'uploads', 'a', 'new'), 1000);
      const res = await upload(port, '/up', [filePart('doc', 'a/new/x.txt', 'lost')]);
      removeBeforeOpen(join(root, 'uploads', 'a', 'new'), 0);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(entriesUnder(root)).toEqual(['uploads/', 'uploads/a/']);
    });
  });
});
