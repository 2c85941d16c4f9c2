import { readdirSync, rmSync, statSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { denyBody, type GuardDenyReason } from '@pathgate/core';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FOLDER_DEPTH_MAX } from '../examples/shared/files.js';
import { EXAMPLES, type Got, type Sent, send } from './examples.js';
import { startedForSuite } from './fixture.js';

// Malformed multipart framing (the boundary, the part headers, the body's
// length and encoding) against each example's /api/upload, whose storage
// writes to disk: a clear 4xx (or the upload it is), never a 500 or a hang,
// nothing left on disk but a stored upload, no descriptor left open, and the
// server still answering. Where the answers differ, the frameworks' parsers
// read the body differently (the root README lists these differences).

const B = 'pathgate-framing-boundary';
const TYPE = `multipart/form-data; boundary=${B}`;
const CLOSE = `--${B}--\r\n`;

const part = (disposition: string, content = 'data') =>
  `--${B}\r\n${disposition}\r\nContent-Type: text/plain\r\n\r\n${content}\r\n`;
const file = (name: string, field = 'file') =>
  part(`Content-Disposition: form-data; name="${field}"; filename="${name}"`);
const field = (name: string, value: string) =>
  `--${B}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
const fields = (count: number) =>
  Array.from({ length: count }, (_, i) => field(`f${i}`, 'v')).join('');

const ONE = file('a.txt') + CLOSE;

const post = (body: string | Buffer, type = TYPE, more = {}): Sent => ({
  method: 'POST',
  path: '/api/upload',
  headers: { 'content-type': type, ...more },
  body,
});

interface Answer {
  status: number;
  json: unknown;
  /** The upload this answer stored, as `snapshot` lists it (removed after the case). */
  stored?: string;
}

const failed = (status: number, message: string): Answer => ({
  status,
  json: { statusCode: status, error: STATUS_CODES[status], message },
});
const BAD = failed(400, 'bad request');
const denied = (reason: GuardDenyReason, label = 'file file'): Answer => ({
  status: 403,
  json: denyBody({ reason, label }),
});
const MISSING = denied('missing-path');
const UNEXPECTED = denied('unexpected-file', 'file');
const stored = (name: string, size: number): Answer => ({
  status: 201,
  json: { uploaded: `uploads/${name}`, size },
  stored: `uploads/${name} ${size}`,
});

type Expected = Answer | { fastify: Answer; express: Answer };

const LONG = 'b'.repeat(300);

/** A part's head, line ends and all, with no content after it. */
const HEAD = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="head.txt"\r\n\r\n`;

const CASES: readonly (readonly [string, Sent, Expected])[] = [
  ['no boundary parameter', post(ONE, 'multipart/form-data'), BAD],
  [
    'an empty boundary (multer skips a type it cannot parse: no file)',
    post(ONE, 'multipart/form-data; boundary='),
    { fastify: BAD, express: MISSING },
  ],
  [
    'a 300-character boundary (busboy under Fastify refuses over 252)',
    post(
      `--${LONG}\r\nContent-Disposition: form-data; name="file"; filename="long.txt"\r\n\r\nx\r\n--${LONG}--\r\n`,
      `multipart/form-data; boundary=${LONG}`,
    ),
    { fastify: BAD, express: stored('long.txt', 1) },
  ],
  ['a boundary that never appears', post('no parts here'.repeat(100)), BAD],
  ['a body cut before any part', post(`--${B}\r\n`), BAD],
  ['a body cut in a part header', post(`--${B}\r\nContent-Disposition: form-da`), BAD],
  [
    'a body cut inside the file',
    post(`--${B}\r\nContent-Disposition: form-data; name="file"; filename="cut.txt"\r\n\r\npart`),
    BAD,
  ],
  ['a whole file, then a body cut: none kept', post(`${file('kept.txt')}${field('x', 'y')}`), BAD],
  [
    'no CRLFs',
    post(`--${B}Content-Disposition: form-data; name="file"; filename="a.txt"data--${B}--`),
    BAD,
  ],
  ['LF-only line ends', post((file('lf.txt') + CLOSE).replaceAll('\r\n', '\n')), BAD],
  [
    'junk after the closing boundary',
    post(`${file('junk.txt')}${CLOSE}junk`),
    stored('junk.txt', 4),
  ],
  [
    'a part head ending right on a boundary line (found by multipart-mutations.test.ts)',
    post(`${HEAD}${HEAD}\r\n${CLOSE}`),
    // multer's busboy reads the line as a delimiter that does not end the part: its file is the next head.
    {
      fastify: stored('head.txt', 0),
      express: stored('head.txt', HEAD.length - `--${B}\r\n`.length),
    },
  ],
  [
    'a preamble and an epilogue of 2 MB',
    post(`${'p'.repeat(2 << 20)}\r\n${file('big.txt')}${CLOSE}${'e'.repeat(2 << 20)}`),
    stored('big.txt', 4),
  ],
  ['a part without Content-Disposition', post(part('X-Other: 1') + CLOSE), MISSING],
  [
    'a disposition that is not form-data',
    post(part('Content-Disposition: attachment; name="file"; filename="a.txt"') + CLOSE),
    MISSING,
  ],
  [
    'a file part without a name (multer refuses it)',
    post(part('Content-Disposition: form-data; filename="a.txt"') + CLOSE),
    { fastify: UNEXPECTED, express: BAD },
  ],
  [
    'a part header line of 100 KB (busboy under multer allows 16 KB of headers)',
    post(
      file('wide.txt').replace(
        '\r\nContent-Type',
        `\r\nX-Big: ${'h'.repeat(100 << 10)}\r\nContent-Type`,
      ) + CLOSE,
    ),
    { fastify: stored('wide.txt', 4), express: BAD },
  ],
  [
    '10,000 part header lines',
    post(
      file('tall.txt').replace(
        '\r\nContent-Type',
        `\r\n${'X-A: b\r\n'.repeat(10_000)}Content-Type`,
      ) + CLOSE,
    ),
    { fastify: stored('tall.txt', 4), express: BAD },
  ],
  [
    '20,000 tiny fields',
    post(fields(20_000) + file('many.txt') + CLOSE),
    failed(413, 'payload too large'),
  ],
  ['a field named like the file spec', post(field('file', 'uploads/a.txt') + CLOSE), MISSING],
  [
    'a file in a field the route does not declare',
    post(file('a.txt', 'other') + CLOSE),
    UNEXPECTED,
  ],
  [
    'a nested multipart/mixed part',
    post(
      `--${B}\r\nContent-Disposition: form-data; name="file"\r\nContent-Type: multipart/mixed; boundary=inner\r\n\r\n` +
        `--inner\r\nContent-Disposition: file; filename="nested.txt"\r\n\r\ndata\r\n--inner--\r\n\r\n${CLOSE}`,
    ),
    MISSING,
  ],
  [
    'multipart/mixed',
    post(ONE, `multipart/mixed; boundary=${B}`),
    failed(415, 'unsupported media type'),
  ],
  [
    'a GET with a body',
    { ...post(ONE, TYPE, { 'content-length': ONE.length }), method: 'GET' },
    failed(404, 'no such route'),
  ],
  [
    'Content-Length: 0 (busboy under Fastify finds no part, under multer a cut body)',
    post('', TYPE, { 'content-length': '0' }),
    { fastify: MISSING, express: BAD },
  ],
  [
    'Content-Encoding: gzip (not decoded)',
    post(gzipSync(file('gz.txt') + CLOSE), TYPE, { 'content-encoding': 'gzip' }),
    BAD,
  ],
];

/** Every file under `dir`, with its size: the sandbox a case must leave as it was. */
function snapshot(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    const name = `${prefix}${entry.name}`;
    return entry.isDirectory() ? snapshot(path, `${name}/`) : [`${name} ${statSync(path).size}`];
  });
}

const openFds = () => readdirSync('/proc/self/fd').length;

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

/** Polls until the process holds no more descriptors than before (sockets close asynchronously). */
async function expectFdsBack(before: number): Promise<void> {
  for (let i = 0; i < 100 && openFds() > before; i++) await tick();
  expect(openFds()).toBeLessThanOrEqual(before);
}

/** The sandbox holds the seed and `kept`, no more: checked at once, as a client could look. */
function expectSandbox(root: string, seeded: readonly string[], kept: readonly string[]) {
  expect(snapshot(root).sort()).toEqual([...seeded, ...kept].sort());
}

/** Polls until the sandbox holds the seed again: a client that hung up gets no answer to look after. */
async function expectSandboxSettles(root: string, seeded: readonly string[]) {
  const same = () => snapshot(root).sort().join('\n') === [...seeded].sort().join('\n');
  for (let i = 0; i < 50 && !same(); i++) await tick();
  expectSandbox(root, seeded, []);
}

const expectedFor = (expected: Expected, name: 'fastify' | 'express'): Answer =>
  'status' in expected ? expected : expected[name];

const parsed = (got: Got) => ({ status: got.status, json: JSON.parse(got.text) as unknown });

describe.each(EXAMPLES)('$name example: malformed multipart framing', (example) => {
  const app = startedForSuite(example);
  let seeded: string[];
  beforeAll(() => {
    seeded = snapshot(app.root);
  });
  // Whatever a case stored (its upload, or a file it should not have kept) goes, so the next case starts clean.
  afterEach(() => {
    for (const name of readdirSync(join(app.root, 'uploads'))) {
      if (!seeded.some((entry) => entry.startsWith(`uploads/${name} `))) {
        rmSync(join(app.root, 'uploads', name), { recursive: true, force: true });
      }
    }
  });

  const listUploads = () => send(app.port, { path: '/api/list?dir=uploads' });

  it.each(CASES)('%s', async (_name, sent, expected) => {
    const answer = expectedFor(expected, example.name);
    const fds = openFds();
    const got = await send(app.port, sent);
    // Nothing on disk but the upload the answer names, already as the answer arrives.
    expectSandbox(app.root, seeded, answer.stored === undefined ? [] : [answer.stored]);
    expect(parsed(got)).toEqual({ status: answer.status, json: answer.json });
    // Still answering.
    expect((await listUploads()).status).toBe(200);
    await expectFdsBack(fds);
  });

  it('a chunked upload that stalls holds only its own socket, and leaves nothing once dropped', async () => {
    const fds = openFds();
    const socket = net.connect(app.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const chunk = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="stall.txt"\r\n\r\npart`;
    socket.write(
      `POST /api/upload HTTP/1.1\r\nhost: x\r\ncontent-type: ${TYPE}\r\ntransfer-encoding: chunked\r\n\r\n` +
        `${chunk.length.toString(16)}\r\n${chunk}\r\n`,
    );
    // The server answers others while the upload waits for the rest.
    expect((await listUploads()).status).toBe(200);
    socket.destroy();
    await expectFdsBack(fds);
    await expectSandboxSettles(app.root, seeded);
  });
});

describe.each(EXAMPLES)('$name example: a body cut inside a file', (example) => {
  const app = startedForSuite(example);

  it('is answered once the storage is done: the sandbox does not change after the 400', async () => {
    // The most folders a client may make (uploads/ is there) before the file
    // is opened: the body ends while the storage is still at it.
    const deep = Array.from({ length: FOLDER_DEPTH_MAX - 1 }, (_, i) => `d${i}`).join('/');
    const cut = `--${B}\r\nContent-Disposition: form-data; name="file"; filename="${deep}/cut.txt"\r\n\r\npart`;
    const got = await send(app.port, post(cut));
    const answered = snapshot(app.root).sort();
    expect(got.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(snapshot(app.root).sort()).toEqual(answered);
    expect(answered.some((entry) => entry.includes('cut.txt'))).toBe(false);
    // Nor the folders the upload made.
    expect(readdirSync(join(app.root, 'uploads'))).not.toContain('d0');
  });
});
