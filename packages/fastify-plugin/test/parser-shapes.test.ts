import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import {
  CONTAINER_TYPES,
  containerBodyRows,
  containerOf,
  containerQueryRows,
  got,
  gotNested,
  SEARCH_TYPE,
  searchParams,
} from '../../../test/container-parsers.js';
import { lazyValues } from '../../../test/lazy-values.js';
import pathgate, { type PathSpec } from '../src/index.js';
import { BOUNDARY, denied, multipartBody, newApp } from './helpers.js';

// The shapes Fastify's parsers give a value (router options, a custom
// querystring parser, content-type parsers), through the real router
// (`inject`). On an allow, the handler's own read of the value is what
// pathgate checked; an unreadable shape is a 403, never a 500.

const ROOT = '/srv/root';

/** What a request must get: the raw value the handler reads and the checked path(s), or a deny. */
type Want = { raw: unknown; checked?: string | string[] } | { reason: string; label: string };

interface Shapes {
  app: FastifyInstance;
  calls: () => number;
}

/** A body's own `p` (not a Buffer's, a string's or a stream's: none has one). */
const bodyP = (r: { body: unknown }) => (r.body as { p?: unknown } | undefined)?.p;

/**
 * An app with one route per source and content-type parsers of every
 * shape; each handler answers the raw value it reads (`request.query.p`,
 * `request.body.p`, …) and the path pathgate recorded.
 */
async function shapesApp(options: FastifyServerOptions = {}): Promise<Shapes> {
  const app = newApp(options);
  await app.register(pathgate, { root: ROOT, fs: ['docs/**'] });
  const parser = (type: string, parse: (text: string) => unknown) =>
    app.addContentTypeParser(type, { parseAs: 'string' }, (_req, body, done) =>
      done(null, parse(body as string)),
    );
  parser('text/x-lazy', lazyValues);
  parser('text/x-null-proto', (text) => Object.assign(Object.create(null), { p: text }));
  for (const type of CONTAINER_TYPES) parser(type, (text) => containerOf(type, text));
  app.addContentTypeParser('application/x-buffer', { parseAs: 'buffer' }, (_req, body, done) =>
    done(null, body),
  );
  app.addContentTypeParser('application/x-stream', (_req, payload, done) => done(null, payload));
  let calls = 0;
  const route = (url: string, paths: PathSpec[], raw: (request: never) => unknown) =>
    app.route({
      method: ['GET', 'POST'],
      url,
      config: { pathgate: { mode: 'read', paths } },
      handler: async (request) => {
        calls += 1;
        const info = request.pathgate;
        const records = info ? [info.params, info.query, info.body, info.headers] : [];
        return { raw: raw(request as never), checked: records.flatMap(Object.values)[0] };
      },
    });
  route('/q', [{ query: 'p' }], (r: { query: { p?: unknown } }) => r.query.p);
  route('/qg', [{ query: 'p' }], (r: { query: unknown }) => got(r.query));
  route('/qgo', [{ query: 'p', optional: true }], (r: { query: unknown }) => got(r.query));
  route('/bg', [{ body: 'p' }], (r: { body: unknown }) => got(r.body));
  route('/bgo', [{ body: 'p', optional: true }], (r: { body: unknown }) => got(r.body));
  route('/bn', [{ body: ['meta', 'p'], optional: true }], (r: { body: unknown }) =>
    gotNested(r.body),
  );
  // Beside params and headers specs: the container's view leaves the other parts to read.
  const beside: PathSpec[] = [
    { params: 'd', under: 'docs' },
    { headers: 'x-d', under: 'docs' },
  ];
  route('/bgx/:d', [...beside, { body: 'p' }], (r: { body: unknown }) => got(r.body));
  route('/b', [{ body: 'p' }], bodyP);
  route('/b0', [{ body: '0' }], (r: { body: unknown }) => String(r.body));
  // The body's own `__proto__` key (JSON.parse makes one), not its prototype.
  route('/proto', [{ body: ['__proto__', 'p'] }], (r: { body: object }) =>
    bodyP({ body: Object.getOwnPropertyDescriptor(r.body, '__proto__')?.value }),
  );
  route('/f/*', [{ params: '*' }], (r: { params: Record<string, string> }) => r.params['*']);
  route('/p/:p', [{ params: 'p' }], (r: { params: { p: string } }) => r.params.p);
  route('/re/:p(^[a-z./%]+$)', [{ params: 'p' }], (r: { params: { p: string } }) => r.params.p);
  route('/h', [{ headers: 'X-P' }], (r: { headers: Record<string, unknown> }) => r.headers['x-p']);
  return { app, calls: () => calls };
}

async function expectShape(
  shapes: Shapes,
  inject: {
    url: string;
    method?: 'GET' | 'POST';
    headers?: Record<string, string | string[]>;
    payload?: string;
  },
  want: Want,
): Promise<void> {
  const before = shapes.calls();
  const res = await shapes.app.inject(inject);
  if ('reason' in want) {
    expect(res.json()).toEqual(denied(want.label, want.reason));
    expect(res.statusCode).toBe(403);
    expect(shapes.calls()).toBe(before);
  } else {
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(want);
  }
}

describe('a parser whose value read throws', () => {
  it('a querystring parser: 403 not-a-string, not a 500', async () => {
    const shapes = await shapesApp({
      routerOptions: { querystringParser: lazyValues as (text: string) => Record<string, string> },
    });
    const bad = { reason: 'not-a-string', label: 'query.p' };
    await expectShape(shapes, { url: '/q?p=docs%2Fa%ZZ' }, bad);
    await expectShape(shapes, { url: '/q?p=docs%2Fa&p=%ZZ' }, bad);
    await expectShape(
      shapes,
      { url: '/q?p=docs%2Fa' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    );
  });

  it('a content-type parser: 403 not-a-string, not a 500', async () => {
    const shapes = await shapesApp();
    const lazy = (payload: string) => ({
      url: '/b',
      method: 'POST' as const,
      headers: { 'content-type': 'text/x-lazy' },
      payload,
    });
    await expectShape(shapes, lazy('p=%E0%A4%A'), { reason: 'not-a-string', label: 'body.p' });
    await expectShape(shapes, lazy('p=docs%2Fa'), { raw: 'docs/a', checked: `${ROOT}/docs/a` });
  });

  // As on Express (a lazy parser's req.body): a 500 before, with the getter's message.
  it.each([
    ['query', '/qgo?p=docs%2Fa'],
    ['body', '/bgo'],
  ] as const)(
    'a hook that makes request.%s a getter that throws: 403 not-a-string, not a 500',
    async (part, url) => {
      const shapes = await shapesApp();
      shapes.app.addHook('preValidation', async (request) => {
        Object.defineProperty(request, part, {
          get() {
            throw undefined;
          },
        });
      });
      const post = {
        url,
        method: 'POST' as const,
        headers: { 'content-type': 'application/json' },
        payload: '{"p":"docs/a"}',
      };
      await expectShape(shapes, post, { reason: 'not-a-string', label: `${part}.p` });
    },
  );

  // A 500 before, in both modes: the check of the body for unchecked file parts read it unguarded.
  // `late`: another plugin's onRoute hook took pathgate's onRequest away, so the check starts late.
  it.each([
    [false, false, 403],
    [true, false, 200],
    [false, true, 403],
    [true, true, 200],
  ])(
    'on a file route, a multipart body a hook made a getter that throws (reportOnly %s, late %s): %s',
    async (reportOnly, late, status) => {
      const app = newApp();
      await app.register(pathgate, { root: ROOT, fs: ['rw:docs/**'], reportOnly });
      if (late) {
        app.addHook('onRoute', (route) => {
          route.onRequest = [];
        });
      }
      await app.register(multipart, { attachFieldsToBody: true });
      app.addHook('preValidation', async (request) => {
        Object.defineProperty(request, 'body', {
          get() {
            throw new Error('no body here');
          },
        });
      });
      const upload = { mode: 'write', paths: [{ file: 'f', under: 'docs' }] } as const;
      app.post('/up', { config: { pathgate: upload } }, async () => ({ handled: true }));
      const res = await app.inject({
        method: 'POST',
        url: '/up',
        headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
        payload: multipartBody([{ disposition: 'name="f"; filename="a.txt"', data: 'x' }]),
      });
      expect([res.statusCode, res.json()]).toEqual([
        status,
        reportOnly ? { handled: true } : denied('file', 'unexpected-file'),
      ]);
    },
  );

  // Only the declared part is read: a throwing body beside a container query
  // left the query unviewed, and an optional spec skipped what .get() read.
  it('a body getter that throws, on a query-only route: the container query is still checked', async () => {
    const shapes = await shapesApp({ routerOptions: { querystringParser: searchParams as never } });
    shapes.app.addHook('preValidation', async (request) => {
      Object.defineProperty(request, 'body', {
        get() {
          throw new Error('no body here');
        },
      });
    });
    const out = { reason: 'path-not-in-allowlist', label: 'query.p' };
    await expectShape(shapes, { url: '/qgo?p=..%2F..%2Fetc%2Fpasswd' }, out);
    await expectShape(
      shapes,
      { url: '/qgo?p=docs%2Fa' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    );
  });
});

const one = (name: string) => ({ raw: name, checked: `${ROOT}/${name}` });
const OUT = 'path-not-in-allowlist';

/** Routes `/old/…` to `/f/…`, before Fastify's router reads the URL. */
const REWRITE: FastifyServerOptions = {
  rewriteUrl: (req) => (req.url ?? '/').replace(/^\/old\//, '/f/'),
};

/**
 * Router options go under `routerOptions` (at the top level they are
 * deprecated, FSTDEP022). Fastify 5.12 reads `useSemicolonDelimiter` there,
 * but its `FastifyRouterOptions` type lacks the key.
 */
const SEMICOLONS = { routerOptions: { useSemicolonDelimiter: true } } as FastifyServerOptions;

describe('router options: the handler reads the param pathgate checked', () => {
  type Row = readonly [string, FastifyServerOptions, string, Want];
  const ROWS: readonly Row[] = [
    [
      'ignoreDuplicateSlashes: // inside',
      { routerOptions: { ignoreDuplicateSlashes: true } },
      '/f/docs//a',
      one('docs/a'),
    ],
    [
      'ignoreDuplicateSlashes: // before the route',
      { routerOptions: { ignoreDuplicateSlashes: true } },
      '//p//docs',
      one('docs'),
    ],
    [
      'ignoreDuplicateSlashes: // at the wildcard start is relative',
      { routerOptions: { ignoreDuplicateSlashes: true } },
      '/f//docs/a',
      one('docs/a'),
    ],
    [
      'without it, // at the wildcard start is absolute',
      {},
      '/f//docs/a',
      { reason: OUT, label: 'params.*' },
    ],
    [
      'ignoreTrailingSlash',
      { routerOptions: { ignoreTrailingSlash: true } },
      '/p/docs/',
      one('docs'),
    ],
    [
      'ignoreTrailingSlash: a wildcard loses it',
      { routerOptions: { ignoreTrailingSlash: true } },
      '/f/docs/a/',
      one('docs/a'),
    ],
    [
      'caseSensitive false: the param keeps its case',
      { routerOptions: { caseSensitive: false } },
      '/P/docs',
      one('docs'),
    ],
    [
      'caseSensitive false: a DOCS param is another path',
      { routerOptions: { caseSensitive: false } },
      '/P/DOCS',
      { reason: OUT, label: 'params.p' },
    ],
    ['useSemicolonDelimiter: ; starts the query', SEMICOLONS, '/q;p=docs/a', one('docs/a')],
    ['useSemicolonDelimiter: a param ends at ;', SEMICOLONS, '/p/docs;p=..%2Fx', one('docs')],
    ['without it, ; is part of the param', {}, '/p/docs;p=x', { reason: OUT, label: 'params.p' }],
    ['rewriteUrl: the params of the URL it gives', REWRITE, '/old/docs/a', one('docs/a')],
    [
      'rewriteUrl: those climb out',
      REWRITE,
      '/old/..%2F..%2Fx',
      { reason: OUT, label: 'params.*' },
    ],
    ['a regex param', {}, '/re/docs%2Fa', one('docs/a')],
    ['a regex param climbs out', {}, '/re/..%2F..%2Fx', { reason: OUT, label: 'params.p' }],
  ];
  it.each(ROWS)('%s: %s', async (_name, options, url, want) => {
    await expectShape(await shapesApp(options), { url }, want);
  });
});

describe('a custom querystring parser', () => {
  const P = 'query.p';
  const ROWS: readonly (readonly [string, (text: string) => unknown, Want])[] = [
    ['an inherited p', () => Object.create({ p: 'docs/a' }), { reason: 'missing-path', label: P }],
    ['a number', () => ({ p: 42 }), { reason: 'not-a-string', label: P }],
    ['a nested list', () => ({ p: [['docs/a']] }), { reason: 'not-a-string', label: P }],
    [
      'a list',
      () => ({ p: ['docs/a', 'docs/b'] }),
      { raw: ['docs/a', 'docs/b'], checked: [`${ROOT}/docs/a`, `${ROOT}/docs/b`] },
    ],
    [
      'a null-prototype object',
      () => Object.assign(Object.create(null), { p: 'docs/a' }),
      one('docs/a'),
    ],
  ];
  it.each(ROWS)('%s', async (_name, parse, want) => {
    const querystringParser = parse as (text: string) => Record<string, string>;
    await expectShape(
      await shapesApp({ routerOptions: { querystringParser } }),
      { url: '/q?p=x' },
      want,
    );
  });
});

describe('a container as request.query: its values are checked, as the handler gets them', () => {
  it.each(containerQueryRows(ROOT))('%s: %s', async (_name, url, parse, want) => {
    const querystringParser = parse as (text: string) => Record<string, string>;
    await expectShape(await shapesApp({ routerOptions: { querystringParser } }), { url }, want);
  });
});

describe('a container as request.body: its values are checked, optional specs too', () => {
  it.each(containerBodyRows(ROOT))('%s: %s %s', async (_name, url, type, payload, want) => {
    const inject = { url, method: 'POST' as const, headers: { 'content-type': type }, payload };
    await expectShape(await shapesApp(), inject, want);
  });

  it('beside params and headers specs: those are checked too', async () => {
    const headers = { 'content-type': SEARCH_TYPE, 'x-d': 'b' };
    const inject = { url: '/bgx/a', method: 'POST' as const, headers, payload: 'p=docs/c' };
    await expectShape(await shapesApp(), inject, { raw: 'docs/c', checked: `${ROOT}/docs/a` });
  });
});

describe('content-type parsers and JSON poisoning settings', () => {
  const post = (url: string, type: string, payload: string) => ({
    url,
    method: 'POST' as const,
    headers: { 'content-type': type },
    payload,
  });
  type Row = readonly [string, FastifyServerOptions, ReturnType<typeof post>, Want];
  const ignore = { onProtoPoisoning: 'ignore', onConstructorPoisoning: 'ignore' } as const;
  const json = 'application/json';
  const ROWS: readonly Row[] = [
    [
      'a Buffer has no p',
      {},
      post('/b', 'application/x-buffer', 'docs/a'),
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'a Buffer index is a byte',
      {},
      post('/b0', 'application/x-buffer', 'docs/a'),
      { reason: 'not-a-string', label: 'body.0' },
    ],
    [
      'a string has no p',
      {},
      post('/b', 'text/plain', 'docs/a'),
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'a stream has no p',
      {},
      post('/b', 'application/x-stream', 'docs/a'),
      { reason: 'missing-path', label: 'body.p' },
    ],
    ['a null-prototype object', {}, post('/b', 'text/x-null-proto', 'docs/a'), one('docs/a')],
    [
      'a null-prototype object, climbing',
      {},
      post('/b', 'text/x-null-proto', '../x'),
      { reason: OUT, label: 'body.p' },
    ],
    [
      'JSON: the last duplicate key wins, for both',
      {},
      post('/b', json, '{"p":"../x","p":"docs/a"}'),
      one('docs/a'),
    ],
    [
      'ignore: __proto__ is an own key, not p',
      ignore,
      post('/b', json, '{"__proto__":{"p":"docs/a"}}'),
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'ignore: a selector through __proto__',
      ignore,
      post('/proto', json, '{"__proto__":{"p":"docs/a"}}'),
      one('docs/a'),
    ],
    [
      'ignore: through __proto__, climbing',
      ignore,
      post('/proto', json, '{"__proto__":{"p":"../x"}}'),
      { reason: OUT, label: 'body.__proto__.p' },
    ],
    [
      'ignore: constructor.prototype',
      ignore,
      post('/b', json, '{"constructor":{"prototype":{"p":"docs/a"}}}'),
      { reason: 'missing-path', label: 'body.p' },
    ],
  ];
  it.each(ROWS)('%s', async (_name, options, inject, want) => {
    await expectShape(await shapesApp(options), inject, want);
  });
});

describe('a repeated header', () => {
  it('is one value, as Node joins it: the one the handler reads', async () => {
    const shapes = await shapesApp();
    const twice = (second: string) => ({ url: '/h', headers: { 'x-p': ['docs/a', second] } });
    await expectShape(shapes, twice('docs/b'), {
      raw: 'docs/a, docs/b',
      checked: `${ROOT}/docs/a, docs/b`,
    });
    await expectShape(shapes, twice('../../x'), {
      raw: 'docs/a, ../../x',
      checked: `${ROOT}/docs/x`,
    });
  });
});
