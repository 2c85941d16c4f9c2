import http from 'node:http';
import { drainedOrClosed } from '../../../test/fault-clients.js';
import { BOUNDARY, MULTIPART } from './helpers.js';

// Two real clients streaming a large multipart upload, optionally throttled:
// node:http (keeps writing until the request errors) and fetch (undici).

const CHUNK = Buffer.alloc(64 * 1024, 0x61);
const MB = 1024 * 1024;

export interface UploadSpec {
  port: number;
  path: string;
  filename: string;
  /** Body size in MiB. */
  sizeMB: number;
  /** MiB per second; Infinity for as fast as the socket takes it. */
  rate?: number;
}

export interface UploadOutcome {
  status?: number;
  connection?: string | null;
  body?: string;
  /** ms from the first byte sent to the response headers. */
  msToResponse?: number;
  /** MiB the client had handed to the socket when the response came. */
  sentAtResponse?: number;
  error?: string;
}

function frame(field: string, filename: string) {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return { head, tail };
}

/** The body, chunk by chunk, at `rate` MiB/s at most. */
async function* bodyChunks(spec: UploadSpec, counter: { sent: number }): AsyncGenerator<Buffer> {
  const { head, tail } = frame('avatar', spec.filename);
  const total = spec.sizeMB * MB;
  const rate = (spec.rate ?? Number.POSITIVE_INFINITY) * MB;
  const start = Date.now();
  yield head;
  for (let sent = 0; sent < total; ) {
    const size = Math.min(CHUNK.length, total - sent);
    const due = start + (sent / rate) * 1000;
    if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
    sent += size;
    counter.sent += size;
    yield size === CHUNK.length ? CHUNK : CHUNK.subarray(0, size);
  }
  yield tail;
}

export function bodyLength(spec: UploadSpec): number {
  const { head, tail } = frame('avatar', spec.filename);
  return head.length + spec.sizeMB * MB + tail.length;
}

/** node:http: writes until the body is done or the request fails; resolves on the response's end. */
export function httpUpload(spec: UploadSpec): Promise<UploadOutcome> {
  return new Promise((resolve) => {
    const counter = { sent: 0 };
    const started = performance.now();
    const out: UploadOutcome = {};
    const req = http.request({
      host: '127.0.0.1',
      port: spec.port,
      path: spec.path,
      method: 'POST',
      agent: new http.Agent({ keepAlive: true }),
      headers: { 'content-type': MULTIPART, 'content-length': bodyLength(spec) },
    });
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      req.destroy();
      resolve(out);
    };
    req.on('response', (res) => {
      out.status = res.statusCode;
      out.connection = res.headers.connection ?? null;
      out.msToResponse = performance.now() - started;
      out.sentAtResponse = counter.sent / MB;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        out.body = Buffer.concat(chunks).toString();
        finish();
      });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      out.error = error.code ?? error.message;
      if (out.status === undefined) finish();
    });
    (async () => {
      for await (const chunk of bodyChunks(spec, counter)) {
        if (done || req.destroyed) return;
        if (!req.write(chunk)) await drainedOrClosed(req);
      }
      if (!req.destroyed) req.end();
    })();
  });
}

/** fetch (undici) with a streamed request body. */
export async function fetchUpload(spec: UploadSpec): Promise<UploadOutcome> {
  const counter = { sent: 0 };
  const chunks = bodyChunks(spec, counter);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(value);
    },
  });
  const started = performance.now();
  try {
    const res = await fetch(`http://127.0.0.1:${spec.port}${spec.path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': MULTIPART },
      duplex: 'half',
      signal: AbortSignal.timeout(20_000),
    } as RequestInit);
    const out: UploadOutcome = {
      status: res.status,
      connection: res.headers.get('connection'),
      msToResponse: performance.now() - started,
      sentAtResponse: counter.sent / MB,
    };
    out.body = await res.text();
    return out;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    return { error: cause?.code ?? (error as Error).message };
  }
}
