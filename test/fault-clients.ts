// Raw HTTP clients for the fault tests: node:http with a hand-made body, so
// the bytes, their pacing and the moment the connection dies are the test's.
// Multipart bodies come from the Express package's helpers (`multipart`,
// `filePart`): they build a part from its raw header bytes.
import type { EventEmitter } from 'node:events';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { readAnswer } from './answer.js';

export interface Sent {
  method?: string;
  path: string;
  headers?: http.OutgoingHttpHeaders;
  /**
   * The body, written chunk by chunk. `content-length` is the total unless
   * `headers` set it or set `transfer-encoding` (then it is sent chunked).
   */
  chunks?: readonly Buffer[];
  /** Pause before each chunk after the first, in ms. */
  gapMs?: number;
}

export interface Answer {
  status?: number;
  headers?: http.IncomingHttpHeaders;
  text?: string;
  json?: unknown;
  /** From the first byte written to the response's headers, in ms. */
  ms?: number;
  /** Body bytes written when the response came, or when the connection failed. */
  sent: number;
  /** The client's error when the connection failed before a response (ECONNRESET, EPIPE). */
  error?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Splits a body into chunks of `size` bytes. */
export function slices(body: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) chunks.push(body.subarray(at, at + size));
  return chunks;
}

/** A request to 127.0.0.1 on a fresh connection (POST unless `sent` says otherwise). */
export function openRequest(
  port: number,
  sent: Sent,
  headers: http.OutgoingHttpHeaders | undefined,
) {
  return http.request({
    host: '127.0.0.1',
    port,
    method: sent.method ?? 'POST',
    path: sent.path,
    headers,
    agent: false,
  });
}

/** A writable's events `drainedOrClosed` waits on: an HTTP/1.1 request, or an HTTP/2 stream. */
type Draining = Pick<EventEmitter, 'once' | 'off'>;

/** Waits for `drain` or `close`, whichever comes first, leaving no listener behind. */
export function drainedOrClosed(req: Draining): Promise<void> {
  return new Promise((next) => {
    const done = () => {
      req.off('drain', done);
      req.off('close', done);
      next();
    };
    req.once('drain', done);
    req.once('close', done);
  });
}

/**
 * One request on its own connection. The client writes the chunks in order,
 * `gapMs` apart, and stops writing as soon as a response arrives, like a
 * careful client; it resolves when the response ends or the connection fails.
 */
export function exchange(port: number, sent: Sent): Promise<Answer> {
  const chunks = sent.chunks ?? [];
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
  const chunked = sent.headers?.['transfer-encoding'] !== undefined;
  const headers = chunked ? sent.headers : { 'content-length': total, ...sent.headers };
  return new Promise((resolve) => {
    const answer: Answer = { sent: 0 };
    const req = openRequest(port, sent, headers);
    const started = performance.now();
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolve(answer);
    };
    req.on('response', (res) => {
      answer.status = res.statusCode;
      answer.headers = res.headers;
      answer.ms = performance.now() - started;
      readAnswer(res).then(({ text, json }) => {
        answer.text = text;
        answer.json = json;
        finish();
      }, finish);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (answer.status !== undefined) return; // the answer is in; the rest of the body was refused
      answer.error = error.code ?? error.message;
      finish();
    });
    (async () => {
      for (const [i, chunk] of chunks.entries()) {
        if (i > 0 && sent.gapMs) await sleep(sent.gapMs);
        if (settled || answer.status !== undefined || req.destroyed) return;
        answer.sent += chunk.length;
        if (!req.write(chunk)) await drainedOrClosed(req);
      }
      if (!req.destroyed) req.end();
    })();
  });
}

/**
 * Starts an upload that never finishes: writes `chunks` (fewer bytes than the
 * declared `content-length`), waits for `until(answer)` (for example, for the
 * server to have opened its file, or for its answer), then destroys the
 * connection. Resolves with the response if one came before the abort.
 */
export async function abortedUpload(
  port: number,
  sent: Sent & { contentLength: number },
  until: (answer: Answer) => Promise<unknown>,
): Promise<Answer> {
  const answer: Answer = { sent: 0 };
  const req = openRequest(port, sent, { ...sent.headers, 'content-length': sent.contentLength });
  req.on('response', (res) => {
    answer.status = res.statusCode;
    res.resume();
  });
  req.on('error', (error: NodeJS.ErrnoException) => {
    answer.error = error.code ?? error.message;
  });
  for (const chunk of sent.chunks ?? []) {
    answer.sent += chunk.length;
    req.write(chunk);
  }
  await until(answer);
  req.destroy();
  return answer;
}

/** A server run in this process: its open files are among the process's descriptors. */
export const descriptors = () => readdirSync('/proc/self/fd').length;

/** Asks for a download and resets the connection `afterMs` later: before, while or after the file is opened. */
export async function abandonDownload(port: number, path: string, afterMs: number): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  await sleep(afterMs);
  socket.resetAndDestroy();
}

/** Polls `probe` every 20 ms until it returns true or `withinMs` passes; returns its last answer. */
export async function eventually(probe: () => Promise<boolean> | boolean, withinMs = 3000) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}

/** The server's open connections right now. */
export function connections(server: http.Server): Promise<number> {
  return new Promise((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}
