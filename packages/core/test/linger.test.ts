import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  exchangeRaw,
  parseResponses,
  type RawOptions,
  rawRequest,
} from '../../../test/raw-http.js';
import {
  bodyPending,
  type LingeringRequest,
  type LingeringSocket,
  type LingerOptions,
  lingerClose,
} from '../src/http.js';

// lingerClose on a bare node:http server, as both adapters use it: a 403 sent
// while the body is still arriving goes out whole with `Connection: close`,
// the rest of the body is read and dropped within the limits, then the
// connection closes; nothing pipelined behind the refused request reaches the
// app. Plain sockets, so a reset or a second answer shows.

interface Served {
  port: number;
  /** Requests the app was handed, by method. */
  handled: string[];
  upgrades: number;
}

const servers: (http.Server | http2.Http2Server)[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    if (server instanceof http.Server) server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** Starts `server` on 127.0.0.1, closed after the test, and returns its port. */
async function listen(server: http.Server | http2.Http2Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A server that refuses every request without reading its body. */
async function serve(options: LingerOptions = {}): Promise<Served> {
  const served: Served = { port: 0, handled: [], upgrades: 0 };
  const server = http.createServer((req, res) => {
    served.handled.push(req.method ?? '');
    if (bodyPending(req) && lingerClose(req, options)) res.setHeader('connection', 'close');
    res.statusCode = 403;
    res.end('denied');
  });
  server.on('upgrade', (_req, socket) => {
    served.upgrades++;
    socket.destroy();
  });
  served.port = await listen(server);
  return served;
}

/**
 * A server answering with `handler`; `closed` settles when the server side of
 * its first connection closes, which a half-open client cannot cause.
 */
async function serveWith(handler: http.RequestListener) {
  const server = http.createServer(handler);
  const closed = new Promise<'closed'>((resolve) =>
    server.once('connection', (socket) => socket.once('close', () => resolve('closed'))),
  );
  return { port: await listen(server), closed };
}

/** A client that keeps its side open, so a close is the server's; destroy it when done. */
function halfOpenClient(port: number) {
  const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.on('error', () => {});
  const answers = () =>
    parseResponses(Buffer.concat(received).toString('latin1')).responses.map((r) => [
      r.status,
      r.headers.connection,
      r.text,
    ]);
  return { socket, answers, fin: once(socket, 'end') };
}

/** `promise`, or 'open' when it has not settled after `ms` (a bound for a failing run only). */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<'open'>((resolve) => setTimeout(resolve, ms, 'open'))]);

const LENGTH = 100_000;
const post = (length = LENGTH) =>
  rawRequest('POST /upload HTTP/1.1', [`content-length: ${length}`], 'x'.repeat(100));
const more = (bytes: number) => 'x'.repeat(bytes);

/**
 * Sends a POST, then `rest` of its body after the 403, past the server's FIN
 * (half-open): `closed` is then the server's close, not its FIN.
 */
const exchange = (port: number, rest: (string | Buffer)[], options: RawOptions = {}) =>
  exchangeRaw(port, [post(), ...rest], { gapMs: 50, timeoutMs: 1500, halfOpen: true, ...options });

describe('lingerClose on what it is given', () => {
  const request = (complete: boolean, socket: LingeringSocket | null): LingeringRequest => ({
    complete,
    httpVersionMajor: 1,
    socket,
    on: () => undefined,
    read: () => undefined,
    resume: () => undefined,
  });
  const socket = (parser: LingeringSocket['parser']): LingeringSocket => ({
    destroyed: false,
    parser,
    end: () => undefined,
    destroy: () => undefined,
    once: () => undefined,
  });

  it('asks for Connection: close on HTTP/1.x with no socket, parser or destroySoon to hook', () => {
    const parser = { onIncoming: undefined };
    expect(
      [request(true, null), request(false, null), request(false, socket(null))].map((req) =>
        lingerClose(req),
      ),
    ).toEqual([true, true, true]);
    // HTTP/2 never asks for it, even with no stream to linger on.
    expect(lingerClose({ ...request(false, null), httpVersionMajor: 2 })).toBe(false);
    // A parser that is not Node's (no onIncoming function) is left alone.
    expect([lingerClose(request(false, socket(parser))), parser.onIncoming]).toEqual([
      true,
      undefined,
    ]);
  });

  /** A request still arriving, an EventEmitter as IncomingMessage is. */
  const arriving = (socket: LingeringSocket | null, httpVersionMajor = 1) =>
    Object.assign(new EventEmitter(), {
      complete: false,
      httpVersionMajor,
      socket,
      read: () => undefined,
      resume: () => undefined,
    });

  /** A socket whose `destroySoon` Node calls once the answer is flushed; `ends` counts its FINs. */
  function flushable(destroyed: boolean) {
    const sock = { ...socket(null), destroyed, ends: 0, destroySoon: () => undefined };
    sock.end = () => sock.ends++;
    return sock;
  }

  it('an error on the request while its rest is read and dropped is no crash', () => {
    const sock = flushable(false);
    const req = arriving(sock);
    lingerClose(req);
    sock.destroySoon();
    expect(sock.ends).toBe(1);
    expect(() => req.emit('error', new Error('aborted'))).not.toThrow();
  });

  it('a socket already destroyed when the answer is flushed gets no FIN and no drain', () => {
    const sock = flushable(true);
    const req = arriving(sock);
    lingerClose(req);
    sock.destroySoon();
    expect([sock.ends, req.eventNames()]).toEqual([0, []]);
  });

  it('an HTTP/2 stream armed twice is read once, and reset once past lingerMs', async () => {
    const stream = Object.assign(new EventEmitter(), { closed: false, resets: 0 });
    const req = Object.assign(arriving(null, 2), {
      stream: Object.assign(stream, { close: () => stream.resets++ }),
    });
    lingerClose(req, { lingerMs: 1 });
    lingerClose(req, { lingerMs: 1 });
    stream.emit('finish');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([stream.resets, req.listenerCount('data')]).toEqual([1, 1]);
  });
});

describe('lingerClose, HTTP/1.1', () => {
  it('sends the 403 whole, reads the rest of the body, and closes once it has all come', async () => {
    const { port } = await serve({ lingerMs: 60_000 });
    // Requests after the body: the client sees the close when it writes after it (a reset, then EPIPE).
    const next = rawRequest('GET /next HTTP/1.1');
    const done = await exchange(port, [more(1000), more(LENGTH - 1100), next, next, next]);
    expect(done.responses.map((r) => [r.status, r.headers.connection, r.text])).toEqual([
      [403, 'close', 'denied'],
    ]);
    expect(done.closed).toBe(true);
  });

  it('keeps reading within the limits while the client sends', async () => {
    const { port } = await serve({ lingerMs: 60_000, lingerBytes: 10_000 });
    const done = await exchange(port, [more(1000), more(1000)], { timeoutMs: 500 });
    expect([done.responses.length, done.closed]).toEqual([1, false]);
  });

  it('keeps reading with a lingerMs past what a Node timer holds (2³¹ - 1 ms), not 1 ms', async () => {
    // setTimeout takes a longer delay as 1 ms: the close came at once, a reset for the client.
    const { port } = await serve({ lingerMs: 2 ** 31, lingerBytes: 10_000 });
    const done = await exchange(port, [more(1000), more(1000)], { timeoutMs: 500 });
    expect([done.responses.length, done.closed]).toEqual([1, false]);
  });

  it('closes past lingerBytes, or after lingerMs, though the client has not ended', async () => {
    // The client sees the close when it writes after it: a reset, then EPIPE.
    const bytes = await serve({ lingerMs: 60_000, lingerBytes: 1000 });
    const past = await exchange(bytes.port, [more(600), more(600), more(10), more(10)]);
    expect([past.responses.length, past.closed]).toEqual([1, true]);
    const ms = await serve({ lingerMs: 20 });
    const late = await exchange(ms.port, [more(10), more(10), more(10)]);
    expect([late.responses.length, late.closed]).toEqual([1, true]);
  });

  it('keeps the connection with exactly lingerBytes read, and closes once one byte more comes', async () => {
    const LIMIT = 5000;
    let atLimit: (read: [number, boolean]) => void = () => {};
    const reached = new Promise<[number, boolean]>((resolve) => {
      atLimit = resolve;
    });
    const { port, closed } = await serveWith((req, res) => {
      if (bodyPending(req) && lingerClose(req, { lingerMs: 60_000, lingerBytes: LIMIT })) {
        res.setHeader('connection', 'close');
      }
      // Counts the body read once the answer is out, after lingerClose's own
      // listener (it began to read first): was the connection let go at LIMIT?
      res.on('finish', () => {
        let read = 0;
        req.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= LIMIT) atLimit([read, req.socket.destroyed]);
        });
      });
      res.statusCode = 403;
      res.end('denied');
    });
    const client = halfOpenClient(port);
    try {
      client.socket.write(post()); // 100 bytes of the body
      await client.fin; // the answer is out
      client.socket.write(more(LIMIT - 100));
      expect(await within(reached, 4000)).toEqual([LIMIT, false]);
      client.socket.write(more(1));
      expect(await within(closed, 4000)).toBe('closed');
      expect(client.answers()).toEqual([[403, 'close', 'denied']]);
    } finally {
      client.socket.destroy();
    }
  });

  it('closes at once, not after lingerMs, when the app read the body whole before answering', async () => {
    // Armed while the body was arriving; the app then read it to its end: nothing is left unread.
    const { port, closed } = await serveWith((req, res) => {
      const close = bodyPending(req) && lingerClose(req, { lingerMs: 60_000 });
      req.resume();
      req.on('end', () => {
        if (close) res.setHeader('connection', 'close');
        res.statusCode = 403;
        res.end('denied');
      });
    });
    const client = halfOpenClient(port);
    try {
      client.socket.write(post(200));
      client.socket.write(more(100));
      await client.fin;
      expect(await within(closed, 4000)).toBe('closed');
      expect(client.answers()).toEqual([[403, 'close', 'denied']]);
    } finally {
      client.socket.destroy();
    }
  });

  it('hands the app nothing pipelined behind the refused request, an upgrade neither', async () => {
    const served = await serve();
    const behind = [
      rawRequest('GET /next HTTP/1.1'),
      rawRequest('GET /ws HTTP/1.1', ['connection: upgrade', 'upgrade: websocket']),
    ];
    // One write: the app is handed the POST before the parser reads its body and what follows.
    const done = await exchangeRaw(served.port, [Buffer.concat([post(100), ...behind])], {
      end: true,
      timeoutMs: 1500,
    });
    expect(done.responses.map((r) => r.status)).toEqual([403]);
    expect([served.handled, served.upgrades, done.closed]).toEqual([['POST'], 0, true]);
  });
});

describe('lingerClose, HTTP/2', () => {
  /** A POST on its own session that sends 100 bytes, then `rest` more once the 403 is in. */
  async function post2(options: LingerOptions, rest: number) {
    let returned: boolean | undefined;
    const server = http2.createServer((req, res) => {
      returned = lingerClose(req, options);
      res.statusCode = 403;
      res.end('denied');
    });
    const session = http2.connect(`http://127.0.0.1:${await listen(server)}`);
    try {
      const stream = session.request(
        { ':method': 'POST', ':path': '/upload' },
        { endStream: false },
      );
      stream.write(more(100));
      const status = await new Promise((resolve) =>
        stream.on('response', (h) => resolve(h[':status'])),
      );
      stream.resume();
      stream.write(more(rest));
      // Closed by the server's reset, or still open after 300 ms.
      const reset = await new Promise((resolve) => {
        stream.on('close', () => resolve(stream.rstCode));
        setTimeout(() => resolve('open'), 300);
      });
      return { returned, status, reset };
    } finally {
      session.destroy();
    }
  }

  it('asks for no Connection header, reads the stream within the limits, and resets it past them with NO_ERROR', async () => {
    expect(await post2({ lingerBytes: 10_000 }, 1000)).toEqual({
      returned: false,
      status: 403,
      reset: 'open',
    });
    expect(await post2({ lingerBytes: 1000 }, 5000)).toEqual({
      returned: false,
      status: 403,
      reset: http2.constants.NGHTTP2_NO_ERROR,
    });
  });
});
