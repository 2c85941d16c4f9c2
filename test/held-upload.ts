// A client that tells a server that streams an upload from one that buffers
// it, by back-pressure rather than memory: while the server's handler (or
// storage) holds the file stream, a streaming server lets the client push
// only what the sockets and stream buffers hold; a buffering one takes the
// whole body. RSS cannot tell them apart: on Node 26 a server's RSS rose by
// 40–49 MB while it streamed a 50 MB upload to disk, keeping none of it.
import type http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { type Answer, readAnswer } from './answer.js';
import { drainedOrClosed, openRequest } from './fault-clients.js';

const CHUNK = Buffer.alloc(64 * 1024, 0x61);
// No drain for this long, with the stream held: the body has stalled.
const STALLED_MS = 1000;
const BOUNDARY = 'pathgate-held-upload';

/** What a streaming server may take while the stream is held: socket buffers and stream high-water marks hold a few MB. */
export const STREAMED_AT_MOST = 16 * 1024 * 1024;

export interface HeldUpload {
  /** Body bytes of the file the server took before the upload stalled. */
  readonly taken: number;
  /** Sends the rest of the body (call it once the server lets the stream go); resolves with the answer. */
  finish(): Promise<Answer>;
  /** Drops the connection: for a clean-up after a failed assertion. */
  abort(): void;
}

/** Resolves true when `req` drained, false when it stayed full for `ms`. */
function drainedWithin(req: http.ClientRequest, ms: number): Promise<boolean> {
  return Promise.race([drainedOrClosed(req).then(() => true), delay(ms).then(() => false)]);
}

/**
 * Writes `size` bytes of file from byte `sent` on, with back-pressure: after
 * each full write, `goOn` waits and says whether to write more. Returns the
 * bytes written.
 */
async function writeFile(
  req: http.ClientRequest,
  sent: number,
  size: number,
  goOn: () => Promise<boolean>,
): Promise<number> {
  while (sent < size && !req.destroyed) {
    const n = Math.min(CHUNK.length, size - sent);
    sent += n;
    if (!req.write(CHUNK.subarray(0, n)) && !(await goOn())) break;
  }
  return sent;
}

/**
 * POSTs one multipart file of `size` bytes (`field`, `filename`) with a
 * Content-Length, and writes until the body stalls or is all sent.
 */
export async function heldUpload(
  port: number,
  path: string,
  { field, filename, size }: { field: string; filename: string; size: number },
): Promise<HeldUpload> {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const req = openRequest(
    port,
    { path },
    {
      'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
      'content-length': head.length + size + tail.length,
    },
  );
  const answer = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve).once('error', reject);
  }).then(readAnswer);
  // Aborted after a failed assertion, the answer never comes: no second failure.
  answer.catch(() => undefined);
  req.write(head);
  const taken = await writeFile(req, 0, size, () => drainedWithin(req, STALLED_MS));
  return {
    taken,
    async finish() {
      await writeFile(req, taken, size, () => drainedOrClosed(req).then(() => true));
      req.end(tail);
      return answer;
    },
    abort: () => req.destroy(),
  };
}
