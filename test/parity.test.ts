import { denyBody, type GuardDenyReason, PermissionPolicy } from '@pathgate/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Apps, type Route, type Sent, send, startApps } from './apps.js';

// One route table and one policy → a Fastify app and an Express app. The
// same requests, over real HTTP on 127.0.0.1, must get the same status and
// the same JSON body from both: the 403 body for every deny, and the same
// canonical paths (request.pathgate / req.pathgate) for every allowed one.

const ROOT = '/srv/root';
const policy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: ['docs/**', 'rw:uploads/**', 'rw:reports/**'] },
  // resolve-failed, on demand: a resolver that throws for one name.
  resolve: (path) => {
    if (path.endsWith('/boom')) throw new Error('EACCES');
    return path;
  },
});

const ROUTES: readonly Route[] = [
  { method: 'GET', url: '/files/*', mode: 'read', paths: [{ params: '*' }] },
  { method: 'GET', url: '/doc/:name', mode: 'read', paths: [{ params: 'name', under: 'docs' }] },
  { method: 'GET', url: '/q', mode: 'read', paths: [{ query: 'path' }] },
  { method: 'GET', url: '/q-write', mode: 'write', paths: [{ query: 'path' }] },
  {
    method: 'GET',
    url: '/opt',
    mode: 'read',
    paths: [
      { query: 'a', optional: true },
      { query: 'b', optional: true },
    ],
  },
  { method: 'GET', url: '/h', mode: 'read', paths: [{ headers: 'X-File' }] },
  { method: 'POST', url: '/move', mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] },
  { method: 'POST', url: '/deep', mode: 'write', paths: [{ body: ['files', 0, 'path'] }] },
  { method: 'POST', url: '/under', mode: 'write', paths: [{ body: 'name', under: 'uploads' }] },
  { method: 'POST', url: '/list', mode: 'write', paths: [{ body: 'paths' }] },
];

/** A request, and what both apps must answer: allowed, or denied with this reason and label. */
type Case = readonly [string, Sent, 'allow' | readonly [GuardDenyReason, string]];

const post = (path: string, json: string): Sent => ({ method: 'POST', path, json });

const CASES: readonly Case[] = [
  // allowed, through every source
  ['wildcard', { path: '/files/docs/a/b.txt' }, 'allow'],
  ['wildcard with an encoded slash', { path: '/files/docs%2Fa/b.txt' }, 'allow'],
  ['wildcard, dot segments', { path: '/files/docs/x/../y/./z' }, 'allow'],
  ['wildcard, double-encoded dots are names', { path: '/files/docs/%252e%252e/x' }, 'allow'],
  ['wildcard, NFD', { path: '/files/docs/e%CC%81.txt' }, 'allow'],
  ['param under docs', { path: '/doc/report.pdf' }, 'allow'],
  ['param under docs, leading /', { path: '/doc/%2Freport.pdf' }, 'allow'],
  ['query', { path: '/q?path=docs/a.txt' }, 'allow'],
  ['query array', { path: '/q?path=docs/a&path=uploads/b' }, 'allow'],
  ['query, + is a space', { path: '/q?path=docs/a+b' }, 'allow'],
  ['query write on rw:', { path: '/q-write?path=uploads/a' }, 'allow'],
  ['optional both absent', { path: '/opt' }, 'allow'],
  ['optional one present', { path: '/opt?b=docs/b' }, 'allow'],
  ['header', { path: '/h', headers: { 'X-File': 'docs/h.txt' } }, 'allow'],
  // Node joins a header sent twice with ', ': one value, one path ('docs/a, ../x' is inside docs).
  ['header sent twice', { path: '/h', headers: { 'X-File': ['docs/a', '../x'] } }, 'allow'],
  ['body two keys', post('/move', '{"from":"uploads/a","to":"/srv/root/reports/q3.csv"}'), 'allow'],
  ['body key/index', post('/deep', '{"files":[{"path":"uploads/x"}]}'), 'allow'],
  ['body under, leading /', post('/under', '{"name":"/avatar.png"}'), 'allow'],
  ['body list', post('/list', '{"paths":["uploads/a","reports/b"]}'), 'allow'],
  // each reason
  [
    'traversal, raw dots',
    { path: '/files/docs/../../etc/passwd' },
    ['path-not-in-allowlist', 'params.*'],
  ],
  [
    'traversal, encoded slashes',
    { path: '/files/..%2F..%2Fetc%2Fpasswd' },
    ['path-not-in-allowlist', 'params.*'],
  ],
  [
    'traversal, encoded dots',
    { path: '/files/%2e%2e/%2e%2e/etc' },
    ['path-not-in-allowlist', 'params.*'],
  ],
  [
    'traversal, backslashes are names',
    { path: '/files/docs%5C..%5C..%5Cetc' },
    ['path-not-in-allowlist', 'params.*'],
  ],
  ['dotfile', { path: '/files/docs/.env' }, ['path-not-in-allowlist', 'params.*']],
  ['NUL in a param', { path: '/files/docs/a%00.txt' }, ['nul-byte', 'params.*']],
  [
    'under: .. climbs out',
    { path: '/doc/..%2F..%2Fetc' },
    ['path-not-in-allowlist', 'params.name'],
  ],
  [
    'query traversal',
    { path: '/q?path=../../etc/passwd' },
    ['path-not-in-allowlist', 'query.path'],
  ],
  [
    'query, one bad array element',
    { path: '/q?path=docs/a&path=..%2F..%2Fx' },
    ['path-not-in-allowlist', 'query.path'],
  ],
  ['query, NUL', { path: '/q?path=docs/a%00' }, ['nul-byte', 'query.path']],
  [
    'query, double-encoded',
    { path: '/q?path=%252e%252e/x' },
    ['path-not-in-allowlist', 'query.path'],
  ],
  ['write on r:', { path: '/q-write?path=docs/a' }, ['mode-not-permitted', 'query.path']],
  ['resolver throws', { path: '/q?path=docs/boom' }, ['resolve-failed', 'query.path']],
  ['optional but wrong', { path: '/opt?a=../x' }, ['path-not-in-allowlist', 'query.a']],
  [
    'header traversal',
    { path: '/h', headers: { 'X-File': '../../../etc/shadow' } },
    ['path-not-in-allowlist', 'headers.x-file'],
  ],
  [
    'body second key',
    post('/move', '{"from":"uploads/a","to":"docs/b"}'),
    ['mode-not-permitted', 'body.to'],
  ],
  ['body number', post('/move', '{"from":42,"to":"uploads/a"}'), ['not-a-string', 'body.from']],
  ['body null', post('/move', '{"from":null,"to":"uploads/a"}'), ['not-a-string', 'body.from']],
  [
    'body object',
    post('/move', '{"from":{"0":"uploads/a"},"to":"uploads/a"}'),
    ['not-a-string', 'body.from'],
  ],
  [
    'body NUL',
    post('/move', '{"from":"uploads/a\\u0000","to":"uploads/b"}'),
    ['nul-byte', 'body.from'],
  ],
  [
    'body lone surrogate',
    post('/move', '{"from":"uploads/\\ud800","to":"uploads/b"}'),
    ['invalid-unicode', 'body.from'],
  ],
  [
    'body duplicate key, last wins',
    post('/under', '{"name":"a","name":"../../x"}'),
    ['path-not-in-allowlist', 'body.name'],
  ],
  [
    'body list, one nested array',
    post('/list', '{"paths":["uploads/a",["uploads/b"]]}'),
    ['not-a-string', 'body.paths'],
  ],
  // missing
  ['query absent', { path: '/q' }, ['missing-path', 'query.path']],
  ['query empty', { path: '/q?path=' }, ['missing-path', 'query.path']],
  ['query bracket key', { path: '/q?path[]=docs/a' }, ['missing-path', 'query.path']],
  ['header absent', { path: '/h' }, ['missing-path', 'headers.x-file']],
  ['no body', { method: 'POST', path: '/move' }, ['missing-path', 'body.from']],
  ['body key absent', post('/move', '{"to":"uploads/a"}'), ['missing-path', 'body.from']],
  ['body is an array', post('/move', '[{"from":"uploads/a"}]'), ['missing-path', 'body.from']],
  [
    'body prototype key',
    post('/move', '{"constructor":"uploads/a","to":"uploads/a"}'),
    ['missing-path', 'body.from'],
  ],
  ['empty list', post('/list', '{"paths":[]}'), ['missing-path', 'body.paths']],
  ['index past the end', post('/deep', '{"files":[]}'), ['missing-path', 'body.files.0.path']],
];

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

  it('a query escape that is not UTF-8: kept as written by Fastify, U+FFFD in Express', async () => {
    const [fromFastify, fromExpress] = await both({ path: '/q?path=docs/%FF' });
    expect(fromFastify).toEqual(checked(`${ROOT}/docs/%FF`));
    expect(fromExpress).toEqual(checked(`${ROOT}/docs/\uFFFD`));
  });

  it.each([
    ['an empty wildcard', '/files/', [403, 404]],
    ['another case', '/DOC/report.pdf', [404, 200]],
    ['a trailing slash', '/doc/report.pdf/', [404, 200]],
    ['a parameter over maxParamLength', `/doc/${'a'.repeat(101)}`, [414, 200]],
  ])('the routers: %s (%s)', async (_name, path, [fastify, express]) => {
    const [fromFastify, fromExpress] = await both({ path });
    expect([fromFastify.status, fromExpress.status]).toEqual([fastify, express]);
  });
});

describe('an onDeny that throws', () => {
  it('both log it and send the default 403, never the error', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const throwing = await startApps({
      policy,
      routes: ROUTES,
      onDeny: () => {
        throw new Error('audit sink down at /srv/root');
      },
    });
    try {
      for (const [, sent, expected] of CASES.filter(([, , e]) => e !== 'allow').slice(0, 8)) {
        const [fromFastify, fromExpress] = await Promise.all([
          send(throwing.fastify.port, sent),
          send(throwing.express.port, sent),
        ]);
        const [reason, label] = expected as readonly [GuardDenyReason, string];
        expect(fromFastify).toEqual({ status: 403, body: denyBody({ reason, label }) });
        expect(fromExpress).toEqual(fromFastify);
      }
      // Express's default log is console.warn: each failure was reported there.
      expect(warn.mock.calls.some(([message]) => String(message).includes('onDeny failed'))).toBe(
        true,
      );
    } finally {
      await throwing.close();
      warn.mockRestore();
    }
  });
});
