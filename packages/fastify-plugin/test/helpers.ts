import { mkdirSync, mkdtempSync, readdirSync, realpathSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { expect, vi } from 'vitest';
import { type Answer, forbidden, readAnswer } from '../../../test/answer.js';
import { type Cleanup, cleanupsAfterEach, removeTree } from '../../../test/cleanups.js';
import {
  exchangeRaw,
  type RawExchange,
  type RawOptions,
  rawRequest,
} from '../../../test/raw-http.js';

// Shared by the topic files: real servers on 127.0.0.1, raw HTTP clients,
// temp sandboxes. Everything made here is closed or removed after each test.

/** Runs `cleanup` after the test, before the cleanups registered earlier, even if one throws. */
export const afterTest: (cleanup: Cleanup) => void = cleanupsAfterEach();

/** A fresh sandbox root with `public/`, `uploads/` and `docs/` inside. */
export function sandbox(): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-fastify-')));
  for (const dir of ['public', 'uploads', 'docs']) mkdirSync(join(root, dir));
  afterTest(() => removeTree(root));
  return root;
}

/** Every file below `dir`, relative, sorted. */
export function filesIn(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

/** A Fastify app that is closed after the test. */
export function newApp(options: FastifyServerOptions = {}): FastifyInstance {
  const app = Fastify(options);
  afterTest(() => app.close());
  return app;
}

/** Listens on 127.0.0.1 and returns the port. */
export async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as AddressInfo).port;
}

export interface RawRequest {
  method?: string;
  /** Sent as is: `%00`, `%c0%ae` and friends reach the server untouched. */
  path: string;
  headers?: http.OutgoingHttpHeaders;
  body?: string | Buffer;
  agent?: http.Agent | false;
}

/** One request with node:http, which sends the path bytes exactly as given. */
export function request(port: number, options: RawRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path,
        headers: options.headers,
        agent: options.agent ?? false,
      },
      (res) => readAnswer(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** JSON in, JSON out. */
export function postJson(port: number, path: string, body: unknown): Promise<Answer> {
  return request(port, {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface RawPart {
  /** The Content-Disposition parameters after `form-data; `, as raw text. */
  disposition: string;
  contentType?: string;
  data: string | Buffer;
}

export const BOUNDARY = '----pathgate-boundary-7MA4YWxkTrZu0gW';

/** A multipart body built byte by byte, for filenames no client library would send. */
export function multipartBody(parts: readonly RawPart[]): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const type = part.contentType ? `\r\nContent-Type: ${part.contentType}` : '';
    chunks.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; ${part.disposition}${type}\r\n\r\n`,
        'latin1',
      ),
      Buffer.from(part.data),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

/**
 * Over a raw socket: sends the head and the first half of the multipart body,
 * waits for the answer's head, then sends the rest and ends. Returns the
 * answer as received by then.
 */
export async function sendAroundAnswer(
  port: number,
  path: string,
  parts: readonly RawPart[],
): Promise<string> {
  const body = multipartBody(parts);
  const socket = net.connect(port, '127.0.0.1');
  afterTest(() => void socket.destroy());
  socket.on('error', () => {});
  let answer = '';
  socket.on('data', (chunk) => {
    answer += chunk.toString('latin1');
  });
  await new Promise((resolve) => socket.once('connect', resolve));
  const type = `multipart/form-data; boundary=${BOUNDARY}`;
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  const half = body.length / 2;
  socket.write(body.subarray(0, half));
  await vi.waitFor(() => expect(answer).toMatch(/\r\n\r\n/));
  socket.end(body.subarray(half));
  return answer;
}

/** Over a raw socket: sends the head and the first `sent` bytes of a multipart body, then hangs up. */
export async function hangUp(
  port: number,
  path: string,
  body: Buffer,
  sent: number,
): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  afterTest(() => void socket.destroy());
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  const type = `multipart/form-data; boundary=${BOUNDARY}`;
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  // Flushed to the kernel, then closed: the server reads all of it, then the end.
  await new Promise((resolve) => socket.write(body.subarray(0, sent), resolve));
  socket.destroy();
}

/** What an h2c client read of one stream, once it closed. */
export interface H2Exchange {
  status: number;
  text: string;
  rstCode: number | undefined;
  error: string | undefined;
}

/**
 * `sendAroundAnswer` over h2c: one stream on a fresh session (closed after
 * the test), the first half of the body, the answer's headers, then the rest.
 * Resolves once the stream closed.
 */
export async function sendAroundAnswerH2(
  port: number,
  path: string,
  parts: readonly RawPart[],
): Promise<H2Exchange> {
  const body = multipartBody(parts);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  afterTest(() => void session.destroy());
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
    'content-length': body.length,
  });
  let text = '';
  let error: string | undefined;
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    text += chunk;
  });
  stream.on('error', (e: NodeJS.ErrnoException) => {
    error = e.code ?? String(e);
  });
  const closed = new Promise((resolve) => stream.once('close', resolve));
  const half = body.length / 2;
  stream.write(body.subarray(0, half));
  const head = await new Promise<http2.IncomingHttpHeaders>((resolve) =>
    stream.once('response', resolve),
  );
  stream.end(body.subarray(half));
  await closed;
  return { status: Number(head[':status']), text, rstCode: stream.rstCode, error };
}

/** Posts a raw multipart body. */
export function postMultipart(
  port: number,
  path: string,
  parts: readonly RawPart[],
): Promise<Answer> {
  const body = multipartBody(parts);
  return request(port, {
    method: 'POST',
    path,
    headers: {
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': body.length,
    },
    body,
  });
}

/**
 * Posts a raw multipart body on a keep-alive connection, written whole, and
 * reads until the server closes it or `timeoutMs` (default 3 s) passed. For
 * the answers that claim to close: node:http without an agent asks for the
 * close itself, so a close seen there proves nothing.
 */
export function postMultipartKeepAlive(
  port: number,
  path: string,
  parts: readonly RawPart[],
  options: RawOptions = {},
): Promise<RawExchange> {
  const body = multipartBody(parts);
  const head = [
    `content-type: multipart/form-data; boundary=${BOUNDARY}`,
    `content-length: ${body.length}`,
    'connection: keep-alive',
  ];
  return exchangeRaw(port, [rawRequest(`POST ${path} HTTP/1.1`, head, body)], options);
}

/** The 403 body pathgate sends, label first. */
export const denied = (label: string, reason: string): object => forbidden(reason, label);
