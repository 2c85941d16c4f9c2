import type http from 'node:http';
import { denyBody, type GuardDenyReason, type PathSpec } from '@pathgate/core';
import express, { type Express, type Request, type RequestHandler } from 'express';
import { describe, expect, it } from 'vitest';
import {
  containerBodyRows,
  containerOf,
  containerQueryRows,
  got,
  gotNested,
  SEARCH_TYPE,
} from '../../../test/container-parsers.js';
import { lazyValues } from '../../../test/lazy-values.js';
import { pathgate } from '../src/index.js';
import { countingErrorHandler, request, withServed } from './helpers.js';

// The shapes Express's parsers give a value (query parser settings, a
// custom parser, body parsers, repeated headers, regex routes), over real
// HTTP. On an allow, the value the handler reads itself (`req.query.p`) is
// what pathgate checked, element by element for a list; a shape that is
// not a path is a 403, never an error for the error handler (a 500).

const ROOT = '/srv/root';

/** What a request must get: the raw value the handler reads and the checked path(s), or a deny. */
type Want =
  | { raw: unknown; checked?: string | string[] }
  | { reason: GuardDenyReason; label: string };

/** A route: its specs, the middleware before the gate, and what its handler reads itself. */
interface Route {
  spec: PathSpec | readonly PathSpec[];
  before?: RequestHandler[];
  raw: (req: Request) => unknown;
}

const query = (req: Request) => req.query.p;
const body = (req: Request) => (req.body as { p?: unknown }).p;

/** Reads the body's text, then hands it to `use` (a parser of its own) before `next()`. */
const bodyText =
  (use: (req: Request, text: string) => void): RequestHandler =>
  (req, _res, next) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      use(req, Buffer.concat(chunks).toString());
      next();
    });
  };

/**
 * A lazy JSON parser: it reads the body, then makes `req.body` a getter
 * that parses it on each read, so a malformed body throws there, as
 * Express 5's own `req.query` getter does on a bad escape.
 */
const lazyJson = bodyText((req, text) => {
  Object.defineProperty(req, 'body', { configurable: true, get: () => JSON.parse(text) });
});

/** A body parser whose `req.body` is a container (`containerOf`). */
const containerBody = bodyText((req, text) => {
  req.body = containerOf(req.headers['content-type'], text);
});

const ROUTES: Record<string, Route> = {
  '/q': { spec: { query: 'p' }, raw: query },
  '/qo': { spec: { query: 'p', optional: true }, raw: query },
  '/qg': { spec: { query: 'p' }, raw: (req) => got(req.query) },
  '/qgo': { spec: { query: 'p', optional: true }, raw: (req) => got(req.query) },
  '/bg': { spec: { body: 'p' }, before: [containerBody], raw: (req) => got(req.body) },
  '/bgo': {
    spec: { body: 'p', optional: true },
    before: [containerBody],
    raw: (req) => got(req.body),
  },
  '/bn': {
    spec: { body: ['meta', 'p'], optional: true },
    before: [containerBody],
    raw: (req) => gotNested(req.body),
  },
  // Beside params and headers specs: the container's view leaves the other parts to read.
  '/bgx/:d': {
    spec: [{ params: 'd', under: 'docs' }, { headers: 'x-d', under: 'docs' }, { body: 'p' }],
    before: [containerBody],
    raw: (req) => got(req.body),
  },
  '/h': { spec: { headers: 'X-P' }, raw: (req) => req.headers['x-p'] },
  '/cookie': { spec: { headers: 'set-cookie' }, raw: (req) => req.headers['set-cookie'] },
  // `req.get()` answers a Referrer header for referer and the other way round.
  '/referer': { spec: { headers: 'Referer' }, raw: (req) => req.get('referer') },
  '/referrer': { spec: { headers: 'referrer' }, raw: (req) => req.get('referrer') },
  // Beside a spec of another name: the route still reads both names.
  '/referer-beside': {
    spec: [{ headers: 'x-p', optional: true }, { headers: 'referer' }],
    raw: (req) => req.get('referer'),
  },
  '/json': { spec: { body: 'p' }, before: [express.json()], raw: body },
  '/json-any': { spec: { body: 'p' }, before: [express.json({ strict: false })], raw: body },
  '/form': { spec: { body: 'p' }, before: [express.urlencoded({ extended: true })], raw: body },
  '/simple-form': { spec: { body: 'p' }, before: [express.urlencoded()], raw: body },
  '/text': { spec: { body: 'p' }, before: [express.text()], raw: (req) => req.body },
  '/raw': { spec: { body: '0' }, before: [express.raw()], raw: (req) => req.body },
  '/lazy': { spec: { body: 'p' }, before: [lazyJson], raw: body },
  // A query spec beside: the route reads its parts into an object of its own.
  '/lazy-q': {
    spec: [{ query: 'q', optional: true }, { body: 'p' }],
    before: [lazyJson],
    raw: body,
  },
  // No body spec: the body is none of the gate's business.
  '/lazy-none': { spec: { query: 'p' }, before: [lazyJson], raw: query },
};

interface Sent {
  parser?: unknown;
  method?: string;
  headers?: http.OutgoingHttpHeaders;
  body?: string;
}

/**
 * One request to a fresh app (with `parser` as its query parser): every
 * route of `ROUTES`, plus regex and `router.param` routes. Its handler
 * answers the raw value and the path pathgate recorded for it.
 */
async function expectShape(path: string, sent: Sent, want: Want): Promise<void> {
  const gate = pathgate({ root: ROOT, fs: ['docs/**'] });
  const app: Express = express();
  if (sent.parser !== undefined) app.set('query parser', sent.parser);
  let calls = 0;
  const answer =
    (raw: (req: Request) => unknown): RequestHandler =>
    (req, res) => {
      calls += 1;
      const info = req.pathgate;
      const records = info ? [info.params, info.query, info.body, info.headers] : [];
      res.json({ raw: raw(req), checked: records.flatMap(Object.values)[0] });
    };
  for (const [url, route] of Object.entries(ROUTES)) {
    app.all(url, ...(route.before ?? []), gate.read(...[route.spec].flat()), answer(route.raw));
  }
  app.get(
    /^\/re\/(.*)$/,
    gate.read({ params: '0' }),
    answer((req) => req.params[0]),
  );
  const router = express.Router();
  // A param callback runs before the route: the gate checks the value it leaves.
  router.param('name', (req, _res, next, value: string) => {
    req.params.name = value.replace(/^~/, 'docs/');
    next();
  });
  router.get(
    '/home/:name',
    gate.read({ params: 'name' }),
    answer((req) => req.params.name),
  );
  app.use('/sub', router);
  const errors = countingErrorHandler();
  app.use(errors.handler);
  const res = await withServed(app, (s) =>
    request(s.port, sent.method ?? 'GET', path, { headers: sent.headers, body: sent.body }),
  );
  expect(errors.calls).toEqual([]);
  if ('reason' in want) {
    expect(res.json).toEqual(denyBody({ reason: want.reason, label: want.label }));
    expect(res.status).toBe(403);
    expect(calls).toBe(0);
  } else {
    expect(res.json).toEqual(want);
    expect(res.status).toBe(200);
  }
}

const P = 'query.p';
const docs = (...names: string[]) => names.map((name) => `${ROOT}/docs/${name}`);

describe('a custom query parser whose value read throws', () => {
  it.each([
    ['a bad escape', '/q?p=docs%2Fa%ZZ'],
    ['a bad escape beside a good value', '/q?x=1&p=%E0%A4%A'],
    ['a list with a bad escape', '/q?p=docs%2Fa&p=%ZZ'],
  ])('%s: 403 not-a-string, not an error', (_name, path) =>
    expectShape(path, { parser: lazyValues }, { reason: 'not-a-string', label: P }),
  );

  it('good values are read once more by the handler, as checked', async () => {
    await expectShape(
      '/q?p=docs%2Fa',
      { parser: lazyValues },
      { raw: 'docs/a', checked: docs('a')[0] as string },
    );
    await expectShape(
      '/q?p=docs%2Fa&p=docs/b',
      { parser: lazyValues },
      {
        raw: ['docs/a', 'docs/b'],
        checked: docs('a', 'b'),
      },
    );
  });
});

type Row = readonly [string, string, Want];

describe("query parser 'extended' (qs)", () => {
  const ROWS: readonly Row[] = [
    [
      'p[] is a list',
      '/q?p[]=docs/a&p[]=docs/b',
      { raw: ['docs/a', 'docs/b'], checked: docs('a', 'b') },
    ],
    [
      'a list element climbs out',
      '/q?p[]=docs/a&p[]=..%2F..%2Fx',
      { reason: 'path-not-in-allowlist', label: P },
    ],
    [
      'indexes are sorted into a list',
      '/q?p[1]=docs/a&p[0]=..%2Fx',
      { reason: 'path-not-in-allowlist', label: P },
    ],
    ['p[][] is flattened', '/q?p[][]=docs/a', { raw: ['docs/a'], checked: docs('a') }],
    ['an object', '/q?p[a]=docs/a', { reason: 'not-a-string', label: P }],
    [
      'an index over arrayLimit is an object',
      '/q?p[21]=docs/a',
      { reason: 'not-a-string', label: P },
    ],
    [
      'more than 20 p[] make an object',
      `/q?${'p[]=docs/a&'.repeat(25)}`,
      { reason: 'not-a-string', label: P },
    ],
    [
      'one index twice: a nested list',
      '/q?p[0]=docs/a&p[0]=docs/b',
      { reason: 'not-a-string', label: P },
    ],
    ['a string and a key mixed', '/q?p=docs/a&p[x]=b', { reason: 'not-a-string', label: P }],
    ['deeper than depth 5', `/q?p${'[a]'.repeat(8)}=docs/a`, { reason: 'not-a-string', label: P }],
    ['__proto__[p] sets nothing', '/q?__proto__[p]=docs/a', { reason: 'missing-path', label: P }],
    [
      '__proto__[p] beside p',
      '/q?__proto__[p]=..%2Fx&p=docs/a',
      { raw: 'docs/a', checked: docs('a')[0] as string },
    ],
    ['a list with an empty element', '/q?p[]=docs/a&p[]=', { reason: 'missing-path', label: P }],
    ['an empty value', '/q?p=', { reason: 'missing-path', label: P }],
  ];
  it.each(ROWS)('%s: %s', (_name, path, want) => expectShape(path, { parser: 'extended' }, want));
});

describe("query parser 'simple' (the default) and false", () => {
  const ROWS: readonly (readonly [string, unknown, string, Want])[] = [
    [
      'a repeated key is a list',
      'simple',
      '/q?p=docs/a&p=docs/b',
      { raw: ['docs/a', 'docs/b'], checked: docs('a', 'b') },
    ],
    [
      'the default is simple',
      undefined,
      '/q?p=docs/a&p=docs/b',
      { raw: ['docs/a', 'docs/b'], checked: docs('a', 'b') },
    ],
    [
      'brackets are part of the key',
      'simple',
      '/q?p[]=docs/a',
      { reason: 'missing-path', label: P },
    ],
    [
      'a list with an empty element',
      'simple',
      '/q?p=docs/a&p=',
      { reason: 'missing-path', label: P },
    ],
    [
      'a bad escape is kept as text',
      'simple',
      '/q?p=docs/%ZZ',
      { raw: 'docs/%ZZ', checked: docs('%ZZ')[0] as string },
    ],
    ['false: no query at all', false, '/q?p=docs/a', { reason: 'missing-path', label: P }],
  ];
  it.each(ROWS)('%s: %s', (_name, parser, path, want) => expectShape(path, { parser }, want));
});

/** A parser that decodes with decodeURIComponent: `%ZZ` throws when req.query is read. */
const throwingParser = () => {
  throw new URIError('URI malformed');
};

describe('a custom query parser', () => {
  const ROWS: readonly (readonly [string, (text: string) => unknown, Want])[] = [
    ['an inherited p', () => Object.create({ p: 'docs/a' }), { reason: 'missing-path', label: P }],
    ['a number', () => ({ p: 42 }), { reason: 'not-a-string', label: P }],
    ['a nested list', () => ({ p: [['docs/a']] }), { reason: 'not-a-string', label: P }],
    [
      'a list with a hole',
      () => ({ p: Object.assign(new Array(2), { 1: 'docs/a' }) }),
      { reason: 'not-a-string', label: P },
    ],
    ['null', () => null, { reason: 'missing-path', label: P }],
    ['one that throws', throwingParser, { reason: 'not-a-string', label: P }],
    [
      'a null-prototype object',
      () => Object.assign(Object.create(null), { p: 'docs/a' }),
      { raw: 'docs/a', checked: docs('a')[0] as string },
    ],
  ];
  it.each(ROWS)('%s', (_name, parser, want) => expectShape('/q?p=x', { parser }, want));
});

describe('a container as req.query: its values are checked, as the handler gets them', () => {
  it.each(containerQueryRows(ROOT))('%s: %s', (_name, path, parser, want) =>
    expectShape(path, { parser }, want),
  );
});

describe('a container as req.body: its values are checked, optional specs too', () => {
  it.each(containerBodyRows(ROOT))('%s: %s %s', (_name, path, type, body, want) =>
    expectShape(path, { method: 'POST', headers: { 'content-type': type }, body }, want),
  );

  it('beside params and headers specs: those are checked too', () =>
    expectShape(
      '/bgx/a',
      { method: 'POST', headers: { 'content-type': SEARCH_TYPE, 'x-d': 'b' }, body: 'p=docs/c' },
      { raw: 'docs/c', checked: `${ROOT}/docs/a` },
    ));
});

describe('an optional query value: skipped only when missing or empty', () => {
  const ROWS: readonly (readonly [string, unknown, string, Want])[] = [
    ['absent', 'simple', '/qo', { raw: undefined }],
    // Nothing checked: the handler reads req.pathgate, where p is absent.
    ['empty', 'simple', '/qo?p=', { raw: '' }],
    ['an empty list', () => ({ p: [] }), '/qo', { raw: [] }],
    ['present but undefined', () => ({ p: undefined }), '/qo', { raw: undefined }],
    ['a list of one', 'extended', '/qo?p[]=docs/a', { raw: ['docs/a'], checked: docs('a') }],
    ['a list of one empty value', 'extended', '/qo?p[]=', { reason: 'missing-path', label: P }],
    ['an object', 'extended', '/qo?p[a]=docs/a', { reason: 'not-a-string', label: P }],
    ['a parser that throws', throwingParser, '/qo?p=%ZZ', { reason: 'not-a-string', label: P }],
  ];
  it.each(ROWS)('%s: %s', (_name, parser, path, want) => expectShape(path, { parser }, want));
});

describe('body parsers', () => {
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const json = { 'content-type': 'application/json' };
  const ROWS: readonly (readonly [string, string, Sent, Want])[] = [
    [
      'urlencoded extended: p[] is a list',
      '/form',
      { headers: form, body: 'p[]=docs/a&p[]=docs/b' },
      { raw: ['docs/a', 'docs/b'], checked: docs('a', 'b') },
    ],
    [
      'urlencoded extended: an object',
      '/form',
      { headers: form, body: 'p[a]=docs/a' },
      { reason: 'not-a-string', label: 'body.p' },
    ],
    [
      'urlencoded extended: __proto__[p]',
      '/form',
      { headers: form, body: '__proto__[p]=docs/a' },
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'urlencoded simple: a repeated key',
      '/simple-form',
      { headers: form, body: 'p=docs/a&p=..%2Fx' },
      { reason: 'path-not-in-allowlist', label: 'body.p' },
    ],
    [
      'urlencoded simple: brackets are part of the key',
      '/simple-form',
      { headers: form, body: 'p[]=docs/a' },
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'text: the body is a string',
      '/text',
      { headers: { 'content-type': 'text/plain' }, body: 'docs/a' },
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'raw: a Buffer has no path',
      '/raw',
      { headers: { 'content-type': 'application/octet-stream' }, body: 'docs/a' },
      { reason: 'not-a-string', label: 'body.0' },
    ],
    [
      'JSON: the last duplicate key wins, for both',
      '/json',
      { headers: json, body: '{"p":"../../x","p":"docs/a"}' },
      { raw: 'docs/a', checked: docs('a')[0] as string },
    ],
    [
      'JSON: a duplicate key that climbs out',
      '/json',
      { headers: json, body: '{"p":"docs/a","p":"../../x"}' },
      { reason: 'path-not-in-allowlist', label: 'body.p' },
    ],
    [
      'JSON: __proto__ is an own key',
      '/json',
      { headers: json, body: '{"__proto__":{"p":"docs/a"}}' },
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'JSON: constructor.prototype',
      '/json',
      { headers: json, body: '{"constructor":{"prototype":{"p":"docs/a"}}}' },
      { reason: 'missing-path', label: 'body.p' },
    ],
    [
      'JSON: a big number',
      '/json',
      { headers: json, body: '{"p":123456789012345678901234567890}' },
      { reason: 'not-a-string', label: 'body.p' },
    ],
    [
      'JSON: deep nesting',
      '/json',
      { headers: json, body: `{"p":${'['.repeat(5000)}${']'.repeat(5000)}}` },
      { reason: 'not-a-string', label: 'body.p' },
    ],
    [
      'JSON: an array-like object',
      '/json',
      { headers: json, body: '{"p":{"0":"docs/a","length":1}}' },
      { reason: 'not-a-string', label: 'body.p' },
    ],
    [
      'JSON: a top-level string',
      '/json-any',
      { headers: json, body: '"docs/a"' },
      { reason: 'missing-path', label: 'body.p' },
    ],
  ];
  it.each(ROWS)('%s', (_name, path, sent, want) =>
    expectShape(path, { method: 'POST', ...sent }, want),
  );
});

describe('a lazy body parser, whose req.body read throws on a malformed body', () => {
  const BAD = '{"p":';
  const denied: Want = { reason: 'not-a-string', label: 'body.p' };
  const ROWS: readonly (readonly [string, string, string, Want])[] = [
    ['a body spec: 403, not an error', '/lazy', BAD, denied],
    ['beside a query spec: the same 403', '/lazy-q', BAD, denied],
    [
      'a good body: read again by the handler, as checked',
      '/lazy-q',
      '{"p":"docs/a"}',
      { raw: 'docs/a', checked: docs('a')[0] as string },
    ],
    [
      'no body spec: the unreadable body, never checked, is no error',
      '/lazy-none?p=docs/a',
      BAD,
      { raw: 'docs/a', checked: docs('a')[0] as string },
    ],
  ];
  it.each(ROWS)('%s', (_name, path, body, want) =>
    expectShape(
      path,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body },
      want,
    ),
  );
});

describe('repeated headers, regex routes, router.param', () => {
  const ROWS: readonly (readonly [string, string, Sent, Want])[] = [
    // Node joins a repeated header: one value, the same the handler reads.
    [
      'x-p twice is one path',
      '/h',
      { headers: { 'x-p': ['docs/a', 'docs/b'] } },
      { raw: 'docs/a, docs/b', checked: `${ROOT}/docs/a, docs/b` },
    ],
    [
      'x-p twice, the second climbing',
      '/h',
      { headers: { 'x-p': ['docs/a', '../../x'] } },
      { raw: 'docs/a, ../../x', checked: docs('x')[0] as string },
    ],
    [
      'set-cookie twice is a list',
      '/cookie',
      { headers: { 'set-cookie': ['docs/a', 'docs/b'] } },
      { raw: ['docs/a', 'docs/b'], checked: docs('a', 'b') },
    ],
    [
      'set-cookie: one climbs out',
      '/cookie',
      { headers: { 'set-cookie': ['docs/a', '../x'] } },
      { reason: 'path-not-in-allowlist', label: 'headers.set-cookie' },
    ],
    [
      'an unnamed regex capture',
      '/re/docs/a',
      {},
      { raw: 'docs/a', checked: docs('a')[0] as string },
    ],
    [
      'a regex capture climbs out',
      '/re/..%2F..%2Fx',
      {},
      { reason: 'path-not-in-allowlist', label: 'params.0' },
    ],
    [
      'router.param rewrites before the gate',
      '/sub/home/~a',
      {},
      { raw: 'docs/a', checked: docs('a')[0] as string },
    ],
    [
      'router.param: the rewritten value is checked',
      '/sub/home/..%2Fx',
      {},
      { reason: 'path-not-in-allowlist', label: 'params.name' },
    ],
  ];
  it.each(ROWS)('%s', (_name, path, sent, want) => expectShape(path, sent, want));
});

describe('referer and referrer: one header to req.get(), both are checked', () => {
  const ROWS: readonly (readonly [string, string, http.OutgoingHttpHeaders, Want])[] = [
    ['Referer', '/referer', { referer: 'docs/a' }, { raw: 'docs/a', checked: `${ROOT}/docs/a` }],
    [
      'Referrer, on a referer spec',
      '/referer',
      { referrer: 'docs/a' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    ],
    [
      'Referer, on a referrer spec',
      '/referrer',
      { referer: 'docs/a' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    ],
    [
      'both, Referrer climbing',
      '/referer',
      { referer: 'docs/a', referrer: '../../x' },
      { reason: 'path-not-in-allowlist', label: 'headers.referer' },
    ],
    [
      'both, Referer climbing',
      '/referrer',
      { referer: '../../x', referrer: 'docs/a' },
      { reason: 'path-not-in-allowlist', label: 'headers.referrer' },
    ],
    [
      'both, Referrer climbing, beside another spec',
      '/referer-beside',
      { referer: 'docs/a', referrer: '../../x' },
      { reason: 'path-not-in-allowlist', label: 'headers.referer' },
    ],
    [
      'both, the same',
      '/referer',
      { referer: 'docs/a', referrer: 'docs/a' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    ],
    [
      'both, inside',
      '/referer',
      { referer: 'docs/a', referrer: 'docs/b' },
      { raw: 'docs/b', checked: [`${ROOT}/docs/b`, `${ROOT}/docs/a`] },
    ],
    // An empty value is no path: `req.get()` reads past it (`referrer || referer`).
    [
      'Referer, beside an empty Referrer',
      '/referer',
      { referer: 'docs/a', referrer: '' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    ],
    [
      'Referrer, beside an empty Referer',
      '/referer',
      { referer: '', referrer: 'docs/a' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    ],
    [
      'both empty',
      '/referer',
      { referer: '', referrer: '' },
      { reason: 'missing-path', label: 'headers.referer' },
    ],
    ['neither', '/referer', {}, { reason: 'missing-path', label: 'headers.referer' }],
  ];
  it.each(ROWS)('%s: %s', (_name, path, headers, want) => expectShape(path, { headers }, want));
});
