import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { FOLDER_DEPTH_MAX } from '../examples/shared/files.js';
import { descriptorsUnder } from '../packages/express-middleware/test/helpers.js';
import { begin, EXAMPLES, type Got, postFiles, postJson, type Sent, send } from './examples.js';
import { eventually } from './fault-clients.js';
import { startedForSuite } from './fixture.js';
import {
  hideProc,
  moveOnceOpened,
  removeOnceOpened,
  swapBeforeMkdir,
  swapBeforeOpen,
  swapBeforeUse,
  watchCalls,
} from './folder-swap.js';

// A folder on the way to a file, swapped for a link to a folder outside the
// sandbox after pathgate checked the path and before the server opens it (see
// swapBeforeOpen). On Linux the server reads back where the open file really
// is (/proc/self/fd) and refuses it; elsewhere it cannot, and the READMEs say so.
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('./folder-swap.js')).withFolderSwap(importOriginal),
);

const linux = process.platform === 'linux';
const descriptors = () => readdirSync('/proc/self/fd').length;
const OUTSIDE_BYTES = 'outside the sandbox: never to reach a client';
const REFUSED = { statusCode: 404, error: 'Not Found', message: 'no such file or folder' };
const SERVER_FAULT = { statusCode: 500, error: 'Internal Server Error', message: 'internal error' };

describe.each(EXAMPLES)(
  'the $name example, a folder swapped for a link after the check',
  (example) => {
    const app = startedForSuite(example);
    let outside: string;
    beforeAll(() => {
      outside = mkdtempSync(join(tmpdir(), 'pathgate-outside-'));
      writeFileSync(join(outside, 'guide.md'), OUTSIDE_BYTES);
    });
    afterAll(() => {
      hideProc(false);
      rmSync(outside, { recursive: true, force: true });
    });

    /** `public/<name>/guide.md`, checked while `public/<name>` is a real folder. */
    const inside = (name: string) => {
      mkdirSync(join(app.root, 'public', name));
      writeFileSync(join(app.root, 'public', name, 'guide.md'), 'inside');
      return join(app.root, 'public', name);
    };

    it.skipIf(!linux)(
      'a download through it is a 404 naming no path, never the outside file',
      async () => {
        const folder = inside('docs-swapped');
        const before = descriptors();
        swapBeforeOpen(folder, outside);
        const got = await send(app.port, { path: '/files/public/docs-swapped/guide.md' });
        expect(lstatSync(folder).isSymbolicLink()).toBe(true); // the swap did happen
        expect(got.text).not.toContain(OUTSIDE_BYTES);
        expect(got.status).toBe(404);
        expect(JSON.parse(got.text)).toEqual(REFUSED);
        // The refused file was closed, not left to the garbage collector (and
        // nothing else kept: other sockets of this process may close meanwhile).
        const closed = () => descriptorsUnder(outside).length === 0 && descriptors() <= before;
        expect(await eventually(closed)).toBe(true);
      },
    );

    it('a download with no folder swapped is served, also where /proc cannot be read', async () => {
      inside('docs-kept');
      for (const hidden of [false, true]) {
        hideProc(hidden);
        const got = await send(app.port, { path: '/files/public/docs-kept/guide.md' });
        expect([got.status, got.text]).toEqual([200, 'inside']);
      }
      hideProc(false);
    });
  },
);

/** A delete, a move or a listing naming a path below `uploads/<folder>`. */
interface Act {
  what: string;
  sent: (folder: string) => Sent;
}

const DELETE: Act = {
  what: 'a delete',
  sent: (folder) => ({ method: 'DELETE', path: `/files/uploads/${folder}/note.txt` }),
};
const MOVE_OUT: Act = {
  what: 'a move from it',
  sent: (folder) =>
    postJson(
      '/api/move',
      JSON.stringify({ from: `uploads/${folder}/note.txt`, to: `uploads/${folder}-landed.txt` }),
    ),
};
const MOVE_IN: Act = {
  what: 'a move into it',
  sent: (folder) =>
    postJson(
      '/api/move',
      JSON.stringify({ from: `uploads/${folder}-source.txt`, to: `uploads/${folder}/new.txt` }),
    ),
};
const LIST: Act = {
  what: 'a listing below it',
  sent: (folder) => ({ path: `/api/list?dir=uploads/${folder}/sub` }),
};
const ACTS = [DELETE, MOVE_OUT, MOVE_IN, LIST];

/**
 * New folders below `uploads/<name>` for a move or an upload to make, and the
 * folder on the way swapped for a link right before the next one is made:
 * `uploads/<name>` itself (there before), or `new`, the first one made.
 */
const NEW_FOLDERS = [
  { swapped: 'a folder there before', made: false, below: 'new' },
  { swapped: 'a folder just made', made: true, below: 'new/deeper' },
] as const;

/**
 * Arms the swap for a `NEW_FOLDERS` case under `root`: the folder swapped
 * and its empty twin in `outside` the link leads to.
 */
function newFolders(root: string, outside: string, name: string, made: boolean) {
  const folder = join(root, 'uploads', name);
  mkdirSync(folder);
  const swapped = made ? join(folder, 'new') : folder;
  const twin = join(outside, name);
  mkdirSync(twin);
  swapBeforeMkdir(swapped, twin);
  return { swapped, twin };
}

/** Every name below `dir`, sorted: what a request may have changed there. */
const tree = (dir: string) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();

describe.each(EXAMPLES)(
  'the $name example, a delete, a move or a listing through a folder swapped for a link',
  (example) => {
    const app = startedForSuite(example);
    let outside: string;
    beforeAll(() => {
      outside = mkdtempSync(join(tmpdir(), 'pathgate-outside-'));
    });
    afterAll(() => {
      hideProc(false);
      rmSync(outside, { recursive: true, force: true });
    });

    /**
     * `uploads/<name>/` and its twin outside, each with `note.txt` and
     * `sub/only-<where>.txt`, and `uploads/<name>-source.txt` to move in.
     */
    const twins = (name: string) => {
      const folder = join(app.root, 'uploads', name);
      const twin = join(outside, name);
      for (const [dir, where] of [
        [folder, 'inside'],
        [twin, 'outside'],
      ] as const) {
        mkdirSync(join(dir, 'sub'), { recursive: true });
        writeFileSync(join(dir, 'note.txt'), where);
        writeFileSync(join(dir, 'sub', `only-${where}.txt`), where);
      }
      writeFileSync(join(app.root, 'uploads', `${name}-source.txt`), 'moved in');
      return { folder, twin };
    };

    /** Whether `got` or the outside twin shows the request reached outside. */
    const reachedOutside = (got: Got, twin: string, before: string[]) =>
      got.text.includes('only-outside') || tree(twin).join() !== before.join();

    it.skipIf(!linux).each(ACTS)(
      '$what, swapped after the check: a 404 naming no path, nothing outside touched',
      async ({ what, sent }) => {
        const { folder, twin } = twins(`swapped-${what.replaceAll(' ', '-')}`);
        const before = tree(twin);
        const open = descriptors();
        swapBeforeUse(folder, twin);
        const got = await send(app.port, sent(basename(folder)));
        expect(lstatSync(folder).isSymbolicLink()).toBe(true); // the swap did happen
        expect(reachedOutside(got, twin, before)).toBe(false);
        expect(existsSync(`${folder}-landed.txt`)).toBe(false); // no outside file moved in
        expect([got.status, JSON.parse(got.text)]).toEqual([404, REFUSED]);
        // The refused folder was closed, not left to the garbage collector
        // (at most: the sockets of the tests before may still be closing).
        expect(await eventually(() => descriptors() <= open)).toBe(true);
      },
    );

    // What the READMEs state: without /proc the server cannot tell, and follows the link.
    it.each(ACTS)(
      '$what, where /proc cannot be read: the link is followed',
      async ({ what, sent }) => {
        const { folder, twin } = twins(`unseen-${what.replaceAll(' ', '-')}`);
        const before = tree(twin);
        hideProc(true);
        swapBeforeUse(folder, twin);
        const got = await send(app.port, sent(basename(folder))).finally(() => hideProc(false));
        expect(got.status).toBe(200);
        expect(reachedOutside(got, twin, before)).toBe(true);
      },
    );

    it.skipIf(!linux).each([
      { ...DELETE, after: ['sub', 'sub/only-inside.txt'] },
      { ...MOVE_IN, after: ['new.txt', 'note.txt', 'sub', 'sub/only-inside.txt'] },
    ] as const)(
      '$what, the folder moved away once opened and a link left: it acts in the moved folder, never outside',
      async ({ what, sent, after }) => {
        const { folder, twin } = twins(`moved-${what.replaceAll(' ', '-')}`);
        const before = tree(twin);
        const open = descriptors();
        moveOnceOpened(folder, `${twin}-moved`, twin);
        const got = await send(app.port, sent(basename(folder)));
        expect(lstatSync(folder).isSymbolicLink()).toBe(true); // the move did happen
        expect(got.status).toBe(200);
        expect(tree(twin)).toEqual(before);
        expect(tree(`${twin}-moved`)).toEqual(after);
        expect(await eventually(() => descriptors() <= open)).toBe(true);
      },
    );

    it.skipIf(!linux).each(NEW_FOLDERS)(
      'a move into new folders, $swapped swapped right before the next is made: a 404, nothing made outside',
      async ({ made, below }) => {
        const { swapped, twin } = newFolders(app.root, outside, `move-${made}`, made);
        writeFileSync(join(app.root, 'uploads', `move-${made}.txt`), 'moved');
        const to = `uploads/move-${made}/${below}/x.txt`;
        const got = await send(
          app.port,
          postJson('/api/move', JSON.stringify({ from: `uploads/move-${made}.txt`, to })),
        );
        expect(lstatSync(swapped).isSymbolicLink()).toBe(true); // the swap did happen
        expect(readdirSync(twin)).toEqual([]);
        expect([got.status, JSON.parse(got.text)]).toEqual([404, REFUSED]);
      },
    );

    // What the READMEs state: without /proc the server cannot tell, and follows the link.
    it('a move into new folders, where /proc cannot be read: they are made through the link', async () => {
      const { twin } = newFolders(app.root, outside, 'move-unseen', false);
      writeFileSync(join(app.root, 'uploads', 'move-unseen.txt'), 'moved');
      hideProc(true);
      const to = 'uploads/move-unseen/new/x.txt';
      const got = await send(
        app.port,
        postJson('/api/move', JSON.stringify({ from: 'uploads/move-unseen.txt', to })),
      ).finally(() => hideProc(false));
      expect(got.status).toBe(200);
      expect(tree(twin)).toEqual(['new', 'new/x.txt']);
    });

    it('with no folder swapped, a move makes its new folders, also where /proc cannot be read', async () => {
      for (const hidden of [false, true]) {
        const from = join(app.root, 'uploads', `deep-${hidden}.txt`);
        writeFileSync(from, 'deep');
        hideProc(hidden);
        const to = `uploads/deep-${hidden}/one/two/x.txt`;
        const got = await send(
          app.port,
          postJson('/api/move', JSON.stringify({ from: `uploads/deep-${hidden}.txt`, to })),
        ).finally(() => hideProc(false));
        expect(got.status).toBe(200);
        expect(readFileSync(join(app.root, to), 'utf8')).toBe('deep');
      }
    });

    it.skipIf(!linux)(
      'a move into many new folders holds a few descriptors at once, not one per folder',
      async () => {
        writeFileSync(join(app.root, 'uploads', 'deeper.txt'), 'deep');
        const before = descriptors();
        let most = before;
        // Read right after each open the server made: the descriptors it holds then.
        watchCalls(() => {
          most = Math.max(most, descriptors());
        });
        // As deep as a client may go: uploads/, deeper/ and 30 folders below.
        const to = `uploads/deeper/${'d/'.repeat(FOLDER_DEPTH_MAX - 2)}x.txt`;
        const got = await send(
          app.port,
          postJson('/api/move', JSON.stringify({ from: 'uploads/deeper.txt', to })),
        ).finally(() => watchCalls(undefined));
        expect(got.status).toBe(200);
        expect(readFileSync(join(app.root, to), 'utf8')).toBe('deep');
        expect(most - before).toBeLessThan(10);
      },
    );

    it('with no folder swapped, the moves, a listing and a delete work, also where /proc cannot be read', async () => {
      for (const hidden of [false, true]) {
        const { folder } = twins(`kept-${hidden}`);
        const name = basename(folder);
        hideProc(hidden);
        const sent = [
          ...[MOVE_OUT, MOVE_IN, LIST].map((act) => act.sent(name)),
          { method: 'DELETE', path: `/files/uploads/${name}/new.txt` },
        ];
        const got: Got[] = [];
        for (const one of sent) got.push(await send(app.port, one));
        hideProc(false);
        expect(got.map(({ status }) => status)).toEqual([200, 200, 200, 200]);
        expect(JSON.parse(got[2]?.text ?? '')).toEqual({
          entries: [{ name: 'only-inside.txt', type: 'file', size: 6 }],
        });
        expect(tree(folder)).toEqual(['sub', 'sub/only-inside.txt']);
        expect(readFileSync(`${folder}-landed.txt`, 'utf8')).toBe('inside');
      }
    });
  },
);

// The kernel names a removed folder `<path> (deleted)`: a folder really
// named so, beside the checked one, is not the checked one removed.
describe.each(EXAMPLES)(
  'the $name example, a folder swapped for a link to its " (deleted)" twin',
  (example) => {
    const app = startedForSuite(example);

    it.skipIf(!linux)(
      'a delete in uploads/, swapped for a link to "uploads (deleted)" outside the allowlist: a 404, its file stays',
      async () => {
        const uploads = join(app.root, 'uploads');
        const twin = `${uploads} (deleted)`;
        mkdirSync(twin);
        writeFileSync(join(twin, 'hello.txt'), OUTSIDE_BYTES);
        swapBeforeUse(uploads, twin);
        const got = await send(app.port, { method: 'DELETE', path: '/files/uploads/hello.txt' });
        expect(lstatSync(uploads).isSymbolicLink()).toBe(true); // the swap did happen
        expect([got.status, JSON.parse(got.text)]).toEqual([404, REFUSED]);
        expect(readFileSync(join(twin, 'hello.txt'), 'utf8')).toBe(OUTSIDE_BYTES);
      },
    );
  },
);

// Express stores uploads with @pathgate/express's own storage, not the example's code.
describe('the fastify example, an upload folder swapped for a link after the check', () => {
  const app = startedForSuite(EXAMPLES[0]);
  let outside: string;
  beforeAll(() => {
    outside = mkdtempSync(join(tmpdir(), 'pathgate-outside-'));
  });
  afterAll(() => {
    watchCalls(undefined);
    hideProc(false);
    rmSync(outside, { recursive: true, force: true });
  });

  /** A folder of its own outside the sandbox, empty. */
  const outsideFolder = (name: string) => {
    mkdirSync(join(outside, name));
    return join(outside, name);
  };

  it.skipIf(!linux).each([
    { what: 'a folder there before', made: true },
    { what: 'a folder the upload makes', made: false },
  ])(
    '$what, swapped once made, before the temporary file is created: a 404, nothing created outside, not even for a moment',
    async ({ what, made }) => {
      const name = what.replaceAll(' ', '-');
      const folder = join(app.root, 'uploads', name);
      if (made) mkdirSync(folder);
      const target = outsideFolder(name);
      // What the target held after each open and link the server made.
      const seen: string[] = [];
      watchCalls(() => seen.push(...readdirSync(target)));
      const open = descriptors();
      swapBeforeUse(folder, target);
      const got = await send(
        app.port,
        postFiles('/api/upload', ['file', `${name}/new.txt`, 'data']),
      ).finally(() => watchCalls(undefined));
      expect(lstatSync(folder).isSymbolicLink()).toBe(true); // the swap did happen
      expect([got.status, JSON.parse(got.text)]).toEqual([404, REFUSED]);
      expect(seen).toEqual([]);
      expect(readdirSync(target)).toEqual([]);
      expect(await eventually(() => descriptors() <= open)).toBe(true);
    },
  );

  it.skipIf(!linux).each(NEW_FOLDERS)(
    'an upload into new folders, $swapped swapped right before the next is made: a 404, nothing made outside',
    async ({ made, below }) => {
      const { swapped, twin } = newFolders(app.root, outside, `upload-${made}`, made);
      const got = await send(
        app.port,
        postFiles('/api/upload', ['file', `upload-${made}/${below}/x.txt`, 'data']),
      );
      expect(lstatSync(swapped).isSymbolicLink()).toBe(true); // the swap did happen
      expect(readdirSync(twin)).toEqual([]);
      expect([got.status, JSON.parse(got.text)]).toEqual([404, REFUSED]);
    },
  );

  // What the READMEs state: without /proc the server cannot tell, and follows the link.
  it('where /proc cannot be read, swapped before the temporary file is created: stored through the link', async () => {
    const folder = join(app.root, 'uploads', 'unseen');
    mkdirSync(folder);
    const target = outsideFolder('unseen');
    hideProc(true);
    swapBeforeUse(folder, target);
    const got = await send(
      app.port,
      postFiles('/api/upload', ['file', 'unseen/new.txt', 'data']),
    ).finally(() => hideProc(false));
    expect(got.status).toBe(201);
    expect(readdirSync(target)).toEqual(['new.txt']);
  });

  it.skipIf(!linux)(
    'a folder moved away before the upload is named, a link left: stored in the moved folder, never at the link',
    async () => {
      const folder = join(app.root, 'uploads', 'moving');
      mkdirSync(folder);
      const target = outsideFolder('moving');
      const moved = join(outside, 'moved');
      const open = descriptors();
      moveOnceOpened(folder, moved, target);
      const got = await send(
        app.port,
        postFiles('/api/upload', ['file', 'moving/new.txt', 'data']),
      );
      expect(lstatSync(folder).isSymbolicLink()).toBe(true); // the move did happen
      expect(got.status).toBe(201);
      expect(readdirSync(target)).toEqual([]);
      // Named in the folder it was created in, and its temporary name removed there.
      expect(readdirSync(moved)).toEqual(['new.txt']);
      expect(readFileSync(join(moved, 'new.txt'), 'utf8')).toBe('data');
      expect(await eventually(() => descriptors() <= open)).toBe(true);
    },
  );

  it.skipIf(!linux)(
    'a folder swapped after a file was stored in it, then a later part fails: the file of that name outside stays',
    async () => {
      const folder = join(app.root, 'uploads', 'stored');
      mkdirSync(folder);
      const target = outsideFolder('stored');
      writeFileSync(join(target, 'one.txt'), OUTSIDE_BYTES);
      // one.txt whole, then a field the body ends inside of: a 400 once it ends.
      const boundary = 'pathgate-later-part';
      const upload = begin(app.port, {
        method: 'POST',
        path: '/api/upload',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        body:
          `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="stored/one.txt"\r\n\r\n` +
          `inside\r\n--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\npart of it`,
      });
      expect(await eventually(() => existsSync(join(folder, 'one.txt')))).toBe(true);
      renameSync(folder, join(outside, 'stored-away'));
      symlinkSync(target, folder);
      expect((await upload.end()).status).toBe(400);
      expect(readFileSync(join(target, 'one.txt'), 'utf8')).toBe(OUTSIDE_BYTES);
    },
  );
});

// Failed uploads beside this one, each taking back the new folder they share:
// a few times the upload makes it again; a folder that keeps going is the
// sandbox changing under the server, no name's fault (a 500), not a loop.
describe.each(EXAMPLES)('the $name example, a new upload folder removed under it', (example) => {
  const app = startedForSuite(example);
  afterEach(() => vi.restoreAllMocks());

  it('three times before the file is created: the upload is stored', async () => {
    const folder = join(app.root, 'uploads', 'shared-new');
    removeOnceOpened(folder, 3);
    const got = await send(
      app.port,
      postFiles('/api/upload', ['file', 'shared-new/x.txt', 'kept']),
    );
    expect(got.status).toBe(201);
    expect(readdirSync(folder)).toEqual(['x.txt']);
  });

  it('every time: a 500 naming no path, logged, not a loop, and nothing stored', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const folder = join(app.root, 'uploads', 'always-gone');
    removeOnceOpened(folder, 1000);
    const got = await send(
      app.port,
      postFiles('/api/upload', ['file', 'always-gone/x.txt', 'lost']),
    );
    removeOnceOpened(folder, 0);
    expect([got.status, JSON.parse(got.text)]).toEqual([500, SERVER_FAULT]);
    expect(logged).toHaveBeenCalledOnce();
    expect(readdirSync(join(app.root, 'uploads'))).not.toContain('always-gone');
  });
});
