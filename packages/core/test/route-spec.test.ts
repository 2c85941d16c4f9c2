import { describe, expect, it } from 'vitest';
import {
  compileRouteGuard,
  PermissionPolicy,
  type RouteGuard,
  type RouteGuardOptions,
  requiredParams,
} from '../src/index.js';
import { runGuard } from './guard-run.js';

// What compileRouteGuard prepares from each path spec, seen through the guard: header
// names, labels, the split between value specs and file specs, and `under` against the
// default root `/`. Every guard is built inside its test.

const guardOn = (root: string | undefined, fs: string[], options: unknown): RouteGuard =>
  compileRouteGuard(
    new PermissionPolicy(
      root === undefined ? { permissions: { fs } } : { root, permissions: { fs } },
    ),
    options as RouteGuardOptions,
    'PUT /files',
  );

describe('path specs: header names', () => {
  it('a header selector is lower-cased once, like Node header names', () => {
    const guard = guardOn('/srv', ['docs/**'], { mode: 'read', paths: [{ headers: 'X-Path' }] });
    const { result, info } = runGuard(guard, { headers: { 'x-path': 'docs/a' } });
    expect(result).toEqual({ ok: true });
    expect(info.headers).toEqual({ 'x-path': '/srv/docs/a' });
    expect(runGuard(guard, { headers: { 'X-Path': 'docs/a' } }).result).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'headers.x-path' },
    });
  });

  it('other sources keep the case of their keys', () => {
    const guard = guardOn('/srv', ['docs/**'], { mode: 'read', paths: [{ body: 'Path' }] });
    expect(runGuard(guard, { body: { Path: 'docs/a' } }).info.body).toEqual({
      Path: '/srv/docs/a',
    });
    expect(runGuard(guard, { body: { path: 'docs/a' } }).result).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'body.Path' },
    });
  });
});

describe('path specs: labels', () => {
  const guard = () =>
    guardOn('/srv', ['docs/**'], {
      mode: 'read',
      paths: [
        { params: '*' },
        { query: ['dirs', 1] },
        { body: ['files', 0, 'path'] },
        { headers: 'X-Dir' },
        { file: 'avatar' },
        { file: true },
      ],
    });
  const ok = { params: { '*': 'docs/a' }, query: { dirs: ['docs', 'docs/b'] } };
  const body = { files: [{ path: 'docs/c' }] };

  it('each value spec is named by its source and selector', () => {
    const g = guard();
    expect(runGuard(g, {}).result).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'params.*' },
    });
    expect(runGuard(g, { params: ok.params }).result).toMatchObject({
      denial: { label: 'query.dirs.1' },
    });
    expect(runGuard(g, ok).result).toMatchObject({ denial: { label: 'body.files.0.path' } });
    expect(runGuard(g, { ...ok, body }).result).toMatchObject({
      denial: { label: 'headers.x-dir' },
    });
    expect(runGuard(g, { ...ok, body, headers: { 'x-dir': 'docs' } }).result).toEqual({ ok: true });
  });

  it('a file spec is named by its field, or `*` for every field', () => {
    const g = guard();
    expect(g.checkFile('avatar', '../../x')).toMatchObject({
      ok: false,
      denial: { reason: 'path-not-in-allowlist', label: 'file avatar' },
    });
    expect(g.checkFile('cover', '../../x')).toMatchObject({
      ok: false,
      denial: { reason: 'path-not-in-allowlist', label: 'file *' },
    });
  });
});

describe('path specs: values and files are checked apart', () => {
  it('checkRequest skips file specs, and checkFile never reads value specs', () => {
    const guard = guardOn('/srv', ['rw:uploads/*'], {
      mode: 'write',
      paths: [{ file: 'avatar', under: 'uploads' }],
    });
    expect(runGuard(guard, {}).result).toEqual({ ok: true });
    expect(guard.expectsFiles).toBe(true);
    const values = guardOn('/srv', ['rw:uploads/*'], {
      mode: 'write',
      paths: [{ body: 'name', under: 'uploads' }],
    });
    expect(values.expectsFiles).toBe(false);
    expect(values.checkFile('name', 'a.png')).toEqual({
      ok: false,
      denial: { reason: 'unexpected-file', label: 'file' },
    });
  });
});

describe('path specs: `under` with the default root /', () => {
  const guard = () =>
    guardOn(undefined, ['rw:uploads/**'], {
      mode: 'write',
      paths: [
        { body: 'name', under: 'tmp/../uploads' },
        { file: 'upload', under: './uploads/./' },
      ],
    });

  it('the sub-directory is canonicalized against /', () => {
    const { result, info } = runGuard(guard(), { body: { name: 'a.png' } });
    expect(result).toEqual({ ok: true });
    expect(info.body).toEqual({ name: '/uploads/a.png' });
    expect(guard().checkFile('upload', 'b.png')).toEqual({
      ok: true,
      file: { field: 'upload', filename: 'b.png', path: '/uploads/b.png' },
    });
  });

  it('a filename naming the sub-directory itself is still missing-path', () => {
    for (const name of ['.', 'x/..', './']) {
      expect(guard().checkFile('upload', name), name).toEqual({
        ok: false,
        denial: { reason: 'missing-path', label: 'file upload' },
      });
    }
  });

  it('under "." is the root itself', () => {
    const g = guardOn(undefined, ['rw:**'], { mode: 'write', paths: [{ file: true, under: '.' }] });
    expect(g.checkFile('f', 'a.txt')).toMatchObject({ ok: true, file: { path: '/a.txt' } });
    expect(g.checkFile('f', '/')).toEqual({
      ok: false,
      denial: { reason: 'missing-path', label: 'file *' },
    });
  });
});

describe('path specs are read as own keys', () => {
  /** Runs `check` while Object.prototype carries `keys`, as after a prototype pollution. */
  const polluted = (keys: Record<string, unknown>, check: () => void) => {
    const proto = Object.prototype as Record<string, unknown>;
    for (const [key, value] of Object.entries(keys)) proto[key] = value;
    try {
      check();
    } finally {
      for (const key of Object.keys(keys)) delete proto[key];
    }
  };

  it('an inherited optional does not let a missing value through', () => {
    polluted({ optional: true }, () => {
      const guard = guardOn('/srv', ['docs/**'], { mode: 'read', paths: [{ query: 'file' }] });
      expect(runGuard(guard, { query: {} }).result).toEqual({
        ok: false,
        denial: { reason: 'missing-path', label: 'query.file' },
      });
      expect(requiredParams([{ params: 'name' }])).toEqual(['name']);
    });
  });

  it('an inherited under does not move where a value is checked', () => {
    polluted({ under: 'docs' }, () => {
      const guard = guardOn('/srv', ['docs/**'], { mode: 'read', paths: [{ query: 'file' }] });
      expect(runGuard(guard, { query: { file: 'a' } }).result).toEqual({
        ok: false,
        denial: { reason: 'path-not-in-allowlist', label: 'query.file', result: expect.anything() },
      });
    });
  });

  it('an inherited mode or paths does not complete a route declaration', () => {
    polluted({ mode: 'write', paths: [{ body: 'to', optional: true }] }, () => {
      expect(() => guardOn('/srv', ['rw:docs/**'], { paths: [{ query: 'file' }] })).toThrow(
        'pathgate: route PUT /files: mode must be "read" or "write"',
      );
      expect(() => guardOn('/srv', ['rw:docs/**'], { mode: 'read' })).toThrow(
        'pathgate: route PUT /files: paths must be a non-empty array',
      );
    });
  });

  it('an inherited source is not a second source', () => {
    polluted({ body: 'from' }, () => {
      const guard = guardOn('/srv', ['docs/**'], { mode: 'read', paths: [{ query: 'file' }] });
      expect(runGuard(guard, { query: { file: 'docs/a' } }).info.query).toEqual({
        file: '/srv/docs/a',
      });
    });
  });
});
