import { readdirSync, readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { denyBody, type GuardDenyReason, PermissionPolicy } from '@pathgate/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesIn } from '../packages/fastify-plugin/test/helpers.js';
import {
  type Apps,
  BOUNDARY,
  DENIED_END,
  FRAMEWORKS,
  type Framework,
  MULTIPART_TYPE,
  multipartBody,
  OPENED,
  type Route,
  startApps,
  watchApps,
} from './apps.js';
import { EXAMPLES, start } from './examples.js';
import { connections, eventually } from './fault-clients.js';
import {
  exchangeRaw,
  openSession,
  type RawExchange,
  type RawResponse,
  rawRequest,
} from './raw-http.js';

// HTTP/1.1 at the connection level, against both adapters, with requests
// written byte for byte on plain sockets: keep-alive, pipelining, framing
// the parser must refuse, odd request targets, and what a connection costs.
// Each request must get its own decision, no handler may run for a request
// pathgate denied or for one the server said it would not read, and no
// request hidden in a refused body may be answered.

const ROOT = '/srv/root';
const policy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: ['docs/**', 'rw:uploads/**'] },
});

const ROUTES: readonly Route[] = [
  { method: 'GET', url: '/files/*', mode: 'read', paths: [{ params: '*' }] },
  { method: 'GET', url: '/q', mode: 'read', paths: [{ query: 'path' }] },
  { method: 'POST', url: '/move', mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] },
  { method: 'POST', url: '/note', mode: 'write', paths: [{ body: 'to', optional: true }] },
  {
    method: 'POST',
    url: '/upload',
    mode: 'write',
    paths: [
      { query: 'dir', under: 'uploads' },
      { file: 'f', under: 'uploads' },
    ],
  },
];

const watched = watchApps(policy, ROUTES);
const OUT = 'path-not-in-allowlist';
const CLOSE = 'connection: close';

const get = (target: string, ...headers: string[]) => rawRequest(`GET ${target} HTTP/1.1`, headers);
const ALLOWED_FILE = multipartBody(['name="f"; filename="ok.txt"']);
/** A multipart body of one file part, its name and data sent as latin1 bytes. */
const filePart = (field: string, filename: string, data: string) =>
  Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n${data}\r\n--${BOUNDARY}--\r\n`,
    'latin1',
  );
/** An upload to `/upload?dir=…`, with its multipart content type and length. */
const upload = (dir: string, body: Buffer = ALLOWED_FILE, ...headers: string[]) =>
  rawRequest(
    `POST /upload?dir=${dir} HTTP/1.1`,
    [`content-type: ${MULTIPART_TYPE}`, `content-length: ${body.length}`, ...headers],
    body,
  );

const denied = (reason: GuardDenyReason, label: string) => denyBody({ reason, label });

const TE = 'transfer-encoding: chunked';
const chunked = (body: string, extension = '', trailer = '') =>
  `${body.length.toString(16)}${extension}\r\n${body}\r\n0\r\n${trailer}\r\n`;
const MOVE_DENIED = '{"from":"../etc/passwd","to":"uploads/b"}';
const MOVE_ALLOWED = '{"from":"uploads/a","to":"uploads/b"}';
const movePost = (headers: readonly string[], body: string) =>
  rawRequest('POST /move HTTP/1.1', ['content-type: application/json', ...headers], body);
/** A JSON move with its Content-Length. */
const move = (body: string) => movePost([`content-length: ${body.length}`], body);

/** Handler runs on `framework` while `run` goes on, and what it returns. */
async function counting<T>(framework: Framework, run: () => Promise<T>) {
  const before = watched.calls[framework];
  watched.clear(framework);
  const result = await run();
  return { result, calls: watched.calls[framework] - before };
}

describe('pipelined behind a refused upload whose body is still arriving', () => {
  // Requests hidden in the refused body, and real ones pipelined after it:
  // after its `Connection: close` the server must not process any of them
  // (RFC 9112, 9.6), neither answer them nor hand them to a handler.
  const smuggled = Buffer.from(
    `\r\n${get('/files/docs/smuggled').toString('latin1')}${upload('in-body').toString('latin1')}`,
    'latin1',
  );
  const SIZES = [
    ['small (read in the same chunk as its head)', 1024],
    ['large (read after the 403 went out)', 512 * 1024],
  ] as const;
  for (const framework of FRAMEWORKS) {
    for (const [size, bytes] of SIZES) {
      it(`${framework}: ${size}`, async () => {
        const padding = Buffer.alloc(bytes - smuggled.length, 0x61);
        const refused = upload('../../etc', Buffer.concat([padding, smuggled]));
        const behind = [get('/files/docs/after'), upload('after')];
        const { result, calls } = await counting(framework, () =>
          exchangeRaw(watched.apps[framework].port, [Buffer.concat([refused, ...behind])], {
            timeoutMs: 5000,
          }),
        );
        expect(result.responses.map((r) => r.status)).toEqual([403]);
        expect(result.responses[0]?.json).toEqual(denied(OUT, 'query.dir'));
        expect(result.responses[0]?.headers.connection).toBe('close');
        expect(result).toMatchObject({ closed: true, rest: '' });
        expect(calls).toBe(0);
        expect(watched.denied[framework]).toHaveLength(1);
      });
    }
  }
});

describe('an upgrade pipelined behind a refused upload', () => {
  // A WebSocket server or a proxy listens on the same node:http server: the
  // request is one the server must not process either.
  const UPGRADES = [
    ['Upgrade', rawRequest('GET /ws HTTP/1.1', ['connection: upgrade', 'upgrade: websocket'])],
    ['CONNECT', rawRequest('CONNECT 127.0.0.1:1 HTTP/1.1')],
  ] as const;
  for (const framework of FRAMEWORKS) {
    for (const [kind, request] of UPGRADES) {
      it(`${framework}: ${kind} reaches no upgrade or connect listener`, async () => {
        const { server, port } = watched.apps[framework];
        let taken = 0;
        const take = (_req: unknown, socket: Socket) => {
          taken++;
          socket.destroy();
        };
        server.on('upgrade', take).on('connect', take);
        try {
          const result = await exchangeRaw(port, [
            Buffer.concat([upload('../x', Buffer.alloc(64 * 1024, 0x61)), request]),
          ]);
          expect(result.responses.map((r) => [r.status, r.headers.connection])).toEqual([
            [403, 'close'],
          ]);
          expect(result).toMatchObject({ closed: true, rest: '' });
          expect(taken).toBe(0);
        } finally {
          server.off('upgrade', take).off('connect', take);
        }
      });
    }
  }
});

/** The canonical paths an allowed request's handler answered with. */
const checked = (answer: RawResponse | undefined) =>
  (answer?.json as { pathgate?: unknown })?.pathgate;

describe('keep-alive: allowed, denied, allowed on one connection', () => {
  it.each(FRAMEWORKS)('%s: each gets its own decision, nothing carries over', async (framework) => {
    const session = await openSession(watched.apps[framework].port);
    try {
      const { result, calls } = await counting(framework, async () => [
        await session.send(get('/files/docs/a')),
        await session.send(get('/files/docs/../../etc/passwd')),
        await session.send(get('/q?path=docs/c')),
        await session.send(rawRequest('HEAD /files/docs/..%2F..%2Fsecret HTTP/1.1'), 'HEAD'),
        await session.send(get('/q')),
      ]);
      expect(result.map((r) => r.status)).toEqual([200, 403, 200, 403, 403]);
      expect(checked(result[0])).toMatchObject({ params: { '*': `${ROOT}/docs/a` }, query: {} });
      expect(result[1]?.json).toEqual(denied(OUT, 'params.*'));
      // The third request's paths are its own: no wildcard left over from the first.
      expect(checked(result[2])).toMatchObject({ params: {}, query: { path: `${ROOT}/docs/c` } });
      expect(result[4]?.json).toEqual(denied('missing-path', 'query.path'));
      expect(result.every((r) => r.headers.connection === 'keep-alive')).toBe(true);
      expect(calls).toBe(2);
      expect(session.closed).toBe(false);
    } finally {
      session.close();
    }
  });
});

/** Both adapters' exchanges for the same bytes, one connection each. */
async function onBoth(bytes: readonly Buffer[], methods?: readonly string[]) {
  const got = {} as Record<Framework, RawExchange & { calls: number }>;
  for (const framework of FRAMEWORKS) {
    const { result, calls } = await counting(framework, () =>
      exchangeRaw(watched.apps[framework].port, [Buffer.concat(bytes)], { methods }),
    );
    got[framework] = { ...result, calls };
  }
  return got;
}

describe('pipelined in one write', () => {
  const json = (from: string) => `{"from":"${from}","to":"uploads/b"}`;

  it('allowed and denied, bodies whole: answered in order, alike, each by its own decision', async () => {
    const got = await onBoth([
      get('/files/docs/1'),
      get('/files/../2'),
      move(json('../../etc/passwd')),
      move(json('uploads/a')),
      get('/q?path=../docs/5'),
      get('/files/docs/6', CLOSE),
    ]);
    expect(got.express.responses.map((r) => r.json)).toEqual(
      got.fastify.responses.map((r) => r.json),
    );
    const { responses, closed, rest, calls } = got.fastify;
    expect(responses.map((r) => r.status)).toEqual([200, 403, 403, 200, 403, 200]);
    expect(responses[2]?.json).toEqual(denied(OUT, 'body.from'));
    expect(checked(responses[3])).toMatchObject({ body: { from: `${ROOT}/uploads/a` } });
    expect(checked(responses[5])).toMatchObject({ params: { '*': `${ROOT}/docs/6` } });
    expect({ closed, rest }).toEqual({ closed: true, rest: '' });
    expect([calls, got.express.calls]).toEqual([3, 3]);
  });
});

describe('a denied filename, with a request pipelined behind the upload', () => {
  const evil = filePart('f', '../../evil.txt', 'data');
  const behind = get('/files/docs/after', CLOSE);

  it.each([
    ['small', evil],
    ['with 512 KiB of data', filePart('f', '../../evil.txt', 'a'.repeat(512 * 1024))],
  ])(
    '%s: one 403 from each, closing; the request behind it reaches no handler',
    async (_size, body) => {
      const got = await onBoth([upload('x', body), behind]);
      for (const framework of FRAMEWORKS) {
        const { responses, calls, closed, rest } = got[framework];
        expect(responses.map((r) => [r.status, r.headers.connection])).toEqual([[403, 'close']]);
        expect(responses[0]?.json).toEqual(denied(OUT, 'file f'));
        expect({ calls, closed, rest }).toEqual({ calls: 0, closed: true, rest: '' });
      }
    },
  );

  it('a part that is not a file (form-aaaa): read whole, so the connection stays and the next is answered', async () => {
    const odd = Buffer.from(evil.toString('latin1').replace('form-data', 'form-aaaa'), 'latin1');
    const got = await onBoth([upload('x', odd), behind]);
    expect(got.express.responses.map((r) => r.json)).toEqual(
      got.fastify.responses.map((r) => r.json),
    );
    const { responses, calls } = got.fastify;
    expect(responses.map((r) => [r.status, r.headers.connection])).toEqual([
      [403, 'keep-alive'],
      [200, 'close'],
    ]);
    expect(responses[0]?.json).toEqual(denied('missing-path', 'file f'));
    expect([calls, got.express.calls]).toEqual([1, 1]);
  });
});

/**
 * One connection's bytes, and the final answers both must give, in order:
 * a pathgate deny (its body compared whole), an allowed request (its
 * canonical paths compared across adapters), or the parser's or router's
 * refusal (the status only: each framework words its own).
 */
interface Framing {
  name: string;
  sent: readonly Buffer[];
  want: readonly (number | readonly [GuardDenyReason, string])[];
  methods?: readonly string[];
}

const NEXT = get('/files/docs/next', CLOSE);

/** One GET of `path`, on its own connection. */
const target = (name: string, path: string, want: Framing['want'][number]): Framing => ({
  name,
  sent: [get(path, CLOSE)],
  want: [want],
});

const FRAMINGS: readonly Framing[] = [
  {
    name: 'chunk extensions and a trailer, denied, then a request on the same connection',
    sent: [movePost([TE], chunked(MOVE_DENIED, ';ext="x"', 'x-trailer: 1\r\n')), NEXT],
    want: [[OUT, 'body.from'], 200],
  },
  {
    name: 'chunk extensions and a trailer, allowed',
    sent: [movePost([TE], chunked(MOVE_ALLOWED, ';a=1;b', 'x-trailer: 1\r\n')), NEXT],
    want: [200, 200],
  },
  // Request smuggling: both framings at once, or two lengths, are refused by
  // Node's parser (400, connection closed): nothing behind them is read.
  {
    name: 'Content-Length and Transfer-Encoding together',
    sent: [movePost(['content-length: 4', TE], chunked(MOVE_DENIED)), NEXT],
    want: [400],
  },
  {
    name: 'two equal Content-Length headers',
    sent: [
      movePost(
        [`content-length: ${MOVE_ALLOWED.length}`, `content-length: ${MOVE_ALLOWED.length}`],
        MOVE_ALLOWED,
      ),
      NEXT,
    ],
    want: [400],
  },
  {
    name: 'Transfer-Encoding other than chunked last',
    sent: [movePost(['transfer-encoding: chunked, identity'], chunked(MOVE_ALLOWED)), NEXT],
    want: [400],
  },
  {
    // No body, whatever the zeros: a deny leaves nothing unread, and keeps the connection.
    name: 'a denied upload whose Content-Length is 00, then a request on the same connection',
    sent: [
      rawRequest('POST /upload?dir=../x HTTP/1.1', [
        `content-type: ${MULTIPART_TYPE}`,
        'content-length: 00',
      ]),
      NEXT,
    ],
    want: [[OUT, 'query.dir'], 200],
  },
  {
    // A type no parser reads, and no body: nothing unchecked, so the optional spec passes, as with 0.
    name: 'a text body whose Content-Length is 00, on an optional body spec, then a request',
    sent: [
      rawRequest('POST /note HTTP/1.1', ['content-type: text/plain', 'content-length: 00']),
      NEXT,
    ],
    want: [200, 200],
  },
  {
    name: 'an obs-fold header line',
    sent: [get('/files/docs/a', 'x-a: 1', ' folded', CLOSE)],
    want: [400],
  },
  target('a raw space in the target', '/files/docs/a b', 400),
  target('raw UTF-8 bytes in the target', '/files/docs/\xc3\xa9', 400),
  {
    name: 'HTTP/1.1 without Host',
    sent: [Buffer.from('GET /files/docs/a HTTP/1.1\r\nconnection: close\r\n\r\n')],
    want: [400],
  },
  {
    name: 'HEAD to a guarded route, denied then allowed (no bodies)',
    sent: [
      rawRequest('HEAD /files/../etc HTTP/1.1'),
      rawRequest('HEAD /files/docs/a HTTP/1.1', [CLOSE]),
    ],
    want: [403, 200],
    methods: ['HEAD', 'HEAD'],
  },
  target('absolute form that climbs out', 'http://host/files/../x', [OUT, 'params.*']),
  target('absolute form, encoded slashes', 'http://host/files/..%2f..%2fetc', [OUT, 'params.*']),
  target('absolute form, inside', 'http://other.example/files/docs/x', 200),
  { name: 'OPTIONS * (no route)', sent: [rawRequest('OPTIONS * HTTP/1.1', [CLOSE])], want: [404] },
  target('a fragment after an allowed path is dropped', '/files/docs/a#/../../../etc', 200),
  target('a fragment does not hide a climb', '/files/../../etc#docs/a', [OUT, 'params.*']),
  target('a query does not hide a climb', '/files/../../etc?docs/a', [OUT, 'params.*']),
  target('// in the wildcard: absolute', '/files//etc/passwd', [OUT, 'params.*']),
  target('// before the route (no route)', '//files/docs/a', 404),
  target('raw backslashes', '/files/docs\\..\\..\\etc', [OUT, 'params.*']),
  target('encoded backslashes', '/files/docs%5c..%5c..%5cetc', [OUT, 'params.*']),
  target('a percent-encoded NUL', '/files/docs/a%00.txt', ['nul-byte', 'params.*']),
  // Not UTF-8: each router refuses to decode it (400), before pathgate.
  target('overlong UTF-8 dots (%c0%ae)', '/files/docs/%c0%ae%c0%ae/%c0%ae%c0%ae/etc', 400),
  target('a lone surrogate (%ed%a0%80)', '/files/docs/%ed%a0%80', 400),
  {
    name: 'HTTP/1.0, denied',
    sent: [rawRequest('GET /files/../etc HTTP/1.0')],
    want: [[OUT, 'params.*']],
  },
];

describe('framing and request targets: both adapters answer alike', () => {
  it.each(FRAMINGS)('$name', async ({ sent, want, methods }) => {
    const got = await onBoth(sent, methods);
    const allowed = want.filter((w) => w === 200).length;
    for (const framework of FRAMEWORKS) {
      const { responses, calls, rest } = got[framework];
      const statuses = want.map((w) => (typeof w === 'number' ? w : 403));
      expect(
        responses.map((r) => r.status),
        framework,
      ).toEqual(statuses);
      for (const [i, w] of want.entries()) {
        if (typeof w !== 'number') expect(responses[i]?.json).toEqual(denied(...w));
      }
      expect({ calls, rest }, framework).toEqual({ calls: allowed, rest: '' });
    }
    const paths = (framework: Framework) => got[framework].responses.map(checked);
    expect(paths('express')).toEqual(paths('fastify'));
  });

  // README, "Bodies no parser reads": Fastify takes only `0` as no body.
  it('no content type, Content-Length 00, an optional body spec: Fastify answers 415, Express passes it as 0', async () => {
    const note = (length: string) =>
      rawRequest('POST /note HTTP/1.1', [`content-length: ${length}`, CLOSE]);
    const statuses = async (length: string) => {
      const got = await onBoth([note(length)]);
      return FRAMEWORKS.map((framework) => got[framework].responses.map((r) => r.status));
    };
    expect(await statuses('0')).toEqual([[200], [200]]);
    expect(await statuses('00')).toEqual([[415], [200]]);
  });

  it('CONNECT: no route takes it; the connection is closed unanswered', async () => {
    const got = await onBoth([rawRequest('CONNECT 127.0.0.1:80 HTTP/1.1'), NEXT]);
    for (const framework of FRAMEWORKS) {
      expect(got[framework]).toMatchObject({ responses: [], closed: true, calls: 0, rest: '' });
    }
  });
});

/** Listener counts by event: what a per-request leak would grow. */
const listeners = (emitter: NodeJS.EventEmitter) =>
  Object.fromEntries(
    emitter.eventNames().map((name) => [String(name), emitter.listenerCount(name)]),
  );
const openDescriptors = () => readdirSync('/proc/self/fd').length;

describe('per-connection resources after 200 denied pipelined requests on keep-alive', () => {
  const DENIED = Array.from({ length: 200 }, (_, i) =>
    i % 2 === 0 ? get(`/files/../${i}`) : move(MOVE_DENIED),
  );

  it.each(FRAMEWORKS)('%s: no descriptor, listener or socket grows', async (framework) => {
    const { server, port } = watched.apps[framework];
    const descriptors = openDescriptors();
    const serverListeners = listeners(server);
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    const session = await openSession(port);
    try {
      const socket = await accepted;
      expect((await session.send(get('/files/../first'))).status).toBe(403);
      const perConnection = listeners(socket);
      const { result, calls } = await counting(framework, () => session.pipeline(DENIED));
      expect(result.map((r) => `${r.status} ${r.headers.connection}`)).toEqual(
        DENIED.map(() => '403 keep-alive'),
      );
      expect(calls).toBe(0);
      expect(listeners(socket)).toEqual(perConnection);
      expect(listeners(server)).toEqual(serverListeners);
      expect(await connections(server)).toBe(1);
    } finally {
      session.close();
    }
    expect(await eventually(async () => (await connections(server)) === 0)).toBe(true);
    expect(await eventually(() => openDescriptors() <= descriptors)).toBe(true);
  });
});

describe('a chunked body that never ends (slow loris)', () => {
  const started = (dir: string) =>
    rawRequest(`POST /upload?dir=${dir} HTTP/1.1`, [`content-type: ${MULTIPART_TYPE}`, TE]);
  const trickle = Array.from({ length: 10 }, () => '1\r\na\r\n');

  it.each(FRAMEWORKS)(
    '%s: on a denied route, 403, then the connection closes',
    async (framework) => {
      const { result, calls } = await counting(framework, () =>
        exchangeRaw(watched.apps[framework].port, [started('../x'), ...trickle], {
          gapMs: 100,
          timeoutMs: 6000,
        }),
      );
      expect(result.responses.map((r) => [r.status, r.headers.connection])).toEqual([
        [403, 'close'],
      ]);
      expect(result.responses[0]?.json).toEqual(denied(OUT, 'query.dir'));
      // The server half-closed after its answer (the client then closed), and
      // let go of the connection: no hang.
      expect(result.closed).toBe(true);
      expect(calls).toBe(0);
      const { server } = watched.apps[framework];
      expect(await eventually(async () => (await connections(server)) === 0)).toBe(true);
    },
  );

  it.each(FRAMEWORKS)(
    '%s: on a denied route, a client that ignores the FIN is cut off once the lingering ends',
    async (framework) => {
      const forever = Array.from({ length: 100 }, () => '1\r\na\r\n');
      const { result } = await counting(framework, () =>
        exchangeRaw(watched.apps[framework].port, [started('../x'), ...forever], {
          gapMs: 50,
          timeoutMs: 4500,
          halfOpen: true,
        }),
      );
      expect(result.responses.map((r) => r.status)).toEqual([403]);
      // Closed by the server (after lingerMs, 2 s), long before the 5 s of trickle end.
      expect(result.closed).toBe(true);
    },
  );

  it.each(FRAMEWORKS)(
    '%s: on an allowed route, no handler runs until the body ends; closing frees the connection',
    async (framework) => {
      const { server, port } = watched.apps[framework];
      const { result, calls } = await counting(framework, () =>
        exchangeRaw(port, [started('x'), ...trickle], { gapMs: 50, timeoutMs: 1000 }),
      );
      // Waiting on the body is the framework's to bound (requestTimeout), as the examples do.
      expect(result).toMatchObject({ responses: [], closed: false });
      expect(calls).toBe(0);
      expect(await eventually(async () => (await connections(server)) === 0)).toBe(true);
    },
  );
});

describe('lingerBytes, on a refused body no parser began to read', () => {
  // The query is refused before the multipart body is read. Node drops such a
  // body unseen once the answer is out, so lingering must begin to read it to
  // count it: else only lingerMs (a minute here) would end the connection.
  let apps: Apps;
  beforeAll(async () => {
    apps = await startApps({
      policy,
      routes: ROUTES,
      linger: { lingerMs: 60_000, lingerBytes: 16 * 1024 },
    });
  });
  afterAll(() => apps.close());

  it.each(FRAMEWORKS)(
    '%s: the connection closes once lingerBytes are read, long before lingerMs',
    async (framework) => {
      const head = rawRequest(`POST /upload?dir=../x HTTP/1.1`, [
        `content-type: ${MULTIPART_TYPE}`,
        `content-length: ${10 * 1024 * 1024}`,
      ]);
      const pieces = Array.from({ length: 200 }, () => Buffer.alloc(8 * 1024, 0x61));
      const result = await exchangeRaw(apps[framework].port, [head, ...pieces], {
        gapMs: 20,
        timeoutMs: 3000,
        halfOpen: true,
      });
      expect(result.responses.map((r) => [r.status, r.headers.connection])).toEqual([
        [403, 'close'],
      ]);
      expect(result.closed).toBe(true);
    },
  );
});

describe('a deny after the app sent an event stream, onDeny ending it, the body still arriving', () => {
  // The stream said keep-alive, so no header can say the connection closes:
  // the refused body must not be read whole, however long, nor a request
  // behind it served; the close lingers (lingerMs, 2 s), never a reset.
  let apps: Apps;
  beforeAll(async () => {
    apps = await startApps({ policy, routes: ROUTES, eventStream: true });
  });
  afterAll(() => apps.close());
  const denied = (length: number) =>
    rawRequest('GET /q?path=../x HTTP/1.1', [`content-length: ${length}`]);
  const ENDED = [[200, `${OPENED}${DENIED_END}`]];

  it.each(FRAMEWORKS)(
    '%s: its end, then the connection closes, the next request unanswered',
    async (framework) => {
      const got = await exchangeRaw(
        apps[framework].port,
        [denied(10), Buffer.concat([Buffer.alloc(10), get('/q?path=docs/a')])],
        { gapMs: 100 },
      );
      const answers = got.responses.map((r) => [r.status, r.text]);
      expect({ answers, closed: got.closed, rest: got.rest }).toEqual({
        answers: ENDED,
        closed: true,
        rest: '',
      });
    },
  );

  it.each(FRAMEWORKS)(
    '%s: a body sent on and on is read until lingerMs ends, then closed',
    async (framework) => {
      const began = Date.now();
      const got = await exchangeRaw(
        apps[framework].port,
        [denied(100_000), ...Array.from({ length: 100 }, () => 'a')],
        { gapMs: 50, timeoutMs: 4500, halfOpen: true },
      );
      const answers = got.responses.map((r) => [r.status, r.text]);
      expect({ answers, closed: got.closed }).toEqual({ answers: ENDED, closed: true });
      expect(Date.now() - began).toBeGreaterThan(1500);
    },
  );
});

describe('Expect: 100-continue on a route that denies', () => {
  it.each(FRAMEWORKS)(
    '%s: Node sends the 100 before pathgate runs; the 403 follows, no handler',
    async (framework) => {
      const { result, calls } = await counting(framework, () =>
        exchangeRaw(
          watched.apps[framework].port,
          [upload('../x', ALLOWED_FILE, 'expect: 100-continue').subarray(0, -ALLOWED_FILE.length)],
          { expect: 1 },
        ),
      );
      expect(result.responses.map((r) => [r.status, r.headers.connection])).toEqual([
        [100, undefined],
        [403, 'close'],
      ]);
      expect(calls).toBe(0);
    },
  );
});

describe('the examples, on their own sandboxes', () => {
  const example = (path: string, filename: string, data: string, ...headers: string[]) => {
    const body = filePart('file', filename, data);
    return rawRequest(
      `POST ${path} HTTP/1.1`,
      [
        `content-type: multipart/form-data; boundary=${BOUNDARY}`,
        `content-length: ${body.length}`,
        ...headers,
      ],
      body,
    );
  };
  const DENIED_FILE = denied(OUT, 'file file');
  /** Every file of the sandbox, with its content. */
  const snapshot = (root: string) =>
    Object.fromEntries(filesIn(root).map((file) => [file, readFileSync(join(root, file), 'utf8')]));
  /** The head, then the body: written apart, so the 100 can come between. */
  const headThenBody = (request: Buffer) => {
    const split = request.indexOf('\r\n\r\n') + 4;
    return [request.subarray(0, split), request.subarray(split)];
  };

  for (const app of EXAMPLES) {
    it(`${app.name}: nothing pipelined behind a refused upload is stored, deleted or answered`, async () => {
      const running = await start(app);
      try {
        const before = snapshot(running.root);
        const result = await exchangeRaw(running.port, [
          Buffer.concat([
            example('/api/upload', '../../evil.txt', 'a'.repeat(512 * 1024)),
            example('/api/upload', 'after.txt', 'after'),
            rawRequest('DELETE /files/uploads/hello.txt HTTP/1.1', [CLOSE]),
          ]),
        ]);
        expect(result.responses.map((r) => [r.status, r.headers.connection])).toEqual([
          [403, 'close'],
        ]);
        expect(result.responses[0]?.json).toEqual(DENIED_FILE);
        expect(result).toMatchObject({ closed: true, rest: '' });
        expect(snapshot(running.root)).toEqual(before);
      } finally {
        await running.stop();
      }
    });

    it(`${app.name}: Expect: 100-continue, a denied name stores nothing; an allowed one is stored`, async () => {
      const running = await start(app);
      try {
        const before = snapshot(running.root);
        const denying = example(
          '/api/upload',
          '../secret.txt',
          'overwritten',
          'expect: 100-continue',
        );
        const refused = await exchangeRaw(running.port, headThenBody(denying), {
          gapMs: 100,
          expect: 1,
        });
        expect(refused.responses.map((r) => r.status)).toEqual([100, 403]);
        expect(refused.responses[1]?.json).toEqual(DENIED_FILE);
        const allowed = example('/api/upload', 'new.txt', 'new', 'expect: 100-continue', CLOSE);
        const stored = await exchangeRaw(running.port, headThenBody(allowed), {
          gapMs: 100,
        });
        expect(stored.responses.map((r) => r.status)).toEqual([100, 201]);
        expect(snapshot(running.root)).toEqual({ ...before, 'uploads/new.txt': 'new' });
      } finally {
        await running.stop();
      }
    });
  }
});
