import { mkdirSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type express from 'express';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exchangeRaw, type RawResponse, rawRequest } from '../../../test/raw-http.js';
import { pathgate } from '../src/index.js';
import {
  appPerFile,
  BOUNDARY,
  entriesUnder,
  filePart,
  MULTIPART,
  multipart,
  type RawPart,
  sleep,
  until,
} from './helpers.js';

// Hand-written part headers and cut connections, sent as raw bytes to a real
// Express server: whatever name decides a part is the name stored, a refused
// request leaves nothing of its files on disk as its answer arrives, and a
// cut one leaves nothing once the server is done with it.

const served = appPerFile((root, app) => {
  const gate = pathgate({ root, fs: ['rw:uploads/**'] });
  const up = gate.multer();
  const answer: express.RequestHandler = (req, res) =>
    res.json({
      files: [req.file ?? req.files].flat().map((file) => file?.pathgatePath?.slice(root.length)),
    });
  const avatar = { file: 'avatar', under: 'uploads' } as const;
  const docs = { file: 'docs', under: 'uploads' } as const;
  const replacing = gate.multer({ storage: gate.diskStorage({ overwrite: true }) });
  app.post('/one', gate.write(avatar), up.single('avatar'), answer);
  app.post('/many', gate.write(docs), up.array('docs'), answer);
  app.post('/any', gate.write(avatar), up.any(), answer);
  app.post('/replace', gate.write(docs), replacing.array('docs'), answer);
  const small = { limits: { fileSize: 1000 } };
  app.post('/small', gate.write(docs), gate.multer(small).array('docs'), answer);
  app.post(
    '/small-replace',
    gate.write(docs),
    gate.multer({ ...small, storage: gate.diskStorage({ overwrite: true }) }).array('docs'),
    answer,
  );
});
const { errors } = served;

const uploads = () => join(served.root, 'uploads');

beforeEach(() => {
  mkdirSync(uploads(), { recursive: true });
  writeFileSync(join(uploads(), 'old.txt'), 'OLD');
});
afterEach(() => {
  for (const name of readdirSync(served.root))
    rmSync(join(served.root, name), { recursive: true, force: true });
});

/** Everything below `uploads/` but the seeded old.txt, which is read back. */
function disk() {
  const entries = entriesUnder(uploads()).filter((entry) => entry !== 'old.txt');
  let old: string | undefined;
  try {
    old = readFileSync(join(uploads(), 'old.txt'), 'utf8');
  } catch {}
  return { entries, old };
}

/**
 * Starts watching uploads/ (inotify); the function returned lists old.txt's
 * events since. A failed request's file renamed over old.txt shows there,
 * though the old file is put back before the answer: a reader meanwhile got
 * the failed request's file. A marker written last ends the list: events
 * come in order, so every earlier one has arrived once its has.
 */
function watchOld(): () => Promise<string[]> {
  const events: string[] = [];
  let marked = false;
  const watcher = watch(uploads(), (event, name) => {
    if (name === 'old.txt') events.push(event);
    if (name === 'marker') marked = true;
  });
  return async () => {
    writeFileSync(join(uploads(), 'marker'), '');
    expect(await until(() => marked)).toBe(true);
    watcher.close();
    rmSync(join(uploads(), 'marker'));
    return events;
  };
}

/** Posts the parts as one write on a raw socket; the disk is read as the answer arrives. */
async function post(path: string, parts: readonly RawPart[]) {
  const body = multipart(parts);
  const headers = [`content-type: ${MULTIPART}`, `content-length: ${body.length}`];
  const { responses } = await exchangeRaw(
    served.port,
    [rawRequest(`POST ${path} HTTP/1.1`, [...headers, 'connection: close'], body)],
    { expect: 1 },
  );
  const { status, json, text } = responses[0] as RawResponse;
  expect(text).not.toContain(served.root); // nor in a deny or an error
  return { status, json, ...disk() };
}

const disposition = (params: string, body = 'x'): RawPart => ({
  headers: `Content-Disposition: form-data; ${params}`,
  body,
});
const stored = (...names: string[]) => names.map((name) => `/uploads/${name}`);
const denied = (reason: string) => expect.objectContaining({ reason });
const refused = (code: string) => expect.objectContaining({ code });

describe('odd part headers: the name that decides is the name stored', () => {
  it.each([
    [
      'two Content-Disposition lines, the first allowed: the first decides',
      [
        {
          headers:
            'Content-Disposition: form-data; name="avatar"; filename="ok.txt"\r\n' +
            'Content-Disposition: form-data; name="avatar"; filename="../../evil.txt"',
          body: 'x',
        },
      ],
      200,
      { files: stored('ok.txt') },
      ['ok.txt'],
    ],
    [
      'two Content-Disposition lines, the first denied: the first decides',
      [
        {
          headers:
            'Content-Disposition: form-data; name="avatar"; filename="../../evil.txt"\r\n' +
            'Content-Disposition: form-data; name="avatar"; filename="ok.txt"',
          body: 'x',
        },
      ],
      403,
      denied('path-not-in-allowlist'),
      [],
    ],
    [
      "filename*= before filename=: filename*'s name is checked and stored",
      [disposition(`name="avatar"; filename*=UTF-8''star.txt; filename="plain.txt"`)],
      200,
      { files: stored('star.txt') },
      ['star.txt'],
    ],
    [
      'two filename= parameters: the first',
      [disposition('name="avatar"; filename="first.txt"; filename="../../second.txt"')],
      200,
      { files: stored('first.txt') },
      ['first.txt'],
    ],
    [
      'filename*= with an unknown charset, filename= beside it: the part is skipped, missing',
      [disposition(`name="avatar"; filename="f.txt"; filename*=x-bogus''..%2F..%2Fevil`)],
      403,
      denied('missing-path'),
      [],
    ],
    [
      'filename*= cut inside a %-escape: the part is skipped, missing',
      [disposition(`name="avatar"; filename*=UTF-8''a%4`)],
      403,
      denied('missing-path'),
      [],
    ],
    [
      'a name of spaces only is an ordinary name',
      [filePart('avatar', '   ')],
      200,
      { files: stored('   ') },
      ['   '],
    ],
    ['"..." is a dotfile', [filePart('avatar', '...')], 403, denied('path-not-in-allowlist'), []],
    [
      'a 1,200-character name: 400, no folder made',
      [filePart('avatar', `made/${'n'.repeat(1200)}`)],
      400,
      refused('PATHGATE_NAME_TOO_LONG'),
      [],
    ],
  ] as const)('%s', async (_name, parts, status, json, entries) => {
    expect(await post('/one', parts)).toEqual({ status, json, entries, old: 'OLD' });
  });
});

describe('two files in one request', () => {
  it.each([
    ['the same name', 'same.txt'],
    ['the same path through ./', './same.txt'],
    ['the same name in NFD', 'same\u0301.txt'],
  ])('%s twice: 409, the first is removed', async (_name, second) => {
    const first = second.includes('\u0301') ? 'samé.txt' : 'same.txt';
    const got = await post('/many', [filePart('docs', first, '1'), filePart('docs', second, '2')]);
    expect(got).toEqual({ status: 409, json: refused('PATHGATE_EXISTS'), entries: [], old: 'OLD' });
  });

  it('the same name twice with overwrite: both checked, the second replaces the first', async () => {
    const got = await post('/replace', [
      filePart('docs', 'same.txt', 'first'),
      filePart('docs', 'same.txt', 'second'),
    ]);
    expect(got).toEqual({
      status: 200,
      json: { files: stored('same.txt', 'same.txt') },
      entries: ['same.txt'],
      old: 'OLD',
    });
    expect(readFileSync(join(uploads(), 'same.txt'), 'utf8')).toBe('second');
  });

  it('a second name with a 256-byte segment: 400, the first file and the folders go', async () => {
    const got = await post('/many', [
      filePart('docs', 'first.txt'),
      filePart('docs', `made/${'n'.repeat(256)}/x.txt`),
    ]);
    expect(got).toEqual({
      status: 400,
      json: refused('PATHGATE_NAME_TOO_LONG'),
      entries: [],
      old: 'OLD',
    });
  });

  it('an allowed file, then one in an undeclared field: refused, the first removed', async () => {
    const parts = [filePart('avatar', 'ok.txt'), filePart('other', 'o.txt')];
    expect(await post('/any', parts)).toEqual({
      status: 403,
      json: denied('unexpected-file'),
      entries: [],
      old: 'OLD',
    });
    expect(await post('/one', parts)).toEqual({
      status: 400,
      json: refused('LIMIT_UNEXPECTED_FILE'),
      entries: [],
      old: 'OLD',
    });
  });

  it.each([
    ['/small', 'big.txt'],
    ['/small-replace', 'old.txt'],
  ])(
    'limits.fileSize hit inside the second (%s): 413, nothing left, old.txt never replaced',
    async (path, name) => {
      const oldEvents = watchOld();
      const got = await post(path, [
        filePart('docs', 'first.txt'),
        filePart('docs', name, 'y'.repeat(5000)),
      ]);
      expect(got).toEqual({
        status: 413,
        json: refused('LIMIT_FILE_SIZE'),
        entries: [],
        old: 'OLD',
      });
      // The cut-short file is refused before it is named, not named and then taken back.
      expect(await oldEvents()).toEqual([]);
    },
  );
});

/** 150 folders to make: the first file's store is still at it when the connection is cut. */
const DEEP = Array.from({ length: 150 }, (_, i) => `d${i}`).join('/');

const partHead = (name: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="docs"; filename="${name}"\r\n\r\n`;

/**
 * Writes the head and `body`, destroys the socket, and waits until the
 * server is done: multer's error reached the error handler (once the
 * request's stores settled), and the disk stops changing.
 */
async function cut(path: string, body: string) {
  const handled = errors.calls.length;
  const socket = net.connect(served.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-type: ${MULTIPART}\r\ncontent-length: 10000000\r\n\r\n${body}`,
  );
  await sleep(5);
  socket.destroy();
  for (let i = 0; i < 300 && errors.calls.length === handled; i++) await sleep(10);
  expect(errors.calls).toHaveLength(handled + 1);
  let last = '';
  for (let same = 0, i = 0; same < 5 && i < 200; i++) {
    await sleep(20);
    const now = JSON.stringify(disk());
    same = now === last ? same + 1 : 0;
    last = now;
  }
  return disk();
}

describe('the client cuts the connection', () => {
  it.each(['/many', '/replace'])(
    'inside the second file (%s): nothing of either is left',
    async (path) => {
      const body = `${partHead('first.txt')}1\r\n${partHead('old.txt')}${'2'.repeat(50_000)}`;
      expect(await cut(path, body)).toEqual({ entries: [], old: 'OLD' });
    },
  );

  it('after a whole second file still waiting for its store: the file it would replace stays', async () => {
    const body =
      `${partHead(`${DEEP}/first.txt`)}1\r\n${partHead('old.txt')}${'2'.repeat(50_000)}\r\n` +
      `--${BOUNDARY}\r\nContent-Disp`;
    expect(await cut('/replace', body)).toEqual({ entries: [], old: 'OLD' });
  });
});

describe('a later part denied while a whole file waits for its store', () => {
  it('the 403 comes once nothing is left, and the file it would replace stays untouched', async () => {
    const oldEvents = watchOld();
    const got = await post('/replace', [
      filePart('docs', `${DEEP}/first.txt`),
      filePart('docs', 'old.txt', 'new'),
      filePart('docs', '../escape.txt'),
    ]);
    expect(got).toEqual({
      status: 403,
      json: denied('path-not-in-allowlist'),
      entries: [],
      old: 'OLD',
    });
    // Denied, the request is done: its waiting file is never named, not named and then taken back.
    expect(await oldEvents()).toEqual([]);
  });
});

describe('the replacing storage on a request whose body was cut', () => {
  it('a whole file is not renamed over the old one; with the body whole, it is', async () => {
    const storage = pathgate({ root: served.root, fs: ['rw:uploads/**'] }).diskStorage({
      overwrite: true,
    });
    const store = (readableAborted: boolean) => {
      const stream = new PassThrough();
      stream.end('new');
      const file: Partial<Express.Multer.File> = {
        stream,
        pathgatePath: join(uploads(), 'old.txt'),
      };
      return new Promise((settle) =>
        storage._handleFile(
          { readableAborted } as express.Request,
          file as Express.Multer.File,
          settle,
        ),
      );
    };
    const oldEvents = watchOld();
    expect(await store(true)).toBeInstanceOf(Error);
    expect(disk()).toEqual({ entries: [], old: 'OLD' });
    expect(await oldEvents()).toEqual([]);
    expect(await store(false)).toBeNull();
    // The old file, kept while the request could fail, goes once the store is done.
    await until(() => disk().entries.length === 0);
    expect(disk()).toEqual({ entries: [], old: 'new' });
  });
});
