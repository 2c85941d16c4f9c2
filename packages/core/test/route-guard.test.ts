import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CheckedFile,
  compileRouteGuard,
  denyBody,
  type FileResult,
  type GuardDenyReason,
  type GuardResult,
  type PathDenial,
  type PathSpec,
  PermissionPolicy,
  type RequestValues,
  RouteGuard,
  type RouteGuardOptions,
  requiredParams,
  UNEXPECTED_FILE,
} from '../src/index.js';
import { MAX_PATH_LENGTH } from '../src/route-guard.js';
import { runGuard } from './guard-run.js';

// DESIGN.md, "The adapters": the framework-free request guard both adapters
// share. Per route: a mode and selectors naming where path values come from
// (params, query, body, headers, multipart filenames), an optional `under`
// sub-directory the value is joined under as a relative path, and `optional`.
// Every selected value is checked before the handler runs; a deny carries the
// reason and the spec's label, never the root or the canonical path.

const ROOT = '/srv/root';
const policy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: ['rw:uploads/**', 'docs/**', 'rw:reports/**'] },
});

const guardOf = (options: unknown, p: PermissionPolicy = policy): RouteGuard =>
  compileRouteGuard(p, options as RouteGuardOptions, 'POST /move');

const denialOf = (result: GuardResult | FileResult): PathDenial => {
  if (result.ok) throw new Error('expected a denial, got ok');
  return result.denial;
};

const fileOf = (result: FileResult): CheckedFile => {
  if (!result.ok) throw new Error(`expected an allowed file, got ${result.denial.reason}`);
  if (!result.file) throw new Error('expected an allowed file, got a nameless part let go');
  return result.file;
};

/** The TypeError message compileRouteGuard throws for `options`. */
const buildError = (options: unknown, route = 'POST /move'): string => {
  try {
    compileRouteGuard(policy, options as RouteGuardOptions, route);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as Error).message;
  }
  throw new Error('expected compileRouteGuard to throw');
};

// --- build time -----------------------------------------------------------------------------

describe('compileRouteGuard: build-time errors name the route and paths[i]', () => {
  const at = (i: number, message: string) => `pathgate: route POST /move: paths[${i}]: ${message}`;
  const route = (message: string) => `pathgate: route POST /move: ${message}`;
  const ONE_SOURCE = 'name exactly one of params, query, body, headers, file';
  const selectorMessage = (source: string) =>
    `${source} must be a non-empty key or a non-empty list of non-empty keys and non-negative integer indexes`;
  const FILE = 'file must be a field name or true (every file)';
  const UNDER = 'under must be a directory inside the root';
  const ok = { body: 'from' };

  const ROWS: readonly (readonly [string, unknown, string])[] = [
    ['declaration null', null, route('the declaration must be an object')],
    ['declaration a string', 'read', route('the declaration must be an object')],
    ['mode missing', { paths: [ok] }, route('mode must be "read" or "write"')],
    ['mode READ', { mode: 'READ', paths: [ok] }, route('mode must be "read" or "write"')],
    ['mode rw', { mode: 'rw', paths: [ok] }, route('mode must be "read" or "write"')],
    ['mode execute', { mode: 'execute', paths: [ok] }, route('mode must be "read" or "write"')],
    ['paths missing', { mode: 'read' }, route('paths must be a non-empty array')],
    ['paths empty', { mode: 'read', paths: [] }, route('paths must be a non-empty array')],
    ['paths an object', { mode: 'read', paths: ok }, route('paths must be a non-empty array')],
    ['paths a string', { mode: 'read', paths: 'from' }, route('paths must be a non-empty array')],
    ['spec null', { mode: 'read', paths: [null] }, at(0, 'must be an object')],
    ['second spec a string', { mode: 'read', paths: [ok, 'from'] }, at(1, 'must be an object')],
    ['no source key', { mode: 'read', paths: [{}] }, at(0, ONE_SOURCE)],
    ['only under', { mode: 'read', paths: [ok, { under: 'uploads' }] }, at(1, ONE_SOURCE)],
    ['only optional', { mode: 'read', paths: [{ optional: true }] }, at(0, ONE_SOURCE)],
    ['two sources', { mode: 'read', paths: [{ body: 'a', query: 'b' }] }, at(0, ONE_SOURCE)],
    ['body and file', { mode: 'read', paths: [{ body: 'a', file: true }] }, at(0, ONE_SOURCE)],
    ['unknown key', { mode: 'read', paths: [{ body: 'a', dir: 'x' }] }, at(0, 'unknown key "dir"')],
    ['key case', { mode: 'read', paths: [ok, { Body: 'a' }] }, at(1, 'unknown key "Body"')],
    ['body empty', { mode: 'read', paths: [{ body: '' }] }, at(0, selectorMessage('body'))],
    ['body []', { mode: 'read', paths: [{ body: [] }] }, at(0, selectorMessage('body'))],
    ['body -1', { mode: 'read', paths: [{ body: ['a', -1] }] }, at(0, selectorMessage('body'))],
    ['body 1.5', { mode: 'read', paths: [{ body: ['a', 1.5] }] }, at(0, selectorMessage('body'))],
    [
      'body empty key',
      { mode: 'read', paths: [{ body: ['a', ''] }] },
      at(0, selectorMessage('body')),
    ],
    ['body number', { mode: 'read', paths: [{ body: 0 }] }, at(0, selectorMessage('body'))],
    ['body null', { mode: 'read', paths: [{ body: null }] }, at(0, selectorMessage('body'))],
    ['params true', { mode: 'read', paths: [{ params: true }] }, at(0, selectorMessage('params'))],
    ['query empty', { mode: 'read', paths: [{ query: '' }] }, at(0, selectorMessage('query'))],
    [
      'headers list',
      { mode: 'read', paths: [{ headers: ['x'] }] },
      at(0, 'headers must be a header name'),
    ],
    [
      'headers number',
      { mode: 'read', paths: [{ headers: 1 }] },
      at(0, 'headers must be a header name'),
    ],
    [
      'headers empty',
      { mode: 'read', paths: [{ headers: '' }] },
      at(0, selectorMessage('headers')),
    ],
    ['file empty', { mode: 'write', paths: [{ file: '' }] }, at(0, FILE)],
    ['file false', { mode: 'write', paths: [{ file: false }] }, at(0, FILE)],
    ['file null', { mode: 'write', paths: [{ file: null }] }, at(0, FILE)],
    ['file number', { mode: 'write', paths: [{ file: 1 }] }, at(0, FILE)],
    ['file list', { mode: 'write', paths: [{ file: ['avatar'] }] }, at(0, FILE)],
    [
      'optional string',
      { mode: 'read', paths: [{ body: 'a', optional: 'yes' }] },
      at(0, 'optional must be a boolean'),
    ],
    [
      'optional null',
      { mode: 'read', paths: [{ body: 'a', optional: null }] },
      at(0, 'optional must be a boolean'),
    ],
    [
      'optional 1',
      { mode: 'read', paths: [{ body: 'a', optional: 1 }] },
      at(0, 'optional must be a boolean'),
    ],
    [
      'under number',
      { mode: 'read', paths: [{ body: 'a', under: 1 }] },
      at(0, 'under must be a non-empty string (use "." for the root)'),
    ],
    [
      'under null',
      { mode: 'read', paths: [{ body: 'a', under: null }] },
      at(0, 'under must be a non-empty string (use "." for the root)'),
    ],
    [
      'under empty',
      { mode: 'read', paths: [{ body: 'a', under: '' }] },
      at(0, 'under must be a non-empty string (use "." for the root)'),
    ],
    [
      'unknown top-level key',
      { mode: 'read', paths: [{ body: 'a' }], optinal: true },
      'pathgate: route POST /move: unknown key "optinal" (use mode and paths)',
    ],
    [
      // A user rolling out one route tries this first: say where the option goes.
      'an adapter option as a key',
      { mode: 'read', paths: [{ body: 'a' }], reportOnly: true },
      'pathgate: route POST /move: unknown key "reportOnly" (use mode and paths; reportOnly is an option of the adapter, for all its routes)',
    ],
    ['under ../x', { mode: 'read', paths: [{ body: 'a', under: '../x' }] }, at(0, UNDER)],
    ['under /etc', { mode: 'read', paths: [{ body: 'a', under: '/etc' }] }, at(0, UNDER)],
    ['under a/../../x', { mode: 'read', paths: [{ body: 'a', under: 'a/../../x' }] }, at(0, UNDER)],
    [
      'under /srv/root2',
      { mode: 'read', paths: [{ body: 'a', under: '/srv/root2' }] },
      at(0, UNDER),
    ],
    ['under NUL', { mode: 'read', paths: [{ body: 'a', under: 'up\0loads' }] }, at(0, UNDER)],
    [
      'under lone surrogate',
      { mode: 'read', paths: [{ body: 'a', under: '\uD800' }] },
      at(0, UNDER),
    ],
  ];

  it.each(ROWS)('%s', (_name, options, message) => {
    expect(buildError(options)).toBe(message);
  });

  it('names the route it was given', () => {
    expect(buildError({ mode: 'read', paths: [ok, { body: '' }] }, 'GET /files/*')).toBe(
      `pathgate: route GET /files/*: paths[1]: ${selectorMessage('body')}`,
    );
  });

  it('accepts each source, and a source key holding undefined counts as absent', () => {
    const guard = guardOf({
      mode: 'write',
      paths: [
        { params: '*' },
        { query: ['dirs', 0] },
        { body: 'from', query: undefined },
        { headers: 'X-Path', optional: false },
        { file: 'avatar', under: 'uploads' },
        { file: true, under: '.', optional: true },
      ],
    });
    expect(guard.mode).toBe('write');
    expect(guard.expectsFiles).toBe(true);
  });

  it('accepts `under` that normalizes inside the root', () => {
    const guard = guardOf({ mode: 'read', paths: [{ body: 'a', under: './docs/x/../' }] });
    const { result, info } = runGuard(guard, { body: { a: 'f.txt' } });
    expect(result).toEqual({ ok: true });
    expect(info.body).toEqual({ a: '/srv/root/docs/f.txt' });
  });

  it('a policy that is not a PermissionPolicy fails at build time, not on the first request', () => {
    const fake = { root: '/srv/root', rules: ['./**'], dot: false } as unknown as PermissionPolicy;
    expect(() => compileRouteGuard(fake, { mode: 'read', paths: [ok] }, 'GET /x')).toThrow(
      new TypeError('compileRouteGuard: policy must be a PermissionPolicy'),
    );
    expect(() => new RouteGuard(fake, 'read', [])).toThrow(
      new TypeError('RouteGuard: policy must be a PermissionPolicy'),
    );
  });

  it('a route without file specs expects no files', () => {
    expect(guardOf({ mode: 'read', paths: [{ body: 'a' }] }).expectsFiles).toBe(false);
  });

  it('bodyLabel and fileLabel name the first body spec and the first file spec, if any', () => {
    const labels = (paths: RouteGuardOptions['paths']) => {
      const guard = guardOf({ mode: 'write', paths });
      return [guard.bodyLabel, guard.fileLabel];
    };
    expect(labels([{ params: 'p' }, { query: 'q' }, { headers: 'x-h' }])).toEqual([
      undefined,
      undefined,
    ]);
    expect(labels([{ file: 'f' }, { body: ['a', 0], optional: true }, { body: 'b' }])).toEqual([
      'body.a.0',
      'file f',
    ]);
    expect(labels([{ query: 'q' }, { file: true }, { file: 'g' }])).toEqual([undefined, 'file *']);
  });
});

describe('compileRouteGuard: two specs of one source that share a record key', () => {
  // A record's key is its selector's text (`'to.x'`), so `{ body: 'to.x' }` and
  // `{ body: ['to', 'x'] }` would both be recorded as `body['to.x']`: the later
  // path overwrites the earlier, and the handler cannot tell which value it holds.
  const shared = (first: number, a: string, second: number, b: string, key: string) =>
    `pathgate: route POST /move: paths[${first}] (${a}) and paths[${second}] (${b}) select different values but share the key ${key} in request.pathgate`;

  it('a dotted key and a key list are a build-time error naming both specs', () => {
    expect(buildError({ mode: 'write', paths: [{ body: 'to.x' }, { body: ['to', 'x'] }] })).toBe(
      shared(0, 'body "to.x"', 1, 'body ["to","x"]', 'body["to.x"]'),
    );
  });

  it('an index and a key of the same digits select different values too', () => {
    const paths = [
      { query: 'a' },
      { query: ['dirs', 0] },
      { query: ['dirs', '0'], optional: true },
    ];
    expect(buildError({ mode: 'read', paths })).toBe(
      shared(1, 'query ["dirs",0]', 2, 'query ["dirs","0"]', 'query["dirs.0"]'),
    );
  });

  it('one selector joined under two folders records two paths under one key: an error too', () => {
    const paths = [
      { body: 'name', under: 'uploads' },
      { body: 'name', under: 'docs' },
    ];
    expect(buildError({ mode: 'write', paths })).toBe(
      'pathgate: route POST /move: paths[0] (body "name") and paths[1] (body "name") join the same value under different folders but share the key body["name"] in request.pathgate',
    );
  });

  it('specs that select the same value, or keys of different sources, build and record', () => {
    const guard = guardOf({
      mode: 'read',
      paths: [
        { body: 'a.b' },
        { query: ['a', 'b'] },
        { body: ['a.b'], optional: true },
        { headers: 'X-Path' },
        { headers: 'x-path' },
      ],
    });
    const { result, info } = runGuard(guard, {
      body: { 'a.b': 'docs/1' },
      query: { a: { b: 'docs/2' } },
      headers: { 'x-path': 'docs/3' },
    });
    expect(result).toEqual({ ok: true });
    expect(info.body).toEqual({ 'a.b': '/srv/root/docs/1' });
    expect(info.query).toEqual({ 'a.b': '/srv/root/docs/2' });
    expect(info.headers).toEqual({ 'x-path': '/srv/root/docs/3' });
  });

  it('a file field named twice, under two folders, builds: files have no selector to key', () => {
    const paths = [{ file: 'f' }, { file: 'f', under: 'uploads' }];
    expect(() => guardOf({ mode: 'write', paths })).not.toThrow();
  });
});

// --- checkRequest ---------------------------------------------------------------------------

describe('checkRequest: sources, selectors and the info record', () => {
  const guard = guardOf({
    mode: 'read',
    paths: [
      { params: '*', optional: true },
      { query: 'dir', optional: true },
      { body: 'from', optional: true },
      { body: ['files', 0, 'path'], optional: true },
      { headers: 'X-Path', optional: true },
    ],
  });

  it('records the canonical path of every source by selector label', () => {
    const { result, info } = runGuard(guard, {
      params: { '*': 'docs/a.txt' },
      query: { dir: './docs//sub/' },
      body: { from: '/srv/root/docs/x/../b.txt', files: [{ path: 'uploads/c' }, { path: 42 }] },
      headers: { 'x-path': 'reports/q3.csv' },
    });
    expect(result).toEqual({ ok: true });
    expect(info).toEqual({
      mode: 'read',
      params: { '*': '/srv/root/docs/a.txt' },
      query: { dir: '/srv/root/docs/sub' },
      body: { from: '/srv/root/docs/b.txt', 'files.0.path': '/srv/root/uploads/c' },
      headers: { 'x-path': '/srv/root/reports/q3.csv' },
      files: [],
    });
  });

  it('skips an optional missing value and leaves it out of info', () => {
    const { result, info } = runGuard(guard, { query: { dir: 'docs' } });
    expect(result).toEqual({ ok: true });
    expect(info.query).toEqual({ dir: '/srv/root/docs' });
    expect(Object.keys(info.params)).toEqual([]);
    expect(Object.keys(info.body)).toEqual([]);
    expect(Object.keys(info.headers)).toEqual([]);
  });

  it('reads a header by its lower-cased name and labels it so', () => {
    const { result, info } = runGuard(guard, { headers: { 'x-path': '../../etc/passwd' } });
    expect(denialOf(result)).toMatchObject({
      reason: 'path-not-in-allowlist',
      label: 'headers.x-path',
    });
    expect(info.headers).toEqual({});
  });

  it('records a selected array as a string[], even with one element', () => {
    const { result, info } = runGuard(guard, {
      query: { dir: ['docs/a', 'uploads/b'] },
      body: { from: ['docs/only'] },
    });
    expect(result).toEqual({ ok: true });
    expect(info.query.dir).toEqual(['/srv/root/docs/a', '/srv/root/uploads/b']);
    expect(info.body.from).toEqual(['/srv/root/docs/only']);
  });

  it('NFC-normalizes the recorded path', () => {
    const { info } = runGuard(guard, { query: { dir: 'docs/cafe\u0301' } });
    expect(info.query.dir).toBe('/srv/root/docs/caf\u00e9');
  });

  it('hands a fresh info to each request', () => {
    const a = guard.newInfo();
    const b = guard.newInfo();
    expect(a).toEqual({ mode: 'read', params: {}, query: {}, body: {}, headers: {}, files: [] });
    expect(a).not.toBe(b);
    expect(a.body).not.toBe(b.body);
    expect(a.files).not.toBe(b.files);
  });

  it('records paths on plain objects, as a handler would build them', () => {
    const { info } = runGuard(guard, { query: { dir: 'docs/a' }, body: { from: 'docs/b' } });
    for (const record of [info.params, info.query, info.body, info.headers]) {
      expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
      expect(record.constructor).toBe(Object);
    }
    expect(Object.keys(info.query)).toEqual(['dir']);
    expect(JSON.stringify(info.body)).toBe('{"from":"/srv/root/docs/b"}');
    expect({ ...info.query }).toStrictEqual({ dir: '/srv/root/docs/a' });
  });

  it('shares one frozen empty record for sources the route declares nothing from', () => {
    const paramsOnly = compileRouteGuard(policy, { mode: 'read', paths: [{ params: 'p' }] }, 'R');
    const a = paramsOnly.newInfo();
    const b = paramsOnly.newInfo();
    expect(a.params).not.toBe(b.params);
    for (const source of ['query', 'body', 'headers'] as const) {
      expect(a[source]).toBe(b[source]);
      expect(Object.isFrozen(a[source])).toBe(true);
      expect(a[source]).toEqual({});
    }
    // A value under an undeclared source is never read, so the shared record stays empty.
    const { result, info } = runGuard(paramsOnly, {
      params: { p: 'docs/a' },
      query: { p: 'docs/b' },
      body: { p: 'docs/c' },
    });
    expect(result).toEqual({ ok: true });
    expect(info.params).toEqual({ p: '/srv/root/docs/a' });
    expect(paramsOnly.newInfo().query).toEqual({});
  });

  it('declares says which sources a spec reads, and an adapter cannot change it', () => {
    // Adapters hand over only these parts: one left out would go unchecked.
    const paths = [{ query: 'q' }, { headers: 'x-dir' }, { file: 'f' }];
    const guard = guardOf({ mode: 'read', paths });
    expect(guard.declares).toEqual({ params: false, query: true, body: false, headers: true });
    expect(Object.isFrozen(guard.declares)).toBe(true);
    const others = guardOf({ mode: 'read', paths: [{ params: 'p' }, { body: 'b' }] });
    expect(others.declares).toEqual({ params: true, query: false, body: true, headers: false });
  });
});

describe('checkRequest: each deny reason surfaces with its label', () => {
  const guard = guardOf({
    mode: 'read',
    paths: [
      { params: '*', optional: true },
      { query: 'dir', optional: true },
      { body: 'from', optional: true },
      { body: ['files', 0, 'path'], optional: true },
      { headers: 'x-path', optional: true },
    ],
  });

  const ROWS: readonly (readonly [string, RequestValues, PathDenial])[] = [
    [
      'params.* outside the root',
      { params: { '*': '../../etc/passwd' } },
      {
        reason: 'path-not-in-allowlist',
        label: 'params.*',
        result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/etc/passwd' },
      },
    ],
    [
      'query.dir with a NUL',
      { query: { dir: 'docs/a\0.txt' } },
      { reason: 'nul-byte', label: 'query.dir', result: { outcome: 'deny', reason: 'nul-byte' } },
    ],
    [
      'body.from a number',
      { body: { from: 42 } },
      {
        reason: 'not-a-string',
        label: 'body.from',
        result: { outcome: 'deny', reason: 'not-a-string' },
      },
    ],
    [
      'headers.x-path with a lone surrogate',
      { headers: { 'x-path': 'docs/\uD800' } },
      {
        reason: 'invalid-unicode',
        label: 'headers.x-path',
        result: { outcome: 'deny', reason: 'invalid-unicode' },
      },
    ],
    [
      'body.files.0.path absolute outside',
      { body: { files: [{ path: '/etc/shadow' }] } },
      {
        reason: 'path-not-in-allowlist',
        label: 'body.files.0.path',
        result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/etc/shadow' },
      },
    ],
    [
      'query.dir inside the root but not listed',
      { query: { dir: 'secrets/key' } },
      {
        reason: 'path-not-in-allowlist',
        label: 'query.dir',
        result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/srv/root/secrets/key' },
      },
    ],
    [
      'boundary: uploads2 beside uploads',
      { body: { from: 'uploads2/a' } },
      {
        reason: 'path-not-in-allowlist',
        label: 'body.from',
        result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/srv/root/uploads2/a' },
      },
    ],
  ];

  it.each(ROWS)('%s', (_name, values, want) => {
    const { result, info } = runGuard(guard, values);
    expect(result).toEqual({ ok: false, denial: want });
    const denial = denialOf(result);
    expect(Object.keys(denial).sort()).toEqual(['label', 'reason', 'result']);
    expect(info).toEqual(guard.newInfo());
  });

  it('mode-not-permitted on a read-only path in a write route, with the canonical path', () => {
    const write = guardOf({ mode: 'write', paths: [{ body: 'to' }] });
    const denial = denialOf(runGuard(write, { body: { to: 'docs/a.txt' } }).result);
    expect(denial.reason).toBe('mode-not-permitted');
    expect(denial.label).toBe('body.to');
    expect(denial.result).toMatchObject({
      outcome: 'deny',
      reason: 'mode-not-permitted',
      path: '/srv/root/docs/a.txt',
    });
    const { result, info } = runGuard(write, { body: { to: 'uploads/a.txt' } });
    expect(result).toEqual({ ok: true });
    expect(info.body).toEqual({ to: '/srv/root/uploads/a.txt' });
  });

  it('resolve-failed when the policy resolver throws', () => {
    const resolving = new PermissionPolicy({
      root: ROOT,
      permissions: { fs: ['docs/**'] },
      resolve: (path) => {
        if (path.includes('loop')) throw new Error('ELOOP');
        return path;
      },
    });
    const g = guardOf({ mode: 'read', paths: [{ query: 'dir' }] }, resolving);
    expect(runGuard(g, { query: { dir: 'docs/loop' } }).result).toEqual({
      ok: false,
      denial: {
        reason: 'resolve-failed',
        label: 'query.dir',
        result: { outcome: 'deny', reason: 'resolve-failed' },
      },
    });
    expect(runGuard(g, { query: { dir: 'docs/fine' } }).info.query).toEqual({
      dir: '/srv/root/docs/fine',
    });
  });

  it('the first declared spec that fails decides', () => {
    const { result } = runGuard(guard, {
      params: { '*': '/etc/passwd' },
      body: { from: 42 },
    });
    expect(denialOf(result)).toMatchObject({ reason: 'path-not-in-allowlist', label: 'params.*' });
  });
});

describe('checkRequest: arrays are checked element by element', () => {
  const guard = guardOf({
    mode: 'read',
    paths: [{ query: 'dir' }, { body: 'list', optional: true }],
  });

  it('one bad element denies with that element’s reason', () => {
    expect(
      denialOf(runGuard(guard, { query: { dir: ['docs/a', '../../etc/passwd'] } }).result),
    ).toEqual({
      reason: 'path-not-in-allowlist',
      label: 'query.dir',
      result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/etc/passwd' },
    });
    expect(denialOf(runGuard(guard, { query: { dir: ['docs/a', 42] } }).result).reason).toBe(
      'not-a-string',
    );
    expect(denialOf(runGuard(guard, { query: { dir: ['docs/a', 'b\0'] } }).result).reason).toBe(
      'nul-byte',
    );
    expect(denialOf(runGuard(guard, { query: { dir: [['docs/a']] } }).result).reason).toBe(
      'not-a-string',
    );
  });

  it('an empty string element is a missing path, on an optional spec too (only a whole value is skipped)', () => {
    expect(denialOf(runGuard(guard, { query: { dir: ['docs/a', ''] } }).result)).toEqual({
      reason: 'missing-path',
      label: 'query.dir',
    });
    const optional = { query: { dir: 'docs/a' }, body: { list: ['docs/a', ''] } };
    expect(denialOf(runGuard(guard, optional).result)).toEqual({
      reason: 'missing-path',
      label: 'body.list',
    });
  });

  it('a hole is a value that fails, not a skipped one', () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the point
    const sparse = [, 'docs/a'];
    expect(denialOf(runGuard(guard, { query: { dir: sparse } }).result).reason).toBe(
      'not-a-string',
    );
    expect(denialOf(runGuard(guard, { query: { dir: ['docs/a', undefined] } }).result).reason).toBe(
      'not-a-string',
    );
  });

  it('an empty array is missing: denied when required, skipped when optional', () => {
    expect(denialOf(runGuard(guard, { query: { dir: [] } }).result)).toEqual({
      reason: 'missing-path',
      label: 'query.dir',
    });
    const { result, info } = runGuard(guard, { query: { dir: 'docs' }, body: { list: [] } });
    expect(result).toEqual({ ok: true });
    expect(info.body).toEqual({});
  });
});

describe('checkRequest: paramSegments joins a params array into one path', () => {
  const segmented = (paths: unknown[]) =>
    compileRouteGuard(policy, { mode: 'read', paths } as RouteGuardOptions, 'GET /f/*path', {
      paramSegments: true,
    });
  const guard = segmented([{ params: 'path' }, { query: 'dir', optional: true }]);

  it('joins the segments with / and records the one canonical path', () => {
    const { result, info } = runGuard(guard, { params: { path: ['docs', 'a', 'b.txt'] } });
    expect(result).toEqual({ ok: true });
    expect(info.params).toEqual({ path: `${ROOT}/docs/a/b.txt` });
  });

  it('judges the joined path, not each segment: `..` segments climb out', () => {
    const climbing = { params: { path: ['docs', '..', '..', 'etc', 'passwd'] } };
    expect(denialOf(runGuard(guard, climbing).result)).toEqual({
      reason: 'path-not-in-allowlist',
      label: 'params.path',
      result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/srv/etc/passwd' },
    });
    // `docs/../docs` is allowed as one path; checked one by one, its `..` would deny.
    const back = { params: { path: ['docs', '..', 'docs'] } };
    expect(runGuard(guard, back).info.params).toEqual({ path: `${ROOT}/docs` });
    const unjoined = guardOf({ mode: 'read', paths: [{ params: 'path' }] });
    expect(denialOf(runGuard(unjoined, back).result).reason).toBe('path-not-in-allowlist');
  });

  it('a segment holding NUL still denies, and no segments at all is missing', () => {
    const nul = { params: { path: ['docs', 'a\0.txt'] } };
    expect(denialOf(runGuard(guard, nul).result).reason).toBe('nul-byte');
    expect(denialOf(runGuard(guard, { params: { path: [] } }).result)).toEqual({
      reason: 'missing-path',
      label: 'params.path',
    });
  });

  it('leaves the other sources’ arrays lists of paths', () => {
    const request = { params: { path: ['docs', 'a'] }, query: { dir: ['docs/x', '../../y'] } };
    expect(denialOf(runGuard(guard, request).result).label).toBe('query.dir');
    const allowed = { params: { path: ['docs', 'a'] }, query: { dir: ['docs/x', 'docs/y'] } };
    expect(runGuard(guard, allowed).info.query).toEqual({
      dir: [`${ROOT}/docs/x`, `${ROOT}/docs/y`],
    });
  });

  it('an index into a segmented param selects nothing, as into a string', () => {
    const indexed = segmented([{ params: ['path', 0] }]);
    expect(denialOf(runGuard(indexed, { params: { path: ['docs', 'a'] } }).result)).toEqual({
      reason: 'missing-path',
      label: 'params.path.0',
    });
  });

  it('a param that is not an array is walked as without paramSegments, a missing one is missing', () => {
    const nested = segmented([{ params: ['dir', 'name'] }]);
    const { result, info } = runGuard(nested, { params: { dir: { name: 'docs/a' } } });
    expect(result).toEqual({ ok: true });
    expect(info.params).toEqual({ 'dir.name': `${ROOT}/docs/a` });
    expect(denialOf(runGuard(nested, { params: {} }).result)).toEqual({
      reason: 'missing-path',
      label: 'params.dir.name',
    });
  });

  it('reads the params object as it is: no copy, nothing written to it', () => {
    const params = Object.freeze({ path: Object.freeze(['docs', 'a']), other: 'x' });
    const { result } = runGuard(guard, { params });
    expect(result).toEqual({ ok: true });
    expect(params).toEqual({ path: ['docs', 'a'], other: 'x' });
  });
});

describe('checkRequest: authorityHost reads `:authority` for a missing host header', () => {
  const hostGuard = (settings: { authorityHost?: boolean }, spec: PathSpec = { headers: 'Host' }) =>
    compileRouteGuard(
      policy,
      { mode: 'read', paths: [{ ...spec, under: 'docs' }] },
      'GET /h',
      settings,
    );
  const guard = hostGuard({ authorityHost: true });

  it('checks `:authority` when no host header came, and records it as the host', () => {
    const { result, info } = runGuard(guard, { headers: { ':authority': 'files.example' } });
    expect(result).toEqual({ ok: true });
    expect(info.headers).toEqual({ host: `${ROOT}/docs/files.example` });
    const climbing = { headers: { ':authority': '..' } };
    expect(denialOf(runGuard(guard, climbing).result)).toMatchObject({
      reason: 'path-not-in-allowlist',
      label: 'headers.host',
    });
  });

  it('a host header wins, an empty one included (as `??` reads it)', () => {
    const both = { headers: { host: '..', ':authority': 'files.example' } };
    expect(denialOf(runGuard(guard, both).result).label).toBe('headers.host');
    const empty = { headers: { host: '', ':authority': 'files.example' } };
    expect(denialOf(runGuard(guard, empty).result)).toEqual({
      reason: 'missing-path',
      label: 'headers.host',
    });
  });

  it('only for host, and only with the setting', () => {
    const authority = { headers: { ':authority': 'files.example' } };
    const missing = { reason: 'missing-path', label: 'headers.host' };
    expect(denialOf(runGuard(hostGuard({}), authority).result)).toEqual(missing);
    const other = hostGuard({ authorityHost: true }, { headers: 'x-host' });
    expect(denialOf(runGuard(other, authority).result).label).toBe('headers.x-host');
  });

  it.each(['params', 'query', 'body'] as const)(
    'only in headers: a missing %s key named host is missing, whatever `:authority` it holds',
    (source) => {
      const guard = hostGuard({ authorityHost: true }, { [source]: 'host' } as unknown as PathSpec);
      const request = { [source]: { ':authority': 'files.example' } };
      expect(denialOf(runGuard(guard, request).result)).toEqual({
        reason: 'missing-path',
        label: `${source}.host`,
      });
    },
  );
});

describe('checkRequest: missing values fail closed', () => {
  const guard = guardOf({ mode: 'read', paths: [{ body: 'from' }] });
  const missing = { ok: false, denial: { reason: 'missing-path', label: 'body.from' } };

  const ROWS: readonly (readonly [string, RequestValues])[] = [
    ['no body', {}],
    ['body undefined', { body: undefined }],
    ['body null', { body: null }],
    ['body a string', { body: 'docs/a' }],
    ['body an array', { body: ['docs/a'] }],
    ['key absent', { body: {} }],
    ['key holding undefined', { body: { from: undefined } }],
    ['empty string', { body: { from: '' } }],
    ['inherited, not own', { body: Object.create({ from: 'docs/a' }) }],
    ['another source', { query: { from: 'docs/a' }, params: { from: 'docs/a' } }],
  ];

  it.each(ROWS)('%s → missing-path', (_name, values) => {
    const { result, info } = runGuard(guard, values);
    expect(result).toEqual(missing);
    expect(info.body).toEqual({});
  });

  it('null is present: a non-string value, not a missing one', () => {
    expect(runGuard(guard, { body: { from: null } }).result).toEqual({
      ok: false,
      denial: {
        reason: 'not-a-string',
        label: 'body.from',
        result: { outcome: 'deny', reason: 'not-a-string' },
      },
    });
  });

  const NON_STRINGS: readonly (readonly [string, unknown])[] = [
    ['number', 42],
    ['boolean', true],
    ['object', { path: 'docs/a' }],
    ['object with toString', { toString: () => 'docs/a' }],
  ];

  it.each(NON_STRINGS)('a %s is not-a-string (never coerced)', (_name, value) => {
    expect(denialOf(runGuard(guard, { body: { from: value } }).result).reason).toBe('not-a-string');
  });

  it('an empty string is skipped when optional', () => {
    const optional = guardOf({ mode: 'read', paths: [{ body: 'from', optional: true }] });
    const { result, info } = runGuard(optional, { body: { from: '' } });
    expect(result).toEqual({ ok: true });
    expect(info.body).toEqual({});
  });

  it.each(['constructor', 'toString', 'hasOwnProperty', 'valueOf'])(
    'an optional %s that is missing reads as undefined, not as Object.prototype’s function',
    (name) => {
      const optional = guardOf({ mode: 'read', paths: [{ query: name, optional: true }] });
      for (const query of [{}, { [name]: '' }]) {
        const { result, info } = runGuard(optional, { query });
        expect(result).toEqual({ ok: true });
        expect(info.query[name]).toBeUndefined();
      }
      const present = runGuard(optional, { query: { [name]: 'docs/a' } });
      expect(present.info.query[name]).toBe(`${ROOT}/docs/a`);
    },
  );

  it('an index selector meets a non-array or runs past the end → missing', () => {
    const g = guardOf({ mode: 'read', paths: [{ body: ['files', 0, 'path'] }] });
    const miss = { ok: false, denial: { reason: 'missing-path', label: 'body.files.0.path' } };
    expect(runGuard(g, { body: { files: [] } }).result).toEqual(miss);
    expect(runGuard(g, { body: { files: { 0: { path: 'docs/a' } } } }).result).toEqual(miss);
    expect(runGuard(g, { body: { files: [{}] } }).result).toEqual(miss);
    expect(runGuard(g, { body: { files: ['docs/a'] } }).result).toEqual(miss);
  });
});

describe('checkRequest: a sources filter checks only those specs', () => {
  // An adapter checks params, query and headers before the body is read (so a
  // denied param refuses an upload early), then everything once it is parsed.
  const guard = guardOf({
    mode: 'read',
    paths: [{ params: 'p' }, { body: 'from' }, { query: 'q' }, { file: 'f' }],
  });
  const early = ['params', 'query', 'headers'] as const;

  it('skips the body spec: an unread body is not missing', () => {
    const info = guard.newInfo();
    const values = { params: { p: 'docs/a' }, query: { q: 'docs/b' } };
    expect(guard.checkRequest(values, info, early)).toEqual({ ok: true });
    expect(info.params).toEqual({ p: `${ROOT}/docs/a` });
    expect(info.query).toEqual({ q: `${ROOT}/docs/b` });
    expect(info.body).toEqual({});
  });

  it('still denies the listed sources, with their reason and label', () => {
    const values = { params: { p: 'docs/a' }, query: { q: '../etc/passwd' } };
    expect(denialOf(guard.checkRequest(values, guard.newInfo(), early))).toMatchObject({
      reason: 'path-not-in-allowlist',
      label: 'query.q',
    });
    expect(
      denialOf(guard.checkRequest({ query: { q: 'docs/b' } }, guard.newInfo(), early)),
    ).toEqual({
      reason: 'missing-path',
      label: 'params.p',
    });
  });

  it('an empty filter checks nothing; no filter checks every value spec', () => {
    expect(guard.checkRequest({}, guard.newInfo(), [])).toEqual({ ok: true });
    expect(
      denialOf(
        guard.checkRequest({ params: { p: 'docs/a' }, query: { q: 'docs/b' } }, guard.newInfo()),
      ),
    ).toEqual({
      reason: 'missing-path',
      label: 'body.from',
    });
  });

  it('the body alone: only body specs', () => {
    const info = guard.newInfo();
    expect(guard.checkRequest({ body: { from: 'docs/c' } }, info, ['body'])).toEqual({ ok: true });
    expect(info).toEqual({ ...guard.newInfo(), body: { from: `${ROOT}/docs/c` } });
  });
});

describe('checkRequest: with a denials list (report-only), no deny stops the check', () => {
  const guard = guardOf({
    mode: 'write',
    paths: [
      { body: 'a' },
      { body: 'b' },
      { body: 'c' },
      { query: 'list' },
      { headers: 'x-path', optional: true },
    ],
  });
  const values = {
    body: { a: 'docs/read-only.txt', b: 'uploads/ok.txt', c: '../../etc/passwd' },
    query: { list: ['uploads/1', 'uploads/\u0000', 'uploads/3'] },
    headers: { 'x-path': 'reports/q4.csv' },
  };

  it('every deny is listed in spec order, every allowed path recorded, and the result is ok', () => {
    const info = guard.newInfo();
    const denials: PathDenial[] = [];
    expect(guard.checkRequest(values, info, undefined, denials)).toEqual({ ok: true });
    expect(denials.map((d) => [d.label, d.reason])).toEqual([
      ['body.a', 'mode-not-permitted'],
      ['body.c', 'path-not-in-allowlist'],
      ['query.list', 'nul-byte'],
    ]);
    expect(info.body).toEqual({ b: `${ROOT}/uploads/ok.txt` });
    expect(info.query).toEqual({});
    expect(info.headers).toEqual({ 'x-path': `${ROOT}/reports/q4.csv` });
  });

  it("a list's first denied element is listed, once however many follow; the list is left out whole", () => {
    const info = guard.newInfo();
    const denials: PathDenial[] = [];
    // A client controls the list's length: one entry per spec bounds the report.
    const list = ['uploads/ok', 'docs/read-only', ...Array(1000).fill('../a'), 'uploads/\u0000'];
    guard.checkRequest({ ...values, query: { list } }, info, undefined, denials);
    expect(denials.filter((d) => d.label === 'query.list').map((d) => d.reason)).toEqual([
      'mode-not-permitted',
    ]);
    expect(info.query).toEqual({});
  });

  it('a value that is neither a string nor a list is listed once', () => {
    for (const value of [42, null, { path: 'uploads/x' }]) {
      const denials: PathDenial[] = [];
      guard.checkRequest(
        { ...values, body: { ...values.body, b: value } },
        guard.newInfo(),
        undefined,
        denials,
      );
      expect(denials.filter((d) => d.label === 'body.b').map((d) => d.reason)).toEqual([
        'not-a-string',
      ]);
    }
  });

  it('a missing required value is listed too; without the list the first deny stops the check', () => {
    const denials: PathDenial[] = [];
    const info = guard.newInfo();
    guard.checkRequest({ body: { b: 'uploads/x' }, query: {} }, info, undefined, denials);
    expect(denials.map((d) => [d.label, d.reason])).toEqual([
      ['body.a', 'missing-path'],
      ['body.c', 'missing-path'],
      ['query.list', 'missing-path'],
    ]);
    expect(info.body).toEqual({ b: `${ROOT}/uploads/x` });
    const { result, info: stopped } = runGuard(guard, values);
    expect(denialOf(result)).toMatchObject({ label: 'body.a', reason: 'mode-not-permitted' });
    expect(stopped.body).toEqual({});
  });
});

describe('checkRequest: own properties only', () => {
  it('constructor on a plain object is missing; a JSON-parsed own one is checked', () => {
    const g = guardOf({ mode: 'read', paths: [{ body: 'constructor' }] });
    expect(runGuard(g, { body: {} }).result).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'body.constructor' },
    });
    const { result, info } = runGuard(g, { body: JSON.parse('{"constructor":"docs/a"}') });
    expect(result).toEqual({ ok: true });
    expect(info.body.constructor).toBe('/srv/root/docs/a');
  });

  it('a JSON-parsed own __proto__ is read and judged like any key', () => {
    const g = guardOf({ mode: 'read', paths: [{ body: '__proto__' }] });
    expect(runGuard(g, { body: {} }).result).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'body.__proto__' },
    });
    const parsed = JSON.parse('{"__proto__":"../../etc/passwd"}');
    expect(denialOf(runGuard(g, { body: parsed }).result)).toMatchObject({
      reason: 'path-not-in-allowlist',
      label: 'body.__proto__',
      result: { path: '/etc/passwd' },
    });
  });

  it('an allowed own __proto__ value lands in info as an own key, not through the setter', () => {
    const g = guardOf({ mode: 'read', paths: [{ body: '__proto__' }] });
    const { result, info } = runGuard(g, { body: JSON.parse('{"__proto__":["docs/a","docs/b"]}') });
    expect(result).toEqual({ ok: true });
    // An ordinary own data property, as a plain assignment makes for any other key.
    expect(Object.getOwnPropertyDescriptor(info.body, '__proto__')).toEqual({
      value: ['/srv/root/docs/a', '/srv/root/docs/b'],
      enumerable: true,
      writable: true,
      configurable: true,
    });
    expect(Object.keys(info.body)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(info.body)).toBe(Object.prototype);
  });

  it('prototype keys of the query object are not values', () => {
    const g = guardOf({ mode: 'read', paths: [{ query: 'toString' }] });
    expect(runGuard(g, { query: {} }).result).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'query.toString' },
    });
  });
});

/** A proxy already revoked: even Array.isArray throws on it. */
function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable([], {});
  revoke();
  return proxy;
}

describe('checkRequest: a read that throws is a failing value, not a throw', () => {
  const throwing = (): never => {
    throw new URIError('URI malformed');
  };
  const getter = { enumerable: true, get: throwing };
  const ROWS: readonly (readonly [string, unknown, RequestValues])[] = [
    ['a key', { query: 'p' }, { query: Object.defineProperty({}, 'p', getter) }],
    [
      'an optional key',
      { query: 'p', optional: true },
      { query: Object.defineProperty({}, 'p', getter) },
    ],
    ['a key list', { body: ['a', 'p'] }, { body: { a: Object.defineProperty({}, 'p', getter) } }],
    [
      'a list element',
      { body: 'p' },
      { body: { p: Object.defineProperty(['docs/a', ''], 1, getter) } },
    ],
    [
      'a proxy trap',
      { headers: 'x-p' },
      { headers: new Proxy({}, { getOwnPropertyDescriptor: throwing }) },
    ],
    ['a selected revoked proxy', { body: 'p' }, { body: { p: revokedProxy() } }],
    [
      'a selected list whose length throws',
      { body: ['a', 'p'] },
      { body: { a: { p: new Proxy([], { get: throwing }) } } },
    ],
  ];

  it.each(ROWS)('%s: not-a-string', (_name, spec, values) => {
    const g = guardOf({ mode: 'read', paths: [spec] });
    expect(denialOf(runGuard(g, values).result).reason).toBe('not-a-string');
  });

  it.each(['params', 'query', 'body', 'headers'] as const)(
    'a request whose %s getter throws (Express 5 parses req.query on each read)',
    (source) => {
      const spec = source === 'headers' ? { headers: 'x-p' } : { [source]: 'p' };
      const g = guardOf({ mode: 'read', paths: [spec] });
      const request = Object.defineProperty({}, source, getter) as RequestValues;
      expect(denialOf(runGuard(g, request).result).reason).toBe('not-a-string');
    },
  );

  it('a segmented param whose read throws', () => {
    const g = compileRouteGuard(policy, { mode: 'read', paths: [{ params: 'p' }] }, 'GET /f/*p', {
      paramSegments: true,
    });
    const params = Object.defineProperty({}, 'p', getter);
    expect(denialOf(runGuard(g, { params }).result).reason).toBe('not-a-string');
  });
});

describe('checkRequest: `under` joins the value as a relative path', () => {
  const guard = guardOf({
    mode: 'write',
    paths: [
      { body: 'name', under: 'uploads', optional: true },
      { query: 'report', under: '.', optional: true },
      { params: 'abs', optional: true },
    ],
  });

  const ALLOWED: readonly (readonly [string, RequestValues, string, string])[] = [
    ['a plain name', { body: { name: 'a.png' } }, 'body.name', '/srv/root/uploads/a.png'],
    ['a leading /', { body: { name: '/etc/passwd' } }, 'body.name', '/srv/root/uploads/etc/passwd'],
    ['dot segments', { body: { name: './x/../y' } }, 'body.name', '/srv/root/uploads/y'],
    [
      'a backslash',
      { body: { name: 'a\\..\\..\\x' } },
      'body.name',
      '/srv/root/uploads/a\\..\\..\\x',
    ],
    ['%2e is literal', { body: { name: '%2e%2e/x' } }, 'body.name', '/srv/root/uploads/%2e%2e/x'],
    [
      'under the root',
      { query: { report: '/reports/q3.csv' } },
      'query.report',
      '/srv/root/reports/q3.csv',
    ],
  ];

  it.each(ALLOWED)('%s', (_name, values, label, path) => {
    const { result, info } = runGuard(guard, values);
    expect(result).toEqual({ ok: true });
    const [source, key] = label.split('.') as [keyof RequestValues, string];
    expect(info[source]).toEqual({ [key]: path });
  });

  it('.. in the value can still climb and is judged by the policy', () => {
    expect(denialOf(runGuard(guard, { body: { name: '../docs/a' } }).result)).toEqual({
      reason: 'mode-not-permitted',
      label: 'body.name',
      result: {
        outcome: 'deny',
        reason: 'mode-not-permitted',
        path: '/srv/root/docs/a',
        rule: 'docs/**',
      },
    });
    expect(denialOf(runGuard(guard, { body: { name: '../../../etc/passwd' } }).result)).toEqual({
      reason: 'path-not-in-allowlist',
      label: 'body.name',
      result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/etc/passwd' },
    });
    const { result, info } = runGuard(guard, { body: { name: '../reports/x' } });
    expect(result).toEqual({ ok: true });
    expect(info.body).toEqual({ name: '/srv/root/reports/x' });
  });

  it('without under, an absolute value stays absolute', () => {
    expect(denialOf(runGuard(guard, { params: { abs: '/reports/q3.csv' } }).result)).toMatchObject({
      reason: 'path-not-in-allowlist',
      result: { path: '/reports/q3.csv' },
    });
    expect(runGuard(guard, { params: { abs: '/srv/root/reports/q3.csv' } }).info.params).toEqual({
      abs: '/srv/root/reports/q3.csv',
    });
    expect(runGuard(guard, { params: { abs: 'reports/q3.csv' } }).info.params).toEqual({
      abs: '/srv/root/reports/q3.csv',
    });
  });

  it('a non-string value is not stringified into the joined path', () => {
    expect(
      denialOf(runGuard(guard, { body: { name: { toString: () => 'a.png' } } }).result).reason,
    ).toBe('not-a-string');
    expect(denialOf(runGuard(guard, { body: { name: 7 } }).result).reason).toBe('not-a-string');
    expect(denialOf(runGuard(guard, { body: { name: 'a\0.png' } }).result).reason).toBe('nul-byte');
  });

  it('each array element is joined under the directory', () => {
    const { info } = runGuard(guard, { body: { name: ['a', '/b'] } });
    expect(info.body).toEqual({ name: ['/srv/root/uploads/a', '/srv/root/uploads/b'] });
  });
});

// --- checkFile ------------------------------------------------------------------------------

describe('path-too-long: a value longer than MAX_PATH_LENGTH is refused unread', () => {
  const asked: string[] = [];
  const watched = new PermissionPolicy({
    root: ROOT,
    permissions: { fs: ['rw:uploads/**', 'docs/**'] },
    resolve: (path) => {
      asked.push(path);
      return path;
    },
  });
  const guard = guardOf(
    {
      mode: 'write',
      paths: [
        { body: 'path', optional: true },
        { body: 'list', optional: true },
        { query: 'name', under: 'uploads', optional: true },
        { file: 'doc', under: 'uploads' },
      ],
    },
    watched,
  );
  /** `uploads/` and as many `a`s as make `length` characters. */
  const ofLength = (length: number) => `uploads/${'a'.repeat(length - 8)}`;

  it('checks 4,096 characters and refuses 4,097, before canonicalizing or resolving', () => {
    expect(MAX_PATH_LENGTH).toBe(4096);
    asked.length = 0;
    const at = runGuard(guard, { body: { path: ofLength(4096) } });
    expect(at.info.body).toEqual({ path: `${ROOT}/${ofLength(4096)}` });
    expect(asked).toEqual([`${ROOT}/${ofLength(4096)}`]);
    asked.length = 0;
    expect(runGuard(guard, { body: { path: ofLength(4097) } }).result).toEqual({
      ok: false,
      denial: { reason: 'path-too-long', label: 'body.path' },
    });
    expect(asked).toEqual([]);
  });

  it('counts UTF-16 code units as sent: 4,096 two-byte letters pass, a value short once canonical does not', () => {
    const wide = `uploads/${'é'.repeat(4088)}`;
    expect(runGuard(guard, { body: { path: wide } }).info.body).toEqual({
      path: `${ROOT}/${wide}`,
    });
    const padded = `${'./'.repeat(2045)}uploads/x`;
    expect(padded.length).toBe(4099);
    expect(denialOf(runGuard(guard, { body: { path: padded } }).result).reason).toBe(
      'path-too-long',
    );
  });

  it('counts the value, not the `under` it is joined below', () => {
    const name = 'a'.repeat(4096);
    expect(runGuard(guard, { query: { name } }).info.query).toEqual({
      name: `${ROOT}/uploads/${name}`,
    });
    expect(denialOf(runGuard(guard, { query: { name: `${name}a` } }).result)).toEqual({
      reason: 'path-too-long',
      label: 'query.name',
    });
  });

  it('refuses a list for one long element, and a multipart filename', () => {
    const list = ['uploads/a', ofLength(5000)];
    expect(denialOf(runGuard(guard, { body: { list } }).result)).toEqual({
      reason: 'path-too-long',
      label: 'body.list',
    });
    expect(guard.checkFile('doc', 'a'.repeat(4097))).toEqual({
      ok: false,
      denial: { reason: 'path-too-long', label: 'file doc' },
    });
    expect(fileOf(guard.checkFile('doc', 'a'.repeat(4096))).path).toBe(
      `${ROOT}/uploads/${'a'.repeat(4096)}`,
    );
  });

  it('counts only strings: a longer non-string (an object with a length, a nested list) is not-a-string', () => {
    const long = { length: 5000 };
    const nested = [Array.from({ length: 5000 }, () => 'a')];
    expect(denialOf(runGuard(guard, { body: { path: long } }).result).reason).toBe('not-a-string');
    expect(denialOf(runGuard(guard, { body: { list: nested } }).result).reason).toBe(
      'not-a-string',
    );
  });

  it('is listed in report-only mode like any deny', () => {
    const denials: PathDenial[] = [];
    const info = guard.newInfo();
    const values: RequestValues = { body: { path: ofLength(4097), list: ['uploads/b'] } };
    expect(guard.checkRequest(values, info, undefined, denials)).toEqual({ ok: true });
    expect(denials).toEqual([{ reason: 'path-too-long', label: 'body.path' }]);
    expect(info.body).toEqual({ list: [`${ROOT}/uploads/b`] });
  });
});

describe('checkFile: multipart filenames', () => {
  const guard = guardOf({
    mode: 'write',
    paths: [
      { file: true, under: 'uploads', optional: true },
      { file: 'avatar', under: 'uploads/avatars' },
      { file: 'doc' },
      { file: 'readme', under: 'docs', optional: true },
    ],
  });

  it('a declared field is joined under its directory and returns the checked file', () => {
    expect(guard.checkFile('avatar', 'me.png')).toEqual({
      ok: true,
      file: { field: 'avatar', filename: 'me.png', path: '/srv/root/uploads/avatars/me.png' },
    });
  });

  it('the exact field wins over `true`, whatever the declaration order', () => {
    expect(fileOf(guard.checkFile('avatar', 'x')).path).toBe('/srv/root/uploads/avatars/x');
    expect(fileOf(guard.checkFile('other', 'x')).path).toBe('/srv/root/uploads/x');
  });

  it('`true` takes every undeclared field', () => {
    expect(guard.checkFile('attachment', 'notes.txt')).toEqual({
      ok: true,
      file: { field: 'attachment', filename: 'notes.txt', path: '/srv/root/uploads/notes.txt' },
    });
  });

  it('without `true`, an undeclared field is unexpected-file and never named', () => {
    const only = guardOf({ mode: 'write', paths: [{ file: 'avatar', under: 'uploads' }] });
    const result = only.checkFile('<script>field', 'a.png');
    expect(result).toEqual({ ok: false, denial: { reason: 'unexpected-file', label: 'file' } });
    // The adapters answer parts the guard never saw with the same, unchangeable, denial.
    expect(denialOf(result)).toBe(UNEXPECTED_FILE);
    expect(Object.isFrozen(UNEXPECTED_FILE)).toBe(true);
    const body = JSON.stringify(denyBody(denialOf(result)));
    expect(body).not.toContain('script');
    expect(body).not.toContain('a.png');
  });

  it('an empty or undefined filename of a required field is missing-path', () => {
    const missing = { ok: false, denial: { reason: 'missing-path', label: 'file avatar' } };
    expect(guard.checkFile('avatar', '')).toEqual(missing);
    expect(guard.checkFile('avatar', undefined)).toEqual(missing);
    expect(guard.checkFile('doc', '')).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'file doc' },
    });
  });

  it('an optional field lets an empty or undefined filename go, with no file (an empty file input)', () => {
    for (const field of ['readme', 'other']) {
      expect(guard.checkFile(field, ''), field).toEqual({ ok: true, file: undefined });
      expect(guard.checkFile(field, undefined), field).toEqual({ ok: true, file: undefined });
    }
    // Only a missing name is let go: a name that is there is checked as ever.
    expect(denialOf(guard.checkFile('other', '../../x')).reason).toBe('path-not-in-allowlist');
    expect(denialOf(guard.checkFile('other', '.')).reason).toBe('missing-path');
    expect(denialOf(guard.checkFile('other', null)).reason).toBe('not-a-string');
  });

  it('a filename whose last segment is empty, . or .. names a directory: missing-path', () => {
    for (const name of ['sub/', 'a/b/', 'sub/.', 'a/b/..', 'a//']) {
      for (const field of ['avatar', 'other']) {
        expect(denialOf(guard.checkFile(field, name)).reason, `${field} ${name}`).toBe(
          'missing-path',
        );
      }
    }
    // Dots that end or fill part of a name leave it a name.
    for (const name of ['sub/x.', 'sub/x..', 'a/b..c']) {
      expect(guard.checkFile('avatar', name).ok, name).toBe(true);
    }
  });

  it('a filename that names the directory itself is missing-path', () => {
    for (const name of ['.', 'x/..', '/', './', '../avatars', '../../uploads/avatars']) {
      expect(guard.checkFile('avatar', name), name).toEqual({
        ok: false,
        denial: { reason: 'missing-path', label: 'file avatar' },
      });
    }
  });

  it('a non-string filename is not-a-string', () => {
    expect(guard.checkFile('avatar', null)).toEqual({
      ok: false,
      denial: {
        reason: 'not-a-string',
        label: 'file avatar',
        result: { outcome: 'deny', reason: 'not-a-string' },
      },
    });
    expect(denialOf(guard.checkFile('avatar', 7)).reason).toBe('not-a-string');
  });

  const TRAVERSALS: readonly (readonly [string, string, FileResult])[] = [
    [
      '../../etc/cron.d/x climbs out of the root and is denied',
      '../../etc/cron.d/x',
      {
        ok: false,
        denial: {
          reason: 'path-not-in-allowlist',
          label: 'file *',
          result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/srv/etc/cron.d/x' },
        },
      },
    ],
    [
      '../../../etc/cron.d/x reaches /etc and is denied',
      '../../../etc/cron.d/x',
      {
        ok: false,
        denial: {
          reason: 'path-not-in-allowlist',
          label: 'file *',
          result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/etc/cron.d/x' },
        },
      },
    ],
    [
      '../x climbs to the root itself, which is not listed',
      '../x',
      {
        ok: false,
        denial: {
          reason: 'path-not-in-allowlist',
          label: 'file *',
          result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/srv/root/x' },
        },
      },
    ],
    [
      '..\\..\\x is one literal name under uploads (a dotfile, so not listed)',
      '..\\..\\x',
      {
        ok: false,
        denial: {
          reason: 'path-not-in-allowlist',
          label: 'file *',
          result: {
            outcome: 'deny',
            reason: 'path-not-in-allowlist',
            path: '/srv/root/uploads/..\\..\\x',
          },
        },
      },
    ],
    [
      'x\\..\\..\\y is one literal name under uploads',
      'x\\..\\..\\y',
      {
        ok: true,
        file: { field: 'f', filename: 'x\\..\\..\\y', path: '/srv/root/uploads/x\\..\\..\\y' },
      },
    ],
    [
      '/etc/passwd stays under uploads',
      '/etc/passwd',
      {
        ok: true,
        file: { field: 'f', filename: '/etc/passwd', path: '/srv/root/uploads/etc/passwd' },
      },
    ],
    [
      'a NUL is nul-byte',
      'evil.php\0.png',
      {
        ok: false,
        denial: {
          reason: 'nul-byte',
          label: 'file *',
          result: { outcome: 'deny', reason: 'nul-byte' },
        },
      },
    ],
    [
      'a lone surrogate is invalid-unicode',
      'a\uDC00.png',
      {
        ok: false,
        denial: {
          reason: 'invalid-unicode',
          label: 'file *',
          result: { outcome: 'deny', reason: 'invalid-unicode' },
        },
      },
    ],
  ];

  it.each(TRAVERSALS)('%s', (_name, filename, want) => {
    expect(guard.checkFile('f', filename)).toEqual(want);
  });

  it('an NFD filename yields an NFC path', () => {
    const file = fileOf(guard.checkFile('avatar', 'cafe\u0301.png'));
    expect(file.path).toBe('/srv/root/uploads/avatars/caf\u00e9.png');
    expect(file.path).toBe(file.path.normalize('NFC'));
    expect(file.filename).toBe('cafe\u0301.png');
  });

  it('a file spec without under takes the filename as the core does', () => {
    expect(fileOf(guard.checkFile('doc', 'uploads/a.txt')).path).toBe('/srv/root/uploads/a.txt');
    expect(denialOf(guard.checkFile('doc', '/etc/passwd'))).toMatchObject({
      reason: 'path-not-in-allowlist',
      label: 'file doc',
      result: { path: '/etc/passwd' },
    });
  });

  it('the route mode applies: a read-only directory refuses a write', () => {
    expect(denialOf(guard.checkFile('readme', 'a.md'))).toMatchObject({
      reason: 'mode-not-permitted',
      label: 'file readme',
      result: { path: '/srv/root/docs/a.md' },
    });
  });
});

describe('checkMissingFiles', () => {
  const guard = guardOf({
    mode: 'write',
    paths: [
      { file: 'avatar', under: 'uploads' },
      { file: 'cover', under: 'uploads', optional: true },
    ],
  });
  const avatar = fileOf(guard.checkFile('avatar', 'a.png'));
  const cover = fileOf(guard.checkFile('cover', 'c.png'));

  it('a required field nobody sent is missing-path with its label', () => {
    const missing = { ok: false, denial: { reason: 'missing-path', label: 'file avatar' } };
    expect(guard.checkMissingFiles([])).toEqual(missing);
    expect(guard.checkMissingFiles([cover])).toEqual(missing);
  });

  it('passes once every required field was received; optional ones may be absent', () => {
    expect(guard.checkMissingFiles([avatar])).toEqual({ ok: true });
    expect(guard.checkMissingFiles([cover, avatar])).toEqual({ ok: true });
  });

  it('a required `true` spec wants at least one file of any field', () => {
    const any = guardOf({ mode: 'write', paths: [{ file: true, under: 'uploads' }] });
    expect(any.checkMissingFiles([])).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'file *' },
    });
    expect(any.checkMissingFiles([fileOf(any.checkFile('x', 'y'))])).toEqual({ ok: true });
  });

  it('a route without file specs never misses a file', () => {
    expect(guardOf({ mode: 'read', paths: [{ body: 'a' }] }).checkMissingFiles([])).toEqual({
      ok: true,
    });
  });

  it('file specs are not values: checkRequest ignores them', () => {
    expect(runGuard(guard, {}).result).toEqual({ ok: true });
  });
});

// --- denyBody -------------------------------------------------------------------------------

describe('denyBody', () => {
  it('has exactly the 403 shape', () => {
    const body = denyBody({
      reason: 'path-not-in-allowlist',
      label: 'body.from',
      result: { outcome: 'deny', reason: 'path-not-in-allowlist', path: '/srv/root/x' },
    });
    expect(body).toStrictEqual({
      statusCode: 403,
      code: 'PATHGATE_DENIED',
      error: 'Forbidden',
      message: 'body.from: path denied (path-not-in-allowlist)',
      reason: 'path-not-in-allowlist',
    });
    expect(JSON.stringify(body)).not.toContain('/srv/root');
  });

  const REASONS: readonly GuardDenyReason[] = [
    'path-not-in-allowlist',
    'mode-not-permitted',
    'not-a-string',
    'nul-byte',
    'invalid-unicode',
    'relative-root',
    'resolve-failed',
    'missing-path',
    'unexpected-file',
  ];

  it.each(REASONS)('carries the reason %s', (reason) => {
    expect(denyBody({ reason, label: 'file avatar' })).toStrictEqual({
      statusCode: 403,
      code: 'PATHGATE_DENIED',
      error: 'Forbidden',
      message: `file avatar: path denied (${reason})`,
      reason,
    });
  });

  describe('never reveals the root, the canonical path or the value', () => {
    const SECRET = '/srv/secret-root-xyz';
    const MARKER = 'Zq7mark';
    const secret = new PermissionPolicy({
      root: SECRET,
      permissions: { fs: ['docs/**', 'uploads/**'] },
    });
    // Write routes over read-only rules: every value is denied, with every kind of reason.
    const guards = {
      body: guardOf({ mode: 'write', paths: [{ body: 'from' }] }, secret),
      query: guardOf({ mode: 'write', paths: [{ query: 'dir', under: '.' }] }, secret),
      headers: guardOf({ mode: 'write', paths: [{ headers: 'x-path', under: 'uploads' }] }, secret),
      file: guardOf({ mode: 'write', paths: [{ file: 'upload', under: 'uploads' }] }, secret),
    };

    const segment = fc.oneof(
      fc.constantFrom('', '.', '..', 'docs', 'uploads', 'srv', 'secret-root-xyz', '%2e%2e'),
      fc.constantFrom('\\..', 'e\u0301', '\0', '\uD800', '~'),
      fc.string({ maxLength: 10 }),
    );
    // The marker starts the last segment, so a canonical path, when there is one, holds it.
    const value = fc
      .tuple(
        fc.boolean(),
        fc.array(segment, { maxLength: 6 }),
        fc.string({ unit: 'binary', minLength: 12, maxLength: 40 }),
      )
      .map(
        ([absolute, parts, tail]) =>
          `${absolute ? '/' : ''}${[...parts, `${MARKER}${tail.replaceAll('/', '_')}`].join('/')}`,
      );
    const source = fc.constantFrom('body', 'query', 'headers', 'file');

    it('for random values from every source', () => {
      fc.assert(
        fc.property(
          source,
          fc.oneof(value, fc.array(value, { minLength: 1, maxLength: 3 })),
          (from, v) => {
            const one = Array.isArray(v) ? (v[0] as string) : v;
            const result =
              from === 'file'
                ? guards.file.checkFile('upload', one)
                : from === 'body'
                  ? runGuard(guards.body, { body: { from: v } }).result
                  : from === 'query'
                    ? runGuard(guards.query, { query: { dir: v } }).result
                    : runGuard(guards.headers, { headers: { 'x-path': one } }).result;
            const denial = denialOf(result);
            const body = denyBody(denial);
            const json = JSON.stringify(body);
            expect(json).not.toContain('secret-root-xyz');
            expect(json).not.toContain(MARKER);
            expect(body.message).not.toContain(one);
            expect(body.reason).toBe(denial.reason);
            const path = denial.result?.path;
            if (path !== undefined) {
              expect(path).toContain(MARKER);
              expect(json).not.toContain(path);
            }
          },
        ),
        { numRuns: 400 },
      );
    });
  });
});

describe('requiredParams', () => {
  it("names each required params spec's parameter (a list selector's first key), in order", () => {
    expect(
      requiredParams([
        { params: '*' },
        { query: 'q' },
        { params: ['dir', 0] },
        { body: 'to', under: 'uploads' },
        { params: 'file', optional: true },
        { params: 'name', optional: false },
      ]),
    ).toEqual(['*', 'dir', 'name']);
    expect(requiredParams([{ file: true }])).toEqual([]);
    // A source key holding undefined counts as absent, as compileRouteGuard reads it.
    expect(requiredParams([{ body: 'from', params: undefined }])).toEqual([]);
  });
});
