import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type express from 'express';
import { beforeEach, describe, expect, it } from 'vitest';
import { pathgate } from '../src/index.js';
import {
  appPerTest,
  BOUNDARY,
  entriesUnder,
  fieldPart,
  filePart,
  multipart,
  multipartPost,
  type RawPart,
  sleep,
} from './helpers.js';

// A refused or cut upload leaves the disk as it was, and already so when the
// answer reaches the client: the disk is read in the client's 'response'
// event, with no wait. What multer stored is removed before the 403, the
// file the storage was opening for a cut part is gone before the 400, and so
// are the folders the failed upload made (never one that was there before,
// one another upload uses, nor a successful upload's).

const served = appPerTest((root, app) => {
  const gate = pathgate({ root, fs: ['rw:uploads/**'] });
  const up = gate.multer();
  const one = gate.multer({ limits: { files: 1, fields: 0 } });
  const stored: express.RequestHandler = (_req, res) => {
    res.status(201).json({ stored: true });
  };
  app.post('/docs', gate.write({ file: 'docs', under: 'uploads' }), up.array('docs'), stored);
  app.post('/one', gate.write({ file: 'doc', under: 'uploads' }), one.single('doc'), stored);
  // A gate after the multer middleware: it decides once multer stored the file.
  const after = gate.write({ body: 'to', under: 'uploads' });
  app.post(
    '/after',
    gate.write({ file: 'doc', under: 'uploads' }),
    up.single('doc'),
    after,
    stored,
  );
});
const { errors } = served;

// Each case starts from an empty uploads/ in its own root, with its own app.
beforeEach(() => {
  mkdirSync(join(served.root, 'uploads'));
});

/** Every entry below uploads/ (folders end in `/`), sorted. */
const disk = () => entriesUnder(join(served.root, 'uploads'));

interface Answered {
  status: number;
  /** `disk()` in the 'response' event: what a client sees right when the answer arrives. */
  disk: string[];
}

/** Begins a multipart/form-data POST of `length` bytes; its answer reads the disk as it arrives. */
function begin(path: string, length: number) {
  const req = multipartPost(served.port, path, length);
  const answer = new Promise<Answered>((resolve, reject) => {
    req.on('response', (res) => {
      const answered = { status: res.statusCode ?? 0, disk: disk() };
      res.resume();
      res.on('end', () => resolve(answered));
    });
    req.on('error', reject);
  });
  return { req, answer };
}

/** Posts `body` with its exact length. */
function post(path: string, body: Buffer | string): Promise<Answered> {
  const { req, answer } = begin(path, Buffer.byteLength(body));
  req.end(body);
  return answer;
}

const upload = (path: string, parts: readonly RawPart[]) => post(path, multipart(parts));

/** The files in flight in `folder` below uploads/: written beside their targets until complete. */
const inFlight = (folder: string) => {
  const dir = join(served.root, 'uploads', folder);
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.part')).length : 0;
};

/** A file in flight: its temporary name beside its target. */
const partOf = (folder: string) =>
  expect.stringMatching(new RegExp(`^${folder}/\\.pathgate-[-0-9a-f]+\\.part$`));

/**
 * An upload sent in two steps: its first part, up to where the storage has
 * created the file in flight for `first`; then, on `finish()`, the rest.
 */
async function halfSent(path: string, parts: readonly RawPart[], first: string) {
  const body = multipart(parts);
  const rest = body.indexOf(`--${BOUNDARY}`, 1);
  const before = inFlight(dirname(first));
  const { req, answer } = begin(path, body.length);
  req.write(body.subarray(0, rest));
  for (let waited = 0; inFlight(dirname(first)) === before; waited += 5) {
    if (waited > 5000) throw new Error(`the storage never created a file for ${first}`);
    await sleep(5);
  }
  return {
    finish: () => {
      req.end(body.subarray(rest));
      return answer;
    },
  };
}

/** A file part whose body the request ends inside: no closing boundary. */
const cut = (field: string, name: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${field}"; filename="${name}"\r\n` +
  'Content-Type: application/octet-stream\r\n\r\npart of it';

const RUNS = 20;

describe('a file part denied after an allowed one was stored', () => {
  it('the 403 comes once the stored file is removed', async () => {
    for (let i = 0; i < RUNS; i++) {
      const got = await upload('/docs', [
        filePart('docs', `good-${i}.bin`, randomBytes(256 * 1024)),
        filePart('docs', '../denied.bin'),
      ]);
      expect(got).toEqual({ status: 403, disk: [] });
    }
  });

  it('several stored files, and a file still being written when the deny came', async () => {
    for (let i = 0; i < RUNS; i++) {
      const got = await upload('/docs', [
        filePart('docs', `a-${i}.txt`, 'a'),
        filePart('docs', `b-${i}.bin`, randomBytes(512 * 1024)),
        filePart('docs', '../denied.bin'),
      ]);
      expect(got).toEqual({ status: 403, disk: [] });
    }
  });
});

describe('a deny by a gate after gate.multer()', () => {
  it('the 403 comes once the file multer stored is removed', async () => {
    for (let i = 0; i < RUNS; i++) {
      const got = await upload('/after', [
        filePart('doc', `kept-${i}.bin`, randomBytes(64 * 1024)),
        fieldPart('to', '../../x'),
      ]);
      expect(got).toEqual({ status: 403, disk: [] });
    }
  });
});

describe('a deny multer no longer takes (it is aborting with its own error)', () => {
  it('is answered all the same, once multer calls back', async () => {
    const got = await upload('/one', [fieldPart('x', 'y'), filePart('doc', '../denied.bin')]);
    expect(got).toEqual({ status: 403, disk: [] });
    expect(errors.calls).toEqual([]);
  });
});

describe('a body cut inside a file part', () => {
  it('the 400 comes once the file the storage was opening is gone', async () => {
    for (let i = 0; i < RUNS; i++) {
      expect(await post('/docs', cut('docs', `cut-${i}.txt`))).toEqual({ status: 400, disk: [] });
    }
  });
});

describe('the folders a failed upload made', () => {
  it('a body cut inside a file to a deep name: none left', async () => {
    for (let i = 0; i < RUNS; i++) {
      expect(await post('/docs', cut('docs', `deep-${i}/a/b/c/cut.bin`))).toEqual({
        status: 400,
        disk: [],
      });
    }
  });

  it('a file stored in new folders, then a denied part: the folders go with it', async () => {
    const got = await upload('/docs', [
      filePart('docs', 'new/a/good.bin'),
      filePart('docs', 'new/b/good.bin'),
      filePart('docs', '../denied.bin'),
    ]);
    expect(got).toEqual({ status: 403, disk: [] });
  });

  it("a second file over multer's limit: the first one's folders go too", async () => {
    const got = await upload('/one', [
      filePart('doc', 'x/y/one.bin'),
      filePart('doc', 'x/two.bin'),
    ]);
    expect(got).toEqual({ status: 413, disk: [] });
  });

  it('a folder that was there before stays', async () => {
    mkdirSync(join(served.root, 'uploads', 'kept'));
    const got = await post('/docs', cut('docs', 'kept/new/cut.bin'));
    expect(got).toEqual({ status: 400, disk: ['kept/'] });
  });

  it('a successful upload keeps its folders', async () => {
    const got = await upload('/docs', [filePart('docs', 'made/deep/ok.bin')]);
    expect(got).toEqual({ status: 201, disk: ['made/', 'made/deep/', 'made/deep/ok.bin'] });
  });

  it('two failed uploads in one new folder: the second to fail removes it, though the first made it', async () => {
    const parts = (name: string) => [filePart('docs', name), filePart('docs', '../denied.bin')];
    const maker = await halfSent('/docs', parts('new/a/one.bin'), 'new/a/one.bin');
    const enterer = await halfSent('/docs', parts('new/a/two.bin'), 'new/a/two.bin');
    // The maker fails first: its folders still hold the other upload's file, in flight.
    expect(await maker.finish()).toEqual({
      status: 403,
      disk: ['new/', 'new/a/', partOf('new/a')],
    });
    expect(await enterer.finish()).toEqual({ status: 403, disk: [] });
  });

  it('a folder made for an upload whose response is over is no longer shared: it stays, empty', async () => {
    expect((await upload('/docs', [filePart('docs', 'kept/ok.bin')])).status).toBe(201);
    rmSync(join(served.root, 'uploads', 'kept', 'ok.bin')); // the handler moved it away
    const failed = await upload('/docs', [
      filePart('docs', 'kept/no.bin'),
      filePart('docs', '../x'),
    ]);
    expect(failed).toEqual({ status: 403, disk: ['kept/'] });
  });

  it('an upload beside a failing one, to the same new folder, is stored', async () => {
    for (let i = 0; i < RUNS; i++) {
      const [failed, stored] = await Promise.all([
        post('/docs', cut('docs', `both-${i}/a/cut.bin`)),
        upload('/docs', [filePart('docs', `both-${i}/a/ok.bin`)]),
      ]);
      expect([failed.status, stored.status]).toEqual([400, 201]);
    }
    const kept = Array.from({ length: RUNS }, (_, i) => [
      `both-${i}/`,
      `both-${i}/a/`,
      `both-${i}/a/ok.bin`,
    ]);
    expect(disk()).toEqual(kept.flat().sort());
  });
});
