import { Readable } from 'node:stream';
import { denyBody, type GuardDenyReason } from '@pathgate/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  type Apps,
  BOUNDARY,
  type Got,
  MULTIPART_TYPE,
  multipartBody,
  type Route,
  type Sent,
  send,
  startApps,
} from './apps.js';
import { searchParams } from './container-parsers.js';
import { CASES, type Case, policy, ROOT, ROUTES } from './parity-cases.js';
import { withoutUnhandled } from './unhandled.js';

// One route table and one policy → a Fastify app and an Express app. The
// same requests, over real HTTP on 127.0.0.1, must get the same status and
// the same JSON body from both: the 403 body for every deny, and the same
// canonical paths (request.pathgate / req.pathgate) for every allowed one.

let apps: Apps;

beforeAll(async () => {
  apps = await startApps({ policy, routes: ROUTES });
});

afterAll(async () => {
  await apps.close();
});

describe('Fastify and Express answer alike', () => {
  it.each(CASES)('%s', async (_name, sent, expected) => {
    const [fromFastify, fromExpress] = await Promise.all([
      send(apps.fastify.port, sent),
      send(apps.express.port, sent),
    ]);
    expect(fromExpress).toEqual(fromFastify);
    if (expected === 'allow') {
      expect(fromFastify.status).toBe(200);
      expect(fromFastify.body).toMatchObject({ pathgate: { mode: expect.any(String) } });
    } else {
      const [reason, label] = expected;
      expect(fromFastify).toEqual({ status: 403, body: denyBody({ reason, label }) });
    }
  });
});

describe('where the frameworks read a request differently (README, "The same request")', () => {
  const both = (sent: Sent) =>
    Promise.all([send(apps.fastify.port, sent), send(apps.express.port, sent)]);
  const checked = (path: string) => ({
    status: 200,
    body: { pathgate: expect.objectContaining({ query: { path } }) },
  });
  /** Runs `check` on apps of their own with `routes`, closed after; its `onBoth` sends to each. */
  async function withRoutes(
    routes: readonly Route[],
    check: (onBoth: (sent: Sent) => Promise<Got[]>) => Promise<void>,
  ) {
    const own = await startApps({ policy, routes });
    try {
      await check((sent) =>
        Promise.all([send(own.fastify.port, sent), send(own.express.port, sent)]),
      );
    } finally {
      await own.close();
    }
  }

  it('a query escape that is not UTF-8: kept as written by Fastify, U+FFFD in Express', async () => {
    const [fromFastify, fromExpress] = await both({ path: '/q?path=docs/%FF' });
    expect(fromFastify).toEqual(checked(`${ROOT}/docs/%FF`));
    expect(fromExpress).toEqual(checked(`${ROOT}/docs/\uFFFD`));
  });

  it('a raw # ends the query for Express; Fastify reads on, the # a character', async () => {
    const [fromFastify, fromExpress] = await both({ path: '/q?path=docs/a#&path=../x' });
    expect(fromFastify).toEqual({
      status: 403,
      body: denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }),
    });
    expect(fromExpress).toEqual(checked(`${ROOT}/docs/a`));
  });

  it("a key after the 1000th: Express's parser drops it, so an optional spec is skipped", async () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `k${i}=1`).join('&');
    const [fromFastify, fromExpress] = await both({ path: `/opt?${keys}&a=../x` });
    expect(fromFastify).toEqual({
      status: 403,
      body: denyBody({ reason: 'path-not-in-allowlist', label: 'query.a' }),
    });
    expect(fromExpress).toEqual({
      status: 200,
      body: { pathgate: expect.objectContaining({ query: {} }) },
    });
  });

  it('a body no parser reads: Fastify reads text as a string or answers 415, Express denies it unread', async () => {
    const missing = { status: 403, body: denyBody({ reason: 'missing-path', label: 'body.from' }) };
    const body = Buffer.from('{"from":"uploads/a","to":"uploads/b"}');
    const text = await both({
      method: 'POST',
      path: '/move',
      headers: { 'content-type': 'text/plain' },
      body,
    });
    expect(text).toEqual([missing, missing]);
    const [fromFastify, fromExpress] = await both({
      method: 'POST',
      path: '/move',
      headers: { 'content-type': 'application/xml' },
      body,
    });
    expect([fromFastify.status, fromExpress]).toEqual([415, missing]);
  });

  it("a Content-Type multer's type-is cannot parse: Fastify reads the upload, Express denies its specs, optional ones too", async () => {
    const routes: Route[] = [
      { method: 'POST', url: '/f', mode: 'write', paths: [{ file: 'f', under: 'uploads' }] },
      {
        method: 'POST',
        url: '/fo',
        mode: 'write',
        paths: [{ file: 'f', under: 'uploads', optional: true }],
      },
    ];
    await withRoutes(routes, async (onBoth) => {
      const body = multipartBody(['name="f"; filename="a.txt"']);
      for (const path of ['/f', '/fo']) {
        const [fromFastify, fromExpress] = await onBoth({
          method: 'POST',
          path,
          headers: { 'content-type': `${MULTIPART_TYPE};` },
          body,
        });
        expect(fromFastify?.body).toMatchObject({
          pathgate: { files: [{ field: 'f', path: `${ROOT}/uploads/a.txt` }] },
        });
        expect(fromExpress).toEqual({
          status: 403,
          body: denyBody({ reason: 'missing-path', label: 'file f' }),
        });
      }
    });
  });

  it("a Referrer header: Express's req.get('referer') reads it, so the Express gate checks it; Fastify's request.headers.referer is absent", async () => {
    const routes: Route[] = [
      { method: 'GET', url: '/ref', mode: 'read', paths: [{ headers: 'referer' }] },
    ];
    await withRoutes(routes, async (onBoth) => {
      const [fromFastify, fromExpress] = await onBoth({
        path: '/ref',
        headers: { referrer: 'docs/a' },
      });
      expect(fromFastify).toEqual({
        status: 403,
        body: denyBody({ reason: 'missing-path', label: 'headers.referer' }),
      });
      expect(fromExpress).toEqual({
        status: 200,
        body: { pathgate: expect.objectContaining({ headers: { referer: `${ROOT}/docs/a` } }) },
      });
      // A Referer beside an empty Referrer: both check the Referer alone, and allow it.
      const beside = await onBoth({ path: '/ref', headers: { referer: 'docs/a', referrer: '' } });
      expect(beside).toEqual([fromExpress, fromExpress]);
    });
  });

  it("a GET body: Fastify reads none, so a body spec finds nothing; Express's parser reads and checks it", async () => {
    const routes: Route[] = [
      { method: 'GET', url: '/find', mode: 'read', paths: [{ body: 'path' }] },
    ];
    await withRoutes(routes, async (onBoth) => {
      const answers = await onBoth({ path: '/find', json: '{"path":"docs/a"}' });
      expect(answers).toEqual([
        { status: 403, body: denyBody({ reason: 'missing-path', label: 'body.path' }) },
        {
          status: 200,
          body: { pathgate: expect.objectContaining({ body: { path: `${ROOT}/docs/a` } }) },
        },
      ]);
    });
  });

  it.each([
    ['an empty wildcard', '/files/', [403, 404]],
    ['another case', '/DOC/report.pdf', [404, 200]],
    ['a trailing slash', '/doc/report.pdf/', [404, 200]],
    ['a parameter over maxParamLength', `/doc/${'a'.repeat(101)}`, [414, 200]],
    ['an absolute form, neither http nor https', 'ftp://x/files/docs/a', [400, 200]],
    ['an absolute form with no host', 'http:///files/docs/a', [400, 200]],
    ['an absolute form with a port out of range', 'http://x:99999/files/docs/a', [400, 200]],
  ])('the routers: %s (%s)', async (_name, path, [fastify, express]) => {
    const [fromFastify, fromExpress] = await both({ path });
    expect([fromFastify.status, fromExpress.status]).toEqual([fastify, express]);
  });
});

describe('a query parser and a JSON body parser that hand over containers', () => {
  /** A JSON object as a Map of its keys, as a custom body parser might give it. */
  const mapOf = (parsed: unknown) =>
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? new Map(Object.entries(parsed))
      : parsed;
  let containers: Apps;
  beforeAll(async () => {
    containers = await startApps({
      policy,
      routes: ROUTES,
      queryParser: searchParams,
      jsonBody: mapOf,
    });
  });
  afterAll(() => containers.close());
  const both = (sent: Sent) =>
    Promise.all([send(containers.fastify.port, sent), send(containers.express.port, sent)]);

  const QUERY_OR_BODY = CASES.filter(([, sent]) =>
    /^\/(q|opt|move|deep|under|list)\b/.test(sent.path),
  );
  it.each(QUERY_OR_BODY)('%s: the answer plain records get, from both', async (_name, sent) => {
    const plain = await send(apps.fastify.port, sent);
    expect(await both(sent)).toEqual([plain, plain]);
  });

  // Skipped before: the handler's .get('a') read ../../etc/passwd, never checked.
  it.each([
    ['/opt?a=..%2F..%2Fetc%2Fpasswd', 'query.a'],
    ['/opt?b=docs/b&b=..%2F..%2Fetc%2Fpasswd', 'query.b'],
  ])('an optional spec checks every value .getAll() reads: %s', async (path, label) => {
    const denied = { status: 403, body: denyBody({ reason: 'path-not-in-allowlist', label }) };
    expect(await both({ path })).toEqual([denied, denied]);
  });
});

/** A denied query: the one request the tests of a failing onDeny send unless told. */
const DENIED_QUERY: Case = [
  'a denied query',
  { path: '/q?path=../x' },
  ['path-not-in-allowlist', 'query.path'],
];

/**
 * Both apps under `onDeny`, the denied `cases` sent to each: the default
 * 403, alike from both, and the hook's failure logged (Express's default
 * log is console.warn), never sent.
 */
async function expectDefault403Logged(
  onDeny: () => unknown,
  cases: readonly Case[] = [DENIED_QUERY],
): Promise<void> {
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
  const odd = await startApps({ policy, routes: ROUTES, onDeny });
  try {
    for (const [, sent, expected] of cases) {
      const [fromFastify, fromExpress] = await Promise.all([
        send(odd.fastify.port, sent),
        send(odd.express.port, sent),
      ]);
      const [reason, label] = expected as readonly [GuardDenyReason, string];
      expect(fromFastify).toEqual({ status: 403, body: denyBody({ reason, label }) });
      expect(fromExpress).toEqual(fromFastify);
    }
    expect(warn.mock.calls.some(([message]) => String(message).includes('onDeny failed'))).toBe(
      true,
    );
  } finally {
    await odd.close();
    warn.mockRestore();
  }
}

describe('an onDeny that throws', () => {
  it('both log it and send the default 403, never the error', () =>
    expectDefault403Logged(
      () => {
        throw new Error('audit sink down at /srv/root');
      },
      CASES.filter(([, , e]) => e !== 'allow').slice(0, 8),
    ));
});

describe('an onDeny whose body JSON cannot write, or must not', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const throwing = {
    toJSON() {
      throw new Error('no JSON for /srv/root');
    },
  };
  it.each([
    ['a cycle', () => cyclic],
    ['a BigInt', () => ({ n: 1n })],
    ['a throwing toJSON', () => throwing],
    ['bytes (a page to send), which JSON writes as numbers', () => Buffer.from('<p>denied</p>')],
    ['a typed array', () => new Uint16Array([1, 2])],
    ['an ArrayBuffer, which JSON writes as {}', () => new ArrayBuffer(8)],
    ['a web Response', () => new Response('<p>denied</p>')],
    ['a Blob', () => new Blob(['<p>denied</p>'])],
    ['a web ReadableStream', () => new ReadableStream()],
    ['a Map, which JSON writes as {}', () => new Map([['reason', 'denied']])],
    ['a Headers, which JSON writes as {}', () => new Headers({ 'x-reason': 'denied' })],
    ['an Error, which JSON writes as {}', () => new Error('denied')],
  ] as const)('%s: both log it and send the default 403, never the error', (_name, body) =>
    expectDefault403Logged(body),
  );

  it('a stream (a page to send): both log it, let it go, and send the default 403, not its internals', async () => {
    // A file stream's JSON names its file, and the file stays open: one descriptor per deny.
    const streams: Readable[] = [];
    await expectDefault403Logged(() => {
      const stream = Readable.from(['<p>denied</p>']);
      streams.push(stream);
      return stream;
    });
    expect(streams.map((stream) => stream.destroyed)).toEqual([true, true]);
  });
});

describe('a multipart field longer than limits.fieldSize', () => {
  const LIMIT = 16;
  let limited: Apps;
  let handled = 0;
  beforeAll(async () => {
    limited = await startApps({
      policy,
      routes: ROUTES,
      multipartLimits: { fieldSize: LIMIT },
      onHandle: () => {
        handled++;
      },
    });
  });
  afterAll(() => limited.close());

  /** `/file-and-body`: the body spec `d`, then the file `f`. */
  const upload = (d: string): Sent => ({
    method: 'POST',
    path: '/file-and-body',
    headers: { 'content-type': MULTIPART_TYPE },
    body: Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="d"\r\n\r\n${d}\r\n` +
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n\r\nx\r\n` +
        `--${BOUNDARY}--\r\n`,
    ),
  });
  const both = (sent: Sent) =>
    Promise.all([send(limited.fastify.port, sent), send(limited.express.port, sent)]);

  it.each([
    ['one byte over: 413, never checked cut', 'uploads/'.padEnd(LIMIT + 1, 'a')],
    ['a traversal cut short: 413, not the deny of the cut text', 'uploads/../../etc/passwd'],
  ])('%s', async (_name, d) => {
    handled = 0;
    const [fromFastify, fromExpress] = await both(upload(d));
    expect([fromFastify.status, fromExpress.status]).toEqual([413, 413]);
    expect(handled).toBe(0);
  });

  it("at the limit: neither cuts it (a part object under Fastify's `true`: not-a-string)", async () => {
    const [fromFastify, fromExpress] = await both(upload('uploads/'.padEnd(LIMIT, 'a')));
    expect([fromFastify.status, fromExpress.status]).toEqual([403, 200]);
    expect(fromFastify.body).toEqual(denyBody({ reason: 'not-a-string', label: 'body.d' }));
  });
});

describe("a query or body an app's middleware or hook made a getter that throws", () => {
  const MOVE: Sent = { method: 'POST', path: '/move', json: '{"from":"a","to":"b"}' };
  const ROWS = [
    ['query', { path: '/q?path=docs/a' }, 'query.path'],
    ['body', MOVE, 'body.from'],
  ] as const;
  it.each(ROWS)('the %s: both deny not-a-string, never a 500', async (part, sent, label) => {
    const odd = await startApps({ policy, routes: ROUTES, unreadable: part });
    try {
      const denied = { status: 403, body: denyBody({ reason: 'not-a-string', label }) };
      expect(
        await Promise.all([send(odd.fastify.port, sent), send(odd.express.port, sent)]),
      ).toEqual([denied, denied]);
    } finally {
      await odd.close();
    }
  });

  it.each(ROWS)(
    'the %s, report-only: both let the request through, the value unrecorded',
    async (part, sent) => {
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
      const odd = await startApps({ policy, routes: ROUTES, unreadable: part, reportOnly: true });
      try {
        const answers = await Promise.all([
          send(odd.fastify.port, sent),
          send(odd.express.port, sent),
        ]);
        const through = {
          status: 200,
          body: { pathgate: expect.objectContaining({ [part]: {} }) },
        };
        expect(answers).toEqual([through, through]);
      } finally {
        await odd.close();
        warn.mockRestore();
      }
    },
  );
});

describe("a log that fails (Express's `log` option, Fastify's `loggerInstance`)", () => {
  const fails: readonly (readonly [string, () => unknown])[] = [
    [
      'throws',
      () => {
        throw new Error('log sink down');
      },
    ],
    ['rejects', async () => Promise.reject(new Error('log sink down'))],
  ];
  const throwing = () => {
    throw new Error('metrics down');
  };
  const sent: Sent = { path: '/q?path=../x' };
  const through = { status: 200, body: { pathgate: expect.objectContaining({ query: {} }) } };
  const denied = {
    status: 403,
    body: denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }),
  };
  const ROWS = fails.flatMap(
    ([how, failingLog]) =>
      [
        [`${how}, a deny`, { failingLog }, denied],
        [`${how}, a deny whose onDeny throws`, { failingLog, onDeny: throwing }, denied],
        [`${how}, report-only`, { failingLog, reportOnly: true }, through],
        [
          `${how}, report-only, onDeny throws`,
          { failingLog, reportOnly: true, onDeny: throwing },
          through,
        ],
      ] as const,
  );
  it.each(ROWS)('it %s: both answer as with a working log', async (_name, options, want) => {
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    const odd = await startApps({ policy, routes: ROUTES, ...options });
    try {
      const answers = await withoutUnhandled(() =>
        Promise.all([send(odd.fastify.port, sent), send(odd.express.port, sent)]),
      );
      expect(answers).toEqual([want, want]);
    } finally {
      await odd.close();
      stderr.mockRestore();
    }
  });
});
