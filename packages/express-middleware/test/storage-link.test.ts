import { execFileSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type express from 'express';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pathgate } from '../src/index.js';
import { appPerFile, BOUNDARY, filePart, multipart, multipartPost, upload } from './helpers.js';

// The safe disk storage writes each file to a `.pathgate-<uuid>.part` beside
// its target and links (or, with overwrite, renames) it in once whole. These
// cases race that last step against other requests and other writers of the
// same name, over real HTTP on 127.0.0.1.

const served = appPerFile((root, app) => {
  const gate = pathgate({ root, fs: ['rw:uploads/**'] });
  const docs = { file: 'docs', under: 'uploads' } as const;
  const stored: express.RequestHandler = (req, res) => {
    const files = req.files as Express.Multer.File[];
    res.status(201).json(
      files.map(({ path, size, destination, filename }) => ({
        path,
        size,
        destination,
        filename,
      })),
    );
  };
  const replacing = gate.multer({ storage: gate.diskStorage({ overwrite: true }) });
  app.post('/link', gate.write(docs), gate.multer().array('docs'), stored);
  app.post('/replace', gate.write(docs), replacing.array('docs'), stored);
});

const uploads = () => join(served.root, 'uploads');
beforeEach(() => mkdirSync(uploads(), { recursive: true }));
afterEach(() => rmSync(uploads(), { recursive: true, force: true }));

const temporaries = () => readdirSync(uploads()).filter((name) => name.endsWith('.part'));
const read = (name: string) => readFileSync(join(uploads(), name), 'utf8');

/** Sends `body` up to `upTo` bytes; `finish` sends the rest. */
function begin(path: string, body: Buffer, upTo: number) {
  const req = multipartPost(served.port, path, body.length);
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
  });
  req.write(body.subarray(0, upTo));
  return { answer, finish: () => req.end(body.subarray(upTo)) };
}

describe('many uploads of one name at once', () => {
  it('one 201 whose file is stored whole, every other a 409, no temporary file left', async () => {
    const bodies = Array.from({ length: 40 }, (_, i) => `body ${i};`.repeat(3000));
    const answers = await Promise.all(
      bodies.map((body) => upload(served.port, '/link', [filePart('docs', 'same.txt', body)])),
    );
    const statuses = answers.map((answer) => answer.status);
    const winner = statuses.indexOf(201);
    expect(statuses.filter((status) => status === 409)).toHaveLength(bodies.length - 1);
    expect(read('same.txt')).toBe(bodies[winner]);
    expect(temporaries()).toEqual([]);
    // What multer users read: the target's path, folder, name, and the bytes stored.
    const path = join(uploads(), 'same.txt');
    const size = Buffer.byteLength(bodies[winner] as string);
    expect(answers[winner]?.json).toEqual([
      { path, size, destination: uploads(), filename: 'same.txt' },
    ]);
  });
});

const late = () => join(uploads(), 'late.txt');

/** A thing made at the target mid-upload, and how to see it is left as it was. */
interface Thing {
  make(): unknown;
  look(): unknown;
}

const FILE: Thing = { make: () => writeFileSync(late(), 'OTHER'), look: () => read('late.txt') };
const FOLDER: Thing = { make: () => mkdirSync(late()), look: () => statSync(late()).isDirectory() };
const SYMLINK: Thing = {
  make: () => symlinkSync('elsewhere', late()),
  look: () => readlinkSync(late()),
};
const FIFO: Thing = {
  make: () => execFileSync('mkfifo', [late()]),
  look: () => statSync(late()).isFIFO(),
};
const HARD_LINK: Thing = {
  make() {
    writeFileSync(join(uploads(), 'other.txt'), 'OTHER');
    linkSync(join(uploads(), 'other.txt'), late());
  },
  look: () => read('late.txt'),
};

/**
 * Uploads late.txt and makes `thing` there once its temporary file is
 * open; the answer's status and code, once the thing is seen as it was and
 * no temporary file is left.
 */
async function appearsMidUpload(route: string, thing: Thing) {
  const upload = begin(route, multipart([filePart('docs', 'late.txt', 'x'.repeat(100_000))]), 300);
  await vi.waitFor(() => expect(temporaries()).toHaveLength(1));
  thing.make();
  const before = thing.look();
  upload.finish();
  const { status, text } = await upload.answer;
  expect(thing.look()).toEqual(before);
  expect(temporaries()).toEqual([]);
  return { status, code: JSON.parse(text).code };
}

describe('something appears at the target while the file is written', () => {
  it.each([
    ['a file', FILE],
    ['a folder', FOLDER],
    ['a symlink', SYMLINK],
    ['a FIFO', FIFO],
  ])('%s: 409, and it is left as it was', async (_, thing) => {
    expect(await appearsMidUpload('/link', thing)).toEqual({
      status: 409,
      code: 'PATHGATE_EXISTS',
    });
  });

  it.each([
    ['a symlink', SYMLINK, 'PATHGATE_SYMLINK'],
    ['a FIFO', FIFO, 'PATHGATE_NOT_A_FILE'],
    ['a hard link', HARD_LINK, 'PATHGATE_NOT_A_FILE'],
  ])(
    'with overwrite, %s: 403 %s as before the first byte, and it is left as it was',
    async (_, thing, code) => {
      expect(await appearsMidUpload('/replace', thing)).toEqual({ status: 403, code });
    },
  );
});

describe("a later part denied after the first file got its name, which another request's file has since", () => {
  // A: its first file whole, then a part denied. Between the two, the name is
  // given to B's file: with overwrite by B's rename over it, without after
  // the app deleted A's file (a DELETE route, say).
  it.each(['/link', '/replace'])("%s: A's 403 removes its own file, never B's", async (route) => {
    const body = multipart([filePart('docs', 'mine.txt', 'A'), filePart('docs', '../out.txt')]);
    const second = body.indexOf(`--${BOUNDARY}\r\n`, 1) + `--${BOUNDARY}\r\n`.length;
    const a = begin(route, body, second);
    await vi.waitFor(() => expect(existsSync(join(uploads(), 'mine.txt'))).toBe(true));
    if (route === '/link') unlinkSync(join(uploads(), 'mine.txt'));
    const b = await upload(served.port, route, [filePart('docs', 'mine.txt', 'B')]);
    expect(b.status).toBe(201);
    a.finish();
    expect((await a.answer).status).toBe(403);
    expect(read('mine.txt')).toBe('B');
    expect(temporaries()).toEqual([]);
  });
});
