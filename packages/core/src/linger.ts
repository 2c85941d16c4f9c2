/**
 * Closing a connection whose request body is still arriving, without losing
 * the answer. Both adapters refuse uploads early; Node then stops reading the
 * socket. Keep-alive would leave it stuck until its timeout, and a plain
 * `Connection: close` destroys the socket with unread bytes in the kernel,
 * which sends RST and makes fast clients see EPIPE instead of the 403. So:
 * send the answer with `Connection: close`, half-close (FIN), read and drop
 * what the client still sends for a bounded time and byte count, then close;
 * requests pipelined behind the refused one are read the same way. HTTP/2
 * forbids `Connection`, and other streams share the connection: there the
 * request's stream is read the same way, and reset past the limits.
 *
 * Node-only and framework-free (duck-typed on IncomingMessage, Socket and
 * Http2Stream); served from `@pathgate/core/http` so the main entry holds
 * no HTTP or socket code.
 */

export interface LingerOptions {
  /**
   * Longest time to keep reading after the answer, in ms (a timer holds
   * 2³¹ - 1 at most: a longer one waits that long). Default 2000.
   */
  lingerMs?: number | undefined;
  /** Most bytes to read and drop after the answer. Default 64 MiB. */
  lingerBytes?: number | undefined;
}

/** What `lingerClose` needs of an IncomingMessage. */
export interface LingeringRequest {
  readonly complete: boolean;
  readonly httpVersionMajor: number;
  readonly socket: LingeringSocket | null;
  /** An HTTP/2 request's stream (node:http2's compatibility API). */
  readonly stream?: LingeringStream;
  on(event: 'data', listener: (chunk: { length: number }) => void): unknown;
  on(event: 'end' | 'error', listener: () => void): unknown;
  read(size: number): unknown;
  resume(): unknown;
}

/** What it needs of a net.Socket. */
export interface LingeringSocket {
  destroyed: boolean;
  destroySoon?: () => void;
  /** Node's HTTP/1 parser of a server socket (internal: absent elsewhere, then left alone). */
  parser?: { onIncoming?: unknown } | null;
  end(): unknown;
  destroy(): unknown;
  once(event: 'close', listener: () => void): unknown;
}

/** What it needs of an HTTP/2 stream. */
export interface LingeringStream {
  readonly closed: boolean;
  close(code: number): unknown;
  once(event: 'finish' | 'close', listener: () => void): unknown;
}

/** What `bodyPending` reads of an IncomingMessage or an Http2ServerRequest. */
export interface PendingRequest {
  readonly complete: boolean;
  readonly httpVersionMajor: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly stream?: { readonly endAfterHeaders: boolean };
}

/**
 * Whether answering now would leave request bytes unread: a body the client
 * is still sending. On HTTP/1.1 a body is framed by a length or a transfer
 * encoding (a GET is not `complete` yet either, but has none); HTTP/2 needs
 * neither, and its HEADERS frame says whether a body follows.
 */
export function bodyPending(req: PendingRequest): boolean {
  if (req.complete) return false;
  if (req.httpVersionMajor >= 2) return req.stream?.endAfterHeaders === false;
  return !framesNoBody(req.headers);
}

/**
 * Whether an HTTP/1.1 request's head frames no body: no transfer encoding,
 * and no length or one of zeros. The Express gate asks it too, of a body no
 * parser has read, so that `00` is no body there, as `0` is (and as Fastify reads it).
 */
export function framesNoBody(headers: PendingRequest['headers']): boolean {
  const length = headers['content-length'];
  const none = length === undefined || (typeof length === 'string' && ZERO.test(length));
  return headers['transfer-encoding'] === undefined && none;
}

/**
 * A length of no bytes: Node takes `00` as 0 too. Were it a body, the
 * Express gate (run before Node marks such a request complete) closed the
 * connection after a deny that the Fastify plugin, running later, did not.
 */
const ZERO = /^0+$/;

/** RST_STREAM's code for "the answer is whole, stop sending" (RFC 9113, 8.1). */
const NO_ERROR = 0;

export const DEFAULT_LINGER_MS = 2000;
export const DEFAULT_LINGER_BYTES = 64 * 1024 * 1024;

/** The longest delay a Node timer holds: it fires a longer one after 1 ms instead. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const armed = new WeakSet<object>();

/** The socket or stream a drain reads from: its close ends the drain. */
interface Closing {
  once(event: 'close', listener: () => void): unknown;
}

/** Reads and drops the rest of the body for a bounded time, then `stop`s the socket or stream. */
function drain(
  req: LingeringRequest,
  closing: Closing,
  stop: () => void,
  ms: number,
  bytes: number,
): void {
  let seen = 0;
  const halt = () => {
    clearTimeout(timer);
    stop();
  };
  const timer = setTimeout(halt, Math.min(ms, MAX_TIMER_MS));
  timer.unref();
  closing.once('close', () => clearTimeout(timer));
  req.on('error', () => {});
  req.on('data', (chunk) => {
    seen += chunk.length;
    if (seen > bytes) halt();
  });
  req.on('end', halt);
  req.resume(); // a parser's unpipe left the request paused
}

/**
 * HTTP/2: once a parser stopped reading, Node neither reads the rest of the
 * body nor ends the stream, so flow control stalls the client and the stream
 * stays open. Once the answer is out, the rest is read and dropped as over
 * HTTP/1.1, within the same limits; past them, RST_STREAM with NO_ERROR tells
 * the client to stop sending and keep the answer (RFC 9113, 8.1). Other
 * streams of the session go on.
 */
function lingerStream(
  req: LingeringRequest,
  stream: LingeringStream,
  ms: number,
  bytes: number,
): void {
  if (armed.has(stream)) return;
  armed.add(stream);
  const reset = () => {
    if (!req.complete && !stream.closed) stream.close(NO_ERROR);
  };
  stream.once('finish', () => {
    if (!req.complete) drain(req, stream, reset, ms, bytes);
  });
}

/** What `dropRequest` touches of a request Node parsed. */
interface ParsedRequest {
  upgrade: boolean;
  resume(): unknown;
}

/**
 * A request parsed after the connection was refused: its body is read and
 * dropped. An upgrade or CONNECT loses its flag, or Node would hand the
 * socket to the server's `upgrade` or `connect` listener (a WebSocket server).
 */
function dropRequest(incoming: ParsedRequest): number {
  incoming.upgrade = false;
  incoming.resume();
  return 0; // as Node's own handler: the parser reads the body as framed
}

/**
 * After `Connection: close` the server must not process any further request
 * on the connection (RFC 9112, 9.6). While the answer goes out and the rest
 * of the body is read, Node's parser would hand the app the requests
 * pipelined behind it, and their answers would never go out: the parser
 * drops them instead.
 */
function refuseLaterRequests(socket: LingeringSocket): void {
  const { parser } = socket;
  if (parser && typeof parser.onIncoming === 'function') parser.onIncoming = dropRequest;
}

/** What `closeWithAnswer` uses of a Node `ServerResponse`. */
export interface ClosingResponse {
  readonly headersSent: boolean;
  setHeader(name: string, value: string): unknown;
  once(event: 'finish', listener: () => void): unknown;
}

/**
 * Has the answer close the connection, once `lingerClose` returned `true`:
 * its `Connection: close` does, or, where its headers already went out
 * saying keep-alive (an event stream an `onDeny` ended itself), the
 * lingering close once it ends; left open, the connection's parser would
 * drop every later request unanswered. The request's socket: Node takes the
 * response's away as it finishes.
 */
export function closeWithAnswer(
  req: Pick<LingeringRequest, 'socket'>,
  response: ClosingResponse,
): void {
  if (!response.headersSent) {
    response.setHeader('connection', 'close');
    return;
  }
  const { socket } = req;
  response.once('finish', () => socket?.destroySoon?.());
}

/**
 * Arms the lingering close for this request's socket: call it before the
 * answer is sent, and send the answer with `Connection: close` (Node then
 * calls `socket.destroySoon()` once the answer is flushed, which this hooks).
 * Requests pipelined behind this one are read and dropped, never handed to
 * the app. Returns whether the header should be set: true on HTTP/1.x (a
 * body that was read whole meanwhile needs no lingering, and a plain close
 * is safe), false on HTTP/2, which forbids it (the stream lingers instead,
 * and the connection stays open).
 */
export function lingerClose(req: LingeringRequest, options: LingerOptions = {}): boolean {
  const ms = options.lingerMs ?? DEFAULT_LINGER_MS;
  const bytes = options.lingerBytes ?? DEFAULT_LINGER_BYTES;
  if (req.httpVersionMajor >= 2) {
    if (!req.complete && req.stream !== undefined) lingerStream(req, req.stream, ms, bytes);
    return false;
  }
  const socket = req.socket;
  if (socket) refuseLaterRequests(socket);
  if (req.complete) return true; // nothing unread: a plain close cannot RST
  if (!socket || armed.has(socket) || typeof socket.destroySoon !== 'function') return true;
  armed.add(socket);
  // A body no one began to read, Node drops unseen once the answer is out
  // (no 'data' for `drain` to count, so lingerBytes would never stop it):
  // beginning to read it here keeps it coming. It waits, paused, for `drain`.
  req.read(0);
  const original = socket.destroySoon;
  socket.destroySoon = function lingeringDestroySoon(this: LingeringSocket) {
    if (req.complete) return original.call(this);
    if (this.destroyed) return;
    this.end(); // FIN after the answer: the client reads it, then sees the close
    drain(req, this, () => this.destroy(), ms, bytes);
  };
  return true;
}
