import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { PassThrough, Readable, Writable } from 'node:stream';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { callWatching, denyBody, hookBody } from '../src/index.js';

describe('denyBody', () => {
  it('names the spec and the reason, nothing else', () => {
    expect(denyBody({ reason: 'nul-byte', label: 'body.to' })).toEqual({
      statusCode: 403,
      code: 'PATHGATE_DENIED',
      error: 'Forbidden',
      message: 'body.to: path denied (nul-byte)',
      reason: 'nul-byte',
    });
  });
});

describe("hookBody: what an onDeny hook's call makes of the 403 body", () => {
  const never = () => {
    throw new Error('onRejected must not be called');
  };

  it('an object is the body; anything else that is not a promise means the default', () => {
    const own = { error: 'no' };
    expect(hookBody(() => own, never)).toBe(own);
    for (const value of [undefined, null, 0, 'text', true, () => ({})]) {
      expect(hookBody(() => value, never)).toBeUndefined();
    }
  });

  it('a promise is no body, even one that resolves to an object', async () => {
    expect(hookBody(() => Promise.resolve({ error: 'late' }), never)).toBeUndefined();
    await new Promise((resolve) => setImmediate(resolve));
  });

  it("a thenable that calls then()'s first callback unchecked (Fastify's reply) is no body, and no error", async () => {
    // biome-ignore lint/suspicious/noThenProperty: the case under test
    const reply = { then: (fulfilled: () => void) => setImmediate(() => fulfilled()) };
    const errors: unknown[] = [];
    const onError = (error: unknown) => errors.push(error);
    process.on('uncaughtException', onError);
    try {
      expect(hookBody(() => reply, never)).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(errors).toEqual([]);
    } finally {
      process.off('uncaughtException', onError);
    }
  });

  it("the adapter's response object, returned, is no body: neither awaited nor serialized", () => {
    let thenCalls = 0;
    const failed: unknown[] = [];
    // biome-ignore lint/suspicious/noThenProperty: a thenable reply, as Fastify's is
    const reply = { then: () => thenCalls++, self: {} as object };
    reply.self = reply; // a cycle too, as Express's res holds
    expect(
      hookBody(
        () => reply,
        (e) => failed.push(e),
        reply,
      ),
    ).toBeUndefined();
    expect({ thenCalls, failed }).toEqual({ thenCalls: 0, failed: [] });
    // Another object of the same shape is still judged as a body would be.
    expect(
      hookBody(
        () => ({ ...reply }),
        (e) => failed.push(e),
        reply,
      ),
    ).toBeUndefined();
    expect(thenCalls).toBe(1);
  });

  it('a throw goes to onFailed, as does a throwing then getter: the default body', () => {
    const seen: unknown[] = [];
    const error = new Error('sink down');
    expect(
      hookBody(
        () => {
          throw error;
        },
        (e) => seen.push(e),
      ),
    ).toBeUndefined();
    const trap = Object.defineProperty({}, 'then', {
      get() {
        throw 'getter';
      },
    });
    expect(
      hookBody(
        () => trap,
        (e) => seen.push(e),
      ),
    ).toBeUndefined();
    expect(seen).toEqual([error, 'getter']);
  });

  it('an object JSON cannot write goes to onFailed: the default body', () => {
    const seen: unknown[] = [];
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const body of [cyclic, { n: 1n }, { toJSON: () => [1n] }]) {
      expect(
        hookBody(
          () => body,
          (e) => seen.push(e),
        ),
      ).toBeUndefined();
    }
    expect(seen).toEqual([expect.any(TypeError), expect.any(TypeError), expect.any(TypeError)]);
  });

  it.each([
    ['a plain {}', () => ({})],
    ['a {} with no prototype', () => Object.create(null)],
    ["another realm's {}", () => runInNewContext('({})')],
    [
      'an instance with fields of its own',
      () =>
        new (class Reason {
          reason = 'denied';
        })(),
    ],
    ['an Error with fields of its own', () => Object.assign(new Error('x'), { statusCode: 451 })],
  ] as [string, () => object][])('%s is a body, as JSON writes it', (_name, make) => {
    const seen: unknown[] = [];
    const body = make();
    expect(
      hookBody(
        () => body,
        (e) => seen.push(e),
      ),
    ).toBe(body);
    expect(seen).toEqual([]);
  });

  it('a collection that says how JSON writes it (its own toJSON) is a body, as it says', () => {
    const seen: unknown[] = [];
    class Reasons extends Map<string, string> {
      toJSON() {
        return Object.fromEntries(this);
      }
    }
    const reasons = new Reasons([['reason', 'denied']]);
    expect(
      hookBody(
        () => reasons,
        (e) => seen.push(e),
      ),
    ).toBe(reasons);
    expect([JSON.stringify(reasons), seen]).toEqual(['{"reason":"denied"}', []]);
  });

  it('a stream is no body: JSON would write its internals; it is destroyed, and goes to onFailed', () => {
    const seen: unknown[] = [];
    const stream = Readable.from(['a page of its own']);
    expect(
      hookBody(
        () => stream,
        (e) => seen.push(e),
      ),
    ).toBeUndefined();
    expect([stream.destroyed, seen]).toEqual([true, [expect.any(TypeError)]]);
  });

  it.each([
    ['a Buffer', () => Buffer.from('<p>denied</p>'), /bytes/],
    ['a Uint8Array', () => new TextEncoder().encode('denied'), /bytes/],
    ['a DataView', () => new DataView(new ArrayBuffer(4)), /bytes/],
    ['an ArrayBuffer', () => new ArrayBuffer(4), /bytes/],
    // Another realm's (a vm's): instanceof would miss them.
    ['a Uint8Array of another realm', () => runInNewContext('new Uint8Array(4)'), /bytes/],
    ['an ArrayBuffer of another realm', () => runInNewContext('new ArrayBuffer(4)'), /bytes/],
    ['a SharedArrayBuffer', () => new SharedArrayBuffer(4), /bytes/],
    ['a Blob', () => new Blob(['denied']), /Response or a Blob/],
    ['a File (a Blob)', () => new File(['denied'], 'denied.html'), /Response or a Blob/],
    ['a web Response', () => new Response('<p>denied</p>', { status: 451 }), /Response or a Blob/],
    ['a web ReadableStream', () => new ReadableStream(), /stream/],
  ])(
    '%s is no body (JSON would write its internals, or {}): it goes to onFailed, saying what to do',
    (_name, make, what) => {
      const seen: unknown[] = [];
      expect(hookBody(make, (e) => seen.push(e))).toBeUndefined();
      expect(seen).toEqual([expect.any(TypeError)]);
      expect((seen[0] as Error).message).toMatch(what);
      expect((seen[0] as Error).message).toMatch(/send (it|them) from onDeny yourself/);
    },
  );

  it.each([
    ['a Map', 'Map', () => new Map([['reason', 'denied']])],
    ['a Set', 'Set', () => new Set(['denied'])],
    ['a WeakMap', 'WeakMap', () => new WeakMap()],
    ['a WeakSet', 'WeakSet', () => new WeakSet()],
    ['a URLSearchParams', 'URLSearchParams', () => new URLSearchParams('reason=denied')],
    ['a Headers', 'Headers', () => new Headers({ 'x-reason': 'denied' })],
    ['a FormData', 'FormData', () => new FormData()],
    [
      'a subclass of Map',
      'Map',
      () => new (class Reasons extends Map<string, number> {})([['a', 1]]),
    ],
    ['a Map of another realm', 'Map', () => runInNewContext('new Map([[1, 2]])')],
    ['an Error', 'Error', () => new Error('denied: /srv/root/secret')],
    ['a WeakRef', 'WeakRef', () => new WeakRef({ reason: 'denied' })],
    [
      'an instance whose fields are private',
      'Object',
      () =>
        new (class Reason {
          readonly #reason = 'denied';
          get reason() {
            return this.#reason;
          }
        })(),
    ],
  ] as [string, string, () => object][])(
    '%s is no body (JSON writes it as {}): it goes to onFailed, naming its kind, saying to return a plain object',
    (_name, kind, make) => {
      const seen: unknown[] = [];
      expect(hookBody(make, (e) => seen.push(e))).toBeUndefined();
      expect(seen).toEqual([expect.any(TypeError)]);
      expect((seen[0] as Error).message).toBe(
        `an object JSON writes as {} (${kind}) is no 403 body: return a plain object`,
      );
    },
  );

  it("a web stream, or a Response's body, no one will read is cancelled; a locked one is left to its reader, no rejection unhandled", async () => {
    const cancelled: string[] = [];
    const source = (name: string) =>
      new ReadableStream({
        cancel: () => {
          cancelled.push(name);
        },
      });
    const locked = source('locked');
    const reader = locked.getReader();
    for (const returned of [source('stream'), new Response(source('response body')), locked]) {
      hookBody(
        () => returned,
        () => {},
      );
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(cancelled).toEqual(['stream', 'response body']);
    reader.releaseLock();
  });

  // node-fetch's body is a PassThrough the response is piped into: writable while it arrives.
  const arriving = () => {
    const body = new PassThrough();
    body.write('<p>denied</p>');
    return body;
  };
  it.each([
    ['a Readable', () => Readable.from(['<p>denied</p>'])],
    ["node-fetch's PassThrough, its response still arriving", arriving],
  ])('a Response whose body is a Node stream (%s) has the stream destroyed', (_name, make) => {
    const body = make();
    const seen: unknown[] = [];
    const fetched = { arrayBuffer: async () => new ArrayBuffer(0), body };
    expect(
      hookBody(
        () => fetched,
        (e) => seen.push(e),
      ),
    ).toBeUndefined();
    expect((seen[0] as Error).message).toMatch(/Response or a Blob/);
    expect(body.destroyed).toBe(true);
  });

  it("the exchange's own streams (a chained call returns them) are no body, and are left alone", () => {
    const socket = new Socket();
    const req = new IncomingMessage(socket);
    const exchange = [socket, req, new ServerResponse(req)];
    const seen: unknown[] = [];
    for (const stream of exchange) {
      expect(
        hookBody(
          () => stream,
          (e) => seen.push(e),
        ),
      ).toBeUndefined();
    }
    expect(exchange.map((stream) => stream.destroyed)).toEqual([false, false, false]);
    expect(seen).toHaveLength(3);
    socket.destroy();
  });

  it('a write stream the hook ended (`return log.end(line)`) is no body, and is left to write what it holds', async () => {
    const written: string[] = [];
    const log = new Writable({
      write(chunk, _encoding, callback) {
        setImmediate(() => {
          written.push(String(chunk));
          callback();
        });
      },
    });
    const seen: unknown[] = [];
    expect(
      hookBody(
        () => log.end('denied\n'),
        (e) => seen.push(e),
      ),
    ).toBeUndefined();
    await new Promise((resolve) => log.once('finish', resolve).once('close', resolve));
    expect([log.destroyed && !log.writableFinished, written, seen]).toEqual([
      false,
      ['denied\n'],
      [expect.any(TypeError)],
    ]);
  });

  it("a rejecting promise's error goes to onFailed, not to an unhandled rejection", async () => {
    const seen: unknown[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const error = new Error('sink down');
      expect(
        hookBody(
          () => Promise.reject(error),
          (e) => seen.push(e),
        ),
      ).toBeUndefined();
      // A thenable that is not a Promise, as some libraries return: on purpose.
      // biome-ignore lint/suspicious/noThenProperty: the case under test
      const thenable = { then: (_ok: unknown, fail: (e: unknown) => void) => fail('custom') };
      expect(
        hookBody(
          () => thenable,
          (e) => seen.push(e),
        ),
      ).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(seen).toEqual(['custom', error]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('callWatching: whether an onDeny hook began an answer', () => {
  class Reply {
    sent: unknown[] = [];
    send(payload: unknown) {
      this.sent.push(payload);
      return this;
    }
  }

  it('notes each call of a watched method, which still runs with its this and arguments', () => {
    const reply = new Reply();
    let calls = 0;
    const result = callWatching(
      reply,
      ['send', 'missing'],
      () => calls++,
      () => {
        expect(reply.send('a')).toBe(reply);
        return 'hook result';
      },
    );
    expect([result, calls, reply.sent]).toEqual(['hook result', 1, ['a']]);
  });

  it('leaves a method the response lacks absent during the call: a hook may test for it', () => {
    const reply = new Reply();
    const seen = callWatching(
      reply,
      ['sendFile'],
      () => {},
      () => 'sendFile' in reply,
    );
    expect(seen).toBe(false);
  });

  it('puts the methods back as they were: inherited ones inherited again, own ones as they were', () => {
    const inherited = new Reply();
    const own = Object.assign(new Reply(), { send: () => 'own' });
    const ownSend = own.send;
    for (const reply of [inherited, own])
      callWatching(
        reply,
        ['send'],
        () => {},
        () => {},
      );
    expect(Object.hasOwn(inherited, 'send')).toBe(false);
    expect(own.send).toBe(ownSend);
  });

  it('notes no call that throws: a method refusing its arguments began no answer', () => {
    class Refusing extends Reply {
      override send(): this {
        throw new TypeError('path must be absolute');
      }
    }
    const reply = new Refusing();
    let calls = 0;
    callWatching(
      reply,
      ['send'],
      () => calls++,
      () => expect(() => reply.send()).toThrow('path must be absolute'),
    );
    expect(calls).toBe(0);
  });

  it('notes nothing when no watched method is called, and restores after a throw', () => {
    const reply = new Reply();
    let calls = 0;
    expect(() =>
      callWatching(
        reply,
        ['send'],
        () => calls++,
        () => {
          throw new Error('hook failed');
        },
      ),
    ).toThrow('hook failed');
    expect([calls, Object.hasOwn(reply, 'send')]).toEqual([0, false]);
  });
});
