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
import http from 'node:http';
import { join } from 'node:path';
import type express from 'express';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { pathgate } from '../src/index.js';
import { appPerFile, BOUNDARY, filePart, MULTIPART, multipart, upload } from './helpers.js';

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

/** Sends `body` up to `upTo` bytes; `finish` sends the rest. The answer's body is parsed as JSON. */
function begin(path: string, body: Buffer, upTo: number) {
  const req = http.request({
    host: '127.0.0.1',
    port: served.port,
    method: 'POST',
    path,
    agent: false,
    headers: { 'content-type': MULTIPART, 'content-length': body.length },
  });
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

describe('something appears at the target while the file is written', () => {
  it.each([
    ['a file', (path: string) => writeFileSync(path, 'OTHER'), () => read('late.txt')],
    [
      'a folder',
      (path: string) => mkdirSync(path),
      () => statSync(join(uploads(), 'late.txt')).isDirectory(),
    ],
    [
      'a symlink',
      (path: string) => symlinkSync('elsewhere', path),
      () => readlinkSync(join(uploads(), 'late.txt')),
    ],
    [
      'a FIFO',
      (path: string) => execFileSync('mkfifo', [path]),
      () => statSync(join(uploads(), 'late.txt')).isFIFO(),
    ],
  ])('%s: 409, and it is left as it was', async (_, make, look) => {
    const body = multipart([filePart('docs', 'late.txt', 'x'.repeat(100_000))]);
    const upload = begin('/link', body, 300);
    await vi.waitFor(() => expect(temporaries()).toHaveLength(1));
    make(join(uploads(), 'late.txt'));
    const before = look();
    upload.finish();
    expect((await upload.answer).status).toBe(409);
    expect(look()).toEqual(before);
    expect(temporaries()).toEqual([]);
  });
});

describe('with overwrite, something not replaceable appears at the target while the file is written', () => {
  it.each([
    [
      'a symlink',
      'PATHGATE_SYMLINK',
      (path: string) => symlinkSync('elsewhere', path),
      () => readlinkSync(join(uploads(), 'late.txt')),
    ],
    [
      'a FIFO',
      'PATHGATE_NOT_A_FILE',
      (path: string) => execFileSync('mkfifo', [path]),
      () => statSync(join(uploads(), 'late.txt')).isFIFO(),
    ],
    [
      'a hard link',
      'PATHGATE_NOT_A_FILE',
      (path: string) => {
        writeFileSync(join(uploads(), 'other.txt'), 'OTHER');
        linkSync(join(uploads(), 'other.txt'), path);
      },
      () => read('late.txt'),
    ],
  ])('%s: %s, as before the first byte, and it is left as it was', async (_, code, make, look) => {
    const body = multipart([filePart('docs', 'late.txt', 'x'.repeat(100_000))]);
    const upload = begin('/replace', body, 300);
    await vi.waitFor(() => expect(temporaries()).toHaveLength(1));
    make(join(uploads(), 'late.txt'));
    const before = look();
    upload.finish();
    const { status, text } = await upload.answer;
    expect({ status, code: JSON.parse(text).code }).toEqual({ status: 403, code });
    expect(look()).toEqual(before);
    expect(temporaries()).toEqual([]);
  });
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
