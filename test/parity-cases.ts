import { type GuardDenyReason, PermissionPolicy } from '@pathgate/core';
import type { Route, Sent } from './apps.js';

// The parity test's route table, policy and requests, shared with the third
// adapter's test (test/third-adapter.test.ts), which sends them to a plain
// node:http guard as well.

export const ROOT = '/srv/root';
export const policy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: ['docs/**', 'rw:uploads/**', 'rw:reports/**'] },
  // resolve-failed, on demand: a resolver that throws for one name.
  resolve: (path) => {
    if (path.endsWith('/boom')) throw new Error('EACCES');
    return path;
  },
});

export const ROUTES: readonly Route[] = [
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
  // A file and a value: the values are checked first, then whether a required file came.
  {
    method: 'POST',
    url: '/file-and-body',
    mode: 'write',
    paths: [{ file: 'f', under: 'uploads' }, { body: 'd' }],
  },
];

/** A request, and what both apps must answer: allowed, or denied with this reason and label. */
export type Case = readonly [string, Sent, 'allow' | readonly [GuardDenyReason, string]];

export const post = (path: string, json: string): Sent => ({ method: 'POST', path, json });

export const CASES: readonly Case[] = [
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
  [
    'no file, and a denied value',
    post('/file-and-body', '{"d":"../x"}'),
    ['path-not-in-allowlist', 'body.d'],
  ],
  [
    'no file, the value allowed',
    post('/file-and-body', '{"d":"uploads/x"}'),
    ['missing-path', 'file f'],
  ],
];
