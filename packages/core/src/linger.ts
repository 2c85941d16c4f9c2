/**
 * Closing a connection whose request body is still arriving, without losing
 * the answer. Both adapters refuse uploads early; Node then stops reading the
 * socket. Keep-alive would leave it stuck until its timeout, and a plain
 * `Connection: close` destroys the socket with unread bytes in the kernel,
 * which sends RST and makes fast clients see EPIPE instead of the 403. So:
 * send the answer with `Connection: close`, half-close (FIN), read and drop
 * what the client still sends for a bounded time and byte count, then close.
 *
 * Node-only and framework-free (duck-typed on IncomingMessage and Socket);
 * served from `@pathgate/core/http` so the main entry stays I/O-free.
 */

export interface LingerOptions {
  /** Longest time to keep reading after the answer, in ms. Default 2000. */
  lingerMs?: number;
  /** Most bytes to read and drop after the answer. Default 64 MiB. */
  lingerBytes?: number;
}

/** What `lingerClose` needs of an IncomingMessage. */
export interface LingeringRequest {
  readonly complete: boolean;
  readonly httpVersionMajor: number;
  readonly socket: LingeringSocket | null;
  on(event: 'data', listener: (chunk: { length: number }) => void): unknown;
  on(event: 'end' | 'error', listener: () => void): unknown;
  resume(): unknown;
}

/** What it needs of a net.Socket. */
export interface LingeringSocket {
  destroyed: boolean;
  destroySoon?: () => void;
  end(): unknown;
  destroy(): unknown;
  once(event: 'close', listener: () => void): unknown;
}

export const DEFAULT_LINGER_MS = 2000;
export const DEFAULT_LINGER_BYTES = 64 * 1024 * 1024;

const armed = new WeakSet<object>();

/** Reads and drops the rest of the body for a bounded time, then destroys the socket. */
function drain(req: LingeringRequest, socket: LingeringSocket, ms: number, bytes: number): void {
  socket.end(); // FIN after the answer: the client reads it, then sees the close
  let seen = 0;
  const stop = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  const timer = setTimeout(stop, ms);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  req.on('error', () => {});
  req.on('data', (chunk) => {
    seen += chunk.length;
    if (seen > bytes) stop();
  });
  req.on('end', stop);
  req.resume(); // a parser's unpipe left the request paused
}

/**
 * Arms the lingering close for this request's socket: call it before the
 * answer is sent, and send the answer with `Connection: close` (Node then
 * calls `socket.destroySoon()` once the answer is flushed, which this hooks).
 * Returns whether the header should be set (false for HTTP/2, which resets
 * the stream instead, and when the body was already read whole).
 */
export function lingerClose(req: LingeringRequest, options: LingerOptions = {}): boolean {
  if (req.httpVersionMajor >= 2) return false;
  if (req.complete) return true; // nothing unread: a plain close cannot RST
  const socket = req.socket;
  if (!socket || armed.has(socket) || typeof socket.destroySoon !== 'function') return true;
  armed.add(socket);
  const ms = options.lingerMs ?? DEFAULT_LINGER_MS;
  const bytes = options.lingerBytes ?? DEFAULT_LINGER_BYTES;
  const original = socket.destroySoon;
  socket.destroySoon = function lingeringDestroySoon(this: LingeringSocket) {
    if (req.complete) return original.call(this);
    if (this.destroyed) return;
    drain(req, this, ms, bytes);
  };
  return true;
}
