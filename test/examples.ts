// The two runnable examples, started in this process on a fresh seeded sandbox,
// and a raw HTTP client: paths are sent exactly as written (`..%2F` stays).
import { rmSync } from 'node:fs';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { listen as listenExpress } from '../examples/express-files/app.js';
import { listen as listenFastify } from '../examples/fastify-files/app.js';
import type { ListenOptions, Started } from '../examples/shared/run.js';
import { createSandbox } from '../examples/shared/sandbox.js';
import { readAnswer } from './answer.js';

export const EXAMPLES = [
  { name: 'fastify', listen: listenFastify },
  { name: 'express', listen: listenExpress },
] as const;

export type Example = (typeof EXAMPLES)[number];

export interface Running {
  url: string;
  port: number;
  root: string;
  stop(): Promise<void>;
}

/** Listens on a free port of 127.0.0.1 over a new sandbox; `stop` closes it and removes the sandbox. */
export async function start(example: Example, options?: ListenOptions): Promise<Running> {
  const root = createSandbox();
  let server: Started;
  try {
    server = await example.listen(root, 0, options);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  return {
    url: server.url,
    port: Number(new URL(server.url).port),
    root,
    async stop() {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface Sent {
  method?: string;
  path: string;
  headers?: http.OutgoingHttpHeaders;
  body?: Buffer | string;
}

export interface Got {
  status: number;
  type: string;
  text: string;
  headers: http.IncomingHttpHeaders;
}

export function send(port: number, sent: Sent): Promise<Got> {
  const { req, got } = request(port, sent);
  req.end(sent.body);
  return got;
}

/** Sends `sent` but leaves its body open: `end` ends it and answers the response. */
export function begin(port: number, sent: Sent): { end(): Promise<Got> } {
  const { req, got } = request(port, sent);
  // A failure before `end` is reported by `end`, not as an unhandled rejection.
  got.catch(() => {});
  req.write(sent.body ?? '');
  return {
    end() {
      req.end();
      return got;
    },
  };
}

/**
 * Sends `sent` as a slow client does: its body (chunked, no length) in
 * `chunks` pieces, `pause` ms apart, the request in flight meanwhile; the
 * last piece (or, without a body, the head) once `release` settles.
 * `ready`: all but that piece are written. Its connection is open from the
 * start, so requests released in one tick reach the server together.
 */
export function sendHeld(
  port: number,
  sent: Sent,
  { chunks, pause, release }: { chunks: number; pause: number; release: Promise<unknown> },
): { ready: Promise<void>; got: Promise<Got> } {
  const { req, got } = request(port, sent);
  // An answer (or a failure) before the last piece is read once it is sent.
  got.catch(() => {});
  const body = Buffer.from(sent.body ?? '');
  const ready = allButLast(req, body, chunks, pause);
  const last = Promise.all([ready, release]).then(([at]) => req.end(body.subarray(at)));
  return { ready: ready.then(() => {}), got: last.then(() => got) };
}

/** Writes `body` in `chunks` pieces, `pause` ms apart, but the last: answers where that one starts. */
async function allButLast(req: http.ClientRequest, body: Buffer, chunks: number, pause: number) {
  const size = Math.ceil(body.length / chunks);
  let at = 0;
  for (; at + size < body.length; at += size) {
    req.write(body.subarray(at, at + size));
    await sleep(pause);
  }
  return at;
}

/**
 * Sends `sent` as a client that hangs up: its head (with the whole body's
 * Content-Length) and the body's first `cut` bytes, in `chunks` pieces
 * `pause` ms apart; then, once `release` settles, destroys the connection.
 * `ready`: those bytes are written. `got`: the answer, should one come
 * before the hang-up, else `undefined`.
 */
export function sendCut(
  port: number,
  sent: Sent,
  {
    cut,
    chunks,
    pause,
    release,
  }: { cut: number; chunks: number; pause: number; release: Promise<unknown> },
): { ready: Promise<void>; got: Promise<Got | undefined> } {
  const body = Buffer.from(sent.body ?? '').subarray(0, cut);
  const headers = { ...sent.headers, 'content-length': Buffer.byteLength(sent.body ?? '') };
  const { req, got } = request(port, { ...sent, headers });
  got.catch(() => {});
  req.flushHeaders();
  const ready = allButLast(req, body, chunks, pause).then(
    (at) => new Promise<void>((written) => req.write(body.subarray(at), () => written())),
  );
  const hungUp = Promise.all([ready, release]).then(() => req.destroy());
  return { ready, got: hungUp.then(() => got.catch(() => undefined)) };
}

function request(port: number, sent: Sent): { req: http.ClientRequest; got: Promise<Got> } {
  const req = http.request({
    host: '127.0.0.1',
    port,
    path: sent.path,
    method: sent.method ?? 'GET',
    headers: sent.headers,
    agent: false,
  });
  const got = new Promise<Got>((resolve, reject) => {
    req.on('response', (res) => {
      readAnswer(res).then(({ status, headers, text }) => {
        resolve({ status, type: String(headers['content-type'] ?? ''), text, headers });
      }, reject);
    });
    req.on('error', reject);
  });
  return { req, got };
}

/** A JSON POST. */
export const postJson = (path: string, json: string): Sent => ({
  method: 'POST',
  path,
  headers: { 'content-type': 'application/json' },
  body: json,
});

/** A multipart POST of files, each `[field, filename, content]`, with the filename sent exactly as given. */
export function postFiles(path: string, ...files: [string, string, string | Buffer][]): Sent {
  const boundary = '----pathgate-example-test';
  const parts = files.flatMap(([field, filename, content]) => [
    Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="${field}"; filename="${filename}"\r\n` +
        'content-type: application/octet-stream\r\n\r\n',
    ),
    Buffer.from(content),
    Buffer.from('\r\n'),
  ]);
  const body = Buffer.concat([...parts, Buffer.from(`--${boundary}--\r\n`)]);
  return {
    method: 'POST',
    path,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
  };
}

/** An upload of `name` whose body ends inside its file, with no closing boundary: a 400 once ended. */
export function cutUpload(name: string): Sent {
  const boundary = '----pathgate-example-cut';
  return {
    method: 'POST',
    path: '/api/upload',
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n\r\npart of it`,
  };
}
