import { mkdtempSync, readdirSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express, { type ErrorRequestHandler, type Express } from 'express';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { removeTree, runAll } from '../../../test/cleanups.js';

/** A fresh sandbox root (real path: the policy compares canonical text). */
export function tempRoot(): { root: string; remove: () => void } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-express-')));
  return { root, remove: () => removeTree(root) };
}

/** Every regular file below `dir`, relative. */
export function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[])
    .filter((name) => statSync(join(dir, name)).isFile())
    .sort();
}

/** Every entry below `dir`, relative, folders ending in `/`, sorted. */
export function entriesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .map((entry) => {
      const path = join(entry.parentPath, entry.name).slice(dir.length + 1);
      return entry.isDirectory() ? `${path}/` : path;
    })
    .sort();
}

/** This process's open file descriptors on files below `dir` (Linux: /proc/self/fd). */
export function descriptorsUnder(dir: string): string[] {
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(`${dir}/`) ? [target] : [];
    } catch {
      return []; // closed since the listing
    }
  });
}

export interface Served {
  readonly port: number;
  readonly server: http.Server;
  /** Open connections right now. */
  connections(): Promise<number>;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 with an ephemeral port. */
export async function serve(app: Express): Promise<Served> {
  const server = await new Promise<http.Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    server,
    connections: () =>
      new Promise((resolve, reject) =>
        server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      ),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Serves `app` for the length of `run`, then closes it (and every connection). */
export async function withServed<T>(app: Express, run: (served: Served) => Promise<T>): Promise<T> {
  const served = await serve(app);
  try {
    return await run(served);
  } finally {
    await served.close();
  }
}

/**
 * A fresh root, an app `build` wires on it (with `countingErrorHandler`
 * last, its errors handed to `run`), served for `run`; the server closed
 * and the root removed after.
 */
export async function onApp<T>(
  build: (root: string, app: Express) => void,
  run: (port: number, root: string, errors: unknown[]) => Promise<T>,
): Promise<T> {
  const dir = tempRoot();
  try {
    const app = express();
    build(dir.root, app);
    const errors = countingErrorHandler();
    app.use(errors.handler);
    return await withServed(app, (s) => run(s.port, dir.root, errors.calls));
  } finally {
    dir.remove();
  }
}

/** One request with node:http: the path is sent byte for byte (no URL normalization). */
export function request(
  port: number,
  method: string,
  path: string,
  options: { headers?: http.OutgoingHttpHeaders; body?: Buffer | string; chunked?: boolean } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const length = body && !options.chunked ? { 'content-length': body.length } : {};
    const headers = { ...options.headers, ...length };
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false });
    req.on('response', (res) => readAnswer(res).then(resolve, reject));
    req.on('error', reject);
    // chunked: written before the end, so node:http sends `transfer-encoding: chunked`
    // (given whole to end(), it would set a content-length itself).
    if (options.chunked && body !== undefined) req.write(body);
    req.end(options.chunked ? undefined : body);
  });
}

export const BOUNDARY = '----pathgateBoundary7MA4YWxk';
export const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;

/** A multipart POST of `length` bytes to 127.0.0.1, its own connection; the caller writes the body. */
export function multipartPost(
  port: number,
  path: string,
  length: number,
  agent: http.Agent | false = false,
): http.ClientRequest {
  return http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path,
    agent,
    headers: { 'content-type': MULTIPART, 'content-length': length },
  });
}

/** One part: its raw header lines (bytes, so latin1, UTF-8 and NUL can be sent as they are) and body. */
export interface RawPart {
  headers: Buffer | string;
  body?: Buffer | string;
}

/** `Content-Disposition` for a file part, with the filename's exact bytes. */
export function filePart(
  field: string,
  filename: Buffer | string,
  body: Buffer | string = 'x',
): RawPart {
  const name = typeof filename === 'string' ? Buffer.from(filename, 'utf8') : filename;
  const headers = Buffer.concat([
    Buffer.from(`Content-Disposition: form-data; name="${field}"; filename="`),
    name,
    Buffer.from('"\r\nContent-Type: application/octet-stream'),
  ]);
  return { headers, body };
}

export function fieldPart(field: string, value: string): RawPart {
  return { headers: `Content-Disposition: form-data; name="${field}"`, body: value };
}

export function multipart(parts: readonly RawPart[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(Buffer.from(`--${BOUNDARY}\r\n`));
    chunks.push(Buffer.from(part.headers));
    chunks.push(Buffer.from('\r\n\r\n'));
    chunks.push(Buffer.from(part.body ?? ''));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

export function upload(
  port: number,
  path: string,
  parts: readonly RawPart[],
  headers: http.OutgoingHttpHeaders = {},
): Promise<Answer> {
  return request(port, 'POST', path, {
    headers: { ...headers, 'content-type': MULTIPART },
    body: multipart(parts),
  });
}

/** An error handler that counts its calls and renders http-errors-shaped errors as JSON. */
export function countingErrorHandler(): { handler: ErrorRequestHandler; calls: unknown[] } {
  const calls: unknown[] = [];
  const handler: ErrorRequestHandler = (error, _req, res, _next) => {
    calls.push(error);
    const status = typeof error?.status === 'number' ? error.status : 500;
    res.status(status).json({ status, code: error?.code, message: error?.message });
  };
  return { handler, calls };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `done` every 20 ms until it holds or `within` ms pass: for what a
 * request does after its answer, which a fixed sleep misses on a loaded machine.
 */
export async function until(done: () => boolean | Promise<boolean>, within = 3000) {
  const start = Date.now();
  while (!(await done())) {
    if (Date.now() - start > within) return false;
    await sleep(20);
  }
  return true;
}

/** The app of `appPerFile` or `appPerTest`: its temp root, its port and its error handler's calls, once set up. */
export interface HookedApp {
  readonly root: string;
  readonly port: number;
  readonly errors: ReturnType<typeof countingErrorHandler>;
}

type Hook = (run: () => Promise<void>) => void;

/**
 * An Express app on a fresh temp root, built in `setUp` (a counting error
 * handler last, its calls cleared), closed and removed in `tearDown`.
 */
function hookedApp(
  build: (root: string, app: Express) => void,
  setUp: Hook,
  tearDown: Hook,
): HookedApp {
  const errors = countingErrorHandler();
  let dir: { root: string; remove: () => void } | undefined;
  let served: Served | undefined;
  setUp(async () => {
    errors.calls.length = 0;
    dir = tempRoot();
    const app = express();
    build(dir.root, app);
    app.use(errors.handler);
    served = await serve(app);
  });
  // The root goes even when the close throws.
  tearDown(() => runAll([() => served?.close(), () => dir?.remove()]));
  return {
    errors,
    get root() {
      return (dir as { root: string }).root;
    },
    get port() {
      return (served as Served).port;
    },
  };
}

/** One app for a whole test file: for files whose tests leave nothing another one reads. */
export const appPerFile = (build: (root: string, app: Express) => void): HookedApp =>
  hookedApp(build, beforeAll, afterAll);

/**
 * A fresh app and root for each test: nothing one test stores, counts or
 * warns about once (a gate's one-time warnings live in the app) reaches
 * another, whatever order they run in.
 */
export const appPerTest = (build: (root: string, app: Express) => void): HookedApp =>
  hookedApp(build, beforeEach, afterEach);
