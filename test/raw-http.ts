import net from 'node:net';
import tls from 'node:tls';
import { parseJson } from './answer.js';

// A raw HTTP/1.1 client for the connection tests: requests are bytes written
// on a plain socket (several in one write() to pipeline them, in pieces to
// trickle them), and the answers are parsed back from the bytes the server
// sent, one after another, so a response that should not exist shows up.

/** One answer read off the socket. */
export interface RawResponse {
  status: number;
  /** Header names lowercased; a repeated header keeps its last value. */
  headers: Record<string, string>;
  text: string;
  json: unknown;
}

export interface RawExchange {
  /** Every answer, interim ones (1xx) included, in the order they came. */
  responses: RawResponse[];
  /** Whether the server closed the connection before the timeout. */
  closed: boolean;
  /** A socket error (ECONNRESET), if the connection failed. */
  error?: string;
  /** Bytes after the last whole answer (a cut answer, or garbage). */
  rest: string;
}

export interface RawOptions {
  /**
   * The request methods, in order, for the answers without a body (HEAD);
   * answers are read as if to GET when not given.
   */
  methods?: readonly string[];
  /** Pause before each piece after the first, in ms. */
  gapMs?: number;
  /** Half-close the connection after the last piece (the server's answers still come). */
  end?: boolean;
  /** Stop waiting for the server after this long, in ms. */
  timeoutMs?: number;
  /** Stop waiting once this many final answers (not 1xx) arrived. */
  expect?: number;
  /** Keep sending after the server's FIN, as a client that ignores it would. */
  halfOpen?: boolean;
  /** Speak HTTP/1.1 over TLS, trusting this certificate (a server with `allowHTTP1`). */
  ca?: string;
}

/** The connection `exchangeRaw` writes on: plain, or TLS when given a `ca`. */
function connectRaw(port: number, options: RawOptions): net.Socket {
  const at = { port, host: '127.0.0.1', allowHalfOpen: options.halfOpen };
  if (options.ca === undefined) return net.connect(at);
  return tls.connect({ ...at, ca: options.ca, ALPNProtocols: ['http/1.1'] });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The head of an answer at `at`, or undefined when it has not all arrived. */
function parseHead(text: string, at: number) {
  const split = text.indexOf('\r\n\r\n', at);
  if (split === -1) return undefined;
  const [line = '', ...lines] = text.slice(at, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const header of lines) {
    const colon = header.indexOf(':');
    headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
  }
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(line)?.[1] ?? 0), headers, end: split + 4 };
}

/** A chunked body starting at `at`: its text and where it ends, or undefined when cut. */
function parseChunked(text: string, at: number) {
  let body = '';
  let offset = at;
  for (;;) {
    const eol = text.indexOf('\r\n', offset);
    if (eol === -1) return undefined;
    const size = Number.parseInt(text.slice(offset, eol), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) {
      const end = text.indexOf('\r\n\r\n', eol);
      return end === -1 ? undefined : { body, end: end + 4 };
    }
    if (text.length < eol + 2 + size + 2) return undefined;
    body += text.slice(eol + 2, eol + 2 + size);
    offset = eol + 2 + size + 2;
  }
}

/** Every whole answer in `text` (latin1), given the methods they answer. */
export function parseResponses(text: string, methods: readonly string[] = []) {
  const responses: RawResponse[] = [];
  let at = 0;
  let finals = 0;
  for (;;) {
    const head = parseHead(text, at);
    if (head === undefined) break;
    const interim = head.status >= 100 && head.status < 200;
    const bodyless = interim || head.status === 204 || head.status === 304;
    let body = '';
    let end = head.end;
    if (!bodyless && methods[finals] !== 'HEAD') {
      if (head.headers['transfer-encoding'] === 'chunked') {
        const chunked = parseChunked(text, head.end);
        if (chunked === undefined) break;
        ({ body, end } = chunked);
      } else {
        const length = Number(head.headers['content-length'] ?? 0);
        if (text.length < head.end + length) break;
        body = text.slice(head.end, head.end + length);
        end = head.end + length;
      }
    }
    const utf8 = Buffer.from(body, 'latin1').toString('utf8');
    responses.push({
      status: head.status,
      headers: head.headers,
      text: utf8,
      json: parseJson(utf8),
    });
    if (!interim) finals++;
    at = end;
  }
  return { responses, rest: text.slice(at), finals };
}

/**
 * Writes `pieces` (latin1 text or bytes) on one connection to 127.0.0.1,
 * `gapMs` apart, and reads the answers until the server closes, `expect`
 * final answers are in, or `timeoutMs` passes. The socket is destroyed on
 * return.
 */
export function exchangeRaw(
  port: number,
  pieces: readonly (string | Buffer)[],
  options: RawOptions = {},
): Promise<RawExchange> {
  const { timeoutMs = 3000, gapMs = 0 } = options;
  const socket = connectRaw(port, options);
  const chunks: Buffer[] = [];
  return new Promise((resolve) => {
    let error: string | undefined;
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parseResponses(Buffer.concat(chunks).toString('latin1'), options.methods);
      resolve({ responses: parsed.responses, closed, rest: parsed.rest, error });
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (options.expect === undefined) return;
      const text = Buffer.concat(chunks).toString('latin1');
      if (parseResponses(text, options.methods).finals >= options.expect) finish(false);
    });
    socket.on('error', (failure: NodeJS.ErrnoException) => {
      error = failure.code ?? failure.message;
    });
    socket.on('close', () => finish(true));
    (async () => {
      for (const [i, piece] of pieces.entries()) {
        if (i > 0 && gapMs > 0) await sleep(gapMs);
        if (settled || socket.destroyed) return;
        socket.write(typeof piece === 'string' ? Buffer.from(piece, 'latin1') : piece);
      }
      if (options.end && !socket.destroyed) socket.end();
    })();
  });
}

/**
 * An exchange as one value to compare: each answer's status, Connection
 * header and JSON body, whether the server closed the connection (within the
 * exchange's timeout), and the client's error (a reset, were the close not
 * lingering).
 */
export const closing = (got: RawExchange) => ({
  answers: got.responses.map((r) => [r.status, r.headers.connection, r.json]),
  closed: got.closed,
  error: got.error,
});

/** A request's bytes: the request line, the header lines, the blank line, the body. */
export function rawRequest(
  line: string,
  headers: readonly string[] = [],
  body: string | Buffer = '',
): Buffer {
  const head = Buffer.from(
    `${[line, 'host: 127.0.0.1', ...headers].join('\r\n')}\r\n\r\n`,
    'latin1',
  );
  return Buffer.concat([head, typeof body === 'string' ? Buffer.from(body, 'latin1') : body]);
}

/** A keep-alive connection: requests written one at a time, or pipelined, each answer awaited. */
export interface RawSession {
  /** Writes a request and resolves with its final answer (1xx skipped). */
  send(request: Buffer, method?: string): Promise<RawResponse>;
  /** Writes GET (or bodiless) requests in one write and resolves with their answers. */
  pipeline(requests: readonly Buffer[]): Promise<RawResponse[]>;
  /** Whether the server closed the connection. */
  readonly closed: boolean;
  close(): void;
}

/** Opens a connection to 127.0.0.1 for requests sent one after another. */
export function openSession(port: number): Promise<RawSession> {
  const socket = net.connect(port, '127.0.0.1');
  const methods: string[] = [];
  let received = Buffer.alloc(0);
  let closed = false;
  let wake = () => {};
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    wake();
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    closed = true;
    wake();
  });
  const finals = () =>
    parseResponses(received.toString('latin1'), methods).responses.filter((r) => r.status >= 200);
  /** Writes `bytes`, and resolves with the final answers from `from` on, once `count` are in. */
  const answers = (bytes: Buffer, from: number, count: number) => {
    socket.write(bytes);
    return new Promise<RawResponse[]>((resolve, reject) => {
      wake = () => {
        const got = finals().slice(from, from + count);
        if (got.length === count) resolve(got);
        else if (closed) reject(new Error('the connection closed before the answers'));
      };
      wake();
    });
  };
  const session: RawSession = {
    async send(request, method = 'GET') {
      const [answer] = await answers(request, methods.push(method) - 1, 1);
      return answer as RawResponse;
    },
    pipeline(requests) {
      const from = methods.length;
      methods.push(...requests.map(() => 'GET'));
      return answers(Buffer.concat(requests), from, requests.length);
    },
    get closed() {
      return closed;
    },
    close: () => socket.destroy(),
  };
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(session));
    socket.once('error', reject);
  });
}
