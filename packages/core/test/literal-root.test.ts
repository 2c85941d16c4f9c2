import { describe, expect, it } from 'vitest';
import { checkFs, PermissionPolicy } from '../src/index.js';

// DESIGN.md: each rule has a literal root (its leading whole segments that hold
// no glob syntax); a path that is neither that root nor below it never matches.
// Every rule must lie inside the policy root, which is literal text.

interface RootRow {
  readonly root: string;
  readonly rule: string;
  readonly path: string;
  readonly match: boolean;
}

const row = (root: string, rule: string, path: string, match: boolean): RootRow => ({
  root,
  rule,
  path,
  match,
});

const MATCH_ROWS: readonly RootRow[] = [
  // the literal root is a whole-segment prefix, never a string prefix
  row('/', '/example/foo*', '/example/foo', true),
  row('/', '/example/foo*', '/example/foobar', true),
  row('/', '/example/foo*', '/examplefoo', false),
  row('/', '/example/foo*', '/example2/foo', false),
  row('/', '/example/foo*', '/example', false),
  row('/', '/example/foo*', '/example/foo/bar', false),
  row('/', '/example/**', '/example', true),
  row('/', '/example/**', '/example/a/b', true),
  row('/', '/example/**', '/example2', false),
  row('/', '/example/**', '/examplefoo/a', false),
  row('/srv', '/srv/uploads/**', '/srv/uploads', true),
  row('/srv', '/srv/uploads/**', '/srv/uploads2', false),
  row('/srv', '/srv/uploads/**', '/srv/uploads2/x', false),
  row('/srv', '/srv/up*', '/srv/uploads', true),
  row('/srv', '/srv/up*', '/srv2/up', false),
  row('/srv', '/srv/**', '/srv', true),
  row('/srv', '/srv/**', '/srv2', false),
  row('/srv', '/srv/**', '/srv2/a', false),
  // relative rules are joined to the root
  row('/srv/uploads', '*', '/srv/uploads/a', true),
  row('/srv/uploads', '*', '../uploads2/a', false),
  row('/srv/uploads', '*', '/srv/uploads2/a', false),
  row('/srv/uploads', '**', '/srv/uploads', true),
  row('/srv/uploads', '**', 'a/b', true),
  row('/srv/uploads', '**', '/srv', false),
  row('/srv/uploads', '**', '/srv/uploads2', false),
  row('/srv', 'uploads/*', '/srv/uploads/a', true),
  row('/srv', './uploads/*', '/srv/uploads/a', true),
  row('/srv', 'uploads/*', '/uploads/a', false),
  row('/srv', './../srv/x', '/srv/x', true),
  // a rule at the root itself
  row('/srv', '.', '/srv', true),
  row('/srv', '.', '', true),
  row('/srv', '.', '/srv/a', false),
  row('/srv', './', '/srv', true),
  row('/srv', 'r:.', '/srv', true),
  row('/srv', '/srv', '/srv', true),
  row('/srv', '/srv', '/srv/a', false),
  // the root is literal text: '[', '{', '*', '\' in it are ordinary characters
  row('/srv/[x]', './a', '/srv/[x]/a', true),
  row('/srv/[x]', './a', '/srv/x/a', false),
  row('/srv/[x]', '*', '/srv/[x]/b', true),
  row('/srv/*', 'a', '/srv/*/a', true),
  row('/srv/*', 'a', '/srv/b/a', false),
  row('/srv/{a,b}', 'x', '/srv/{a,b}/x', true),
  row('/srv/{a,b}', 'x', '/srv/a/x', false),
  row('/srv/a?', 'x', '/srv/a?/x', true),
  row('/srv/a?', 'x', '/srv/ab/x', false),
  row('/srv/a\\b', 'x', '/srv/a\\b/x', true),
  row('/srv/a\\b', 'x', '/srv/ab/x', false),
  row('/srv/!x', 'y', '/srv/!x/y', true),
  // an escape-only segment is literal and counts toward the literal root
  row('/srv/[x]', '/srv/\\[x\\]/a', '/srv/[x]/a', true),
  row('/srv/*', '/srv/\\*/a', '/srv/*/a', true),
  row('/srv/*', '/srv/\\*/a', '/srv/b/a', false),
];

describe('literal root', () => {
  it.each(MATCH_ROWS)('root $root, rule $rule ~ $path → $match', ({ root, rule, path, match }) => {
    const p = new PermissionPolicy({ root, permissions: { fs: [rule] } });
    expect(checkFs(p, path, 'read')).toMatchObject(
      match ? { outcome: 'allow' } : { outcome: 'deny', reason: 'path-not-in-allowlist' },
    );
  });
});

const OUTSIDE_ROWS: readonly { readonly root: string; readonly rule: string }[] = [
  { root: '/srv', rule: '/etc/*' },
  { root: '/srv', rule: '/srv2/*' },
  { root: '/srv', rule: '/sr/*' },
  { root: '/srv', rule: '/' },
  { root: '/srv', rule: '/**' },
  { root: '/srv', rule: '/*/x' },
  { root: '/srv', rule: '/sr*/x' },
  { root: '/srv', rule: '/srv*/x' },
  { root: '/srv', rule: '/{srv,etc}/x' },
  { root: '/srv', rule: '/srv/../etc/*' },
  { root: '/srv', rule: '../x/*' },
  { root: '/srv', rule: './../x' },
  { root: '/srv', rule: '..' },
  { root: '/srv', rule: 'rw:/etc/passwd' },
  { root: '/srv/uploads', rule: '/srv/*' },
  { root: '/srv/uploads', rule: '/srv/uploads2/*' },
  // glob syntax in a rule is syntax even where the root has the same text
  { root: '/srv/[x]', rule: '/srv/[x]/a' },
  { root: '/srv/*', rule: '/srv/*/a' },
];

describe('rules must lie inside the policy root', () => {
  it.each(OUTSIDE_ROWS)('root $root rejects $rule', ({ root, rule }) => {
    let thrown: unknown;
    try {
      new PermissionPolicy({ root, permissions: { fs: ['./ok', rule] } });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(TypeError);
    const message = (thrown as TypeError).message;
    expect(message).toMatch(/rule [12]\b/);
    expect(message).toContain(`"${rule}"`);
  });
});

describe('fs: [] denies everything', () => {
  const p = new PermissionPolicy({ root: '/srv', permissions: { fs: [] } });
  it.each([
    { path: '/srv', mode: 'read' },
    { path: '', mode: 'read' },
    { path: 'a', mode: 'read' },
    { path: 'a/b', mode: 'write' },
    { path: '/', mode: 'read' },
    { path: '/etc/passwd', mode: 'write' },
    { path: '.env', mode: 'read' },
  ] as const)('$path ($mode)', ({ path, mode }) => {
    expect(checkFs(p, path, mode)).toMatchObject({
      outcome: 'deny',
      reason: 'path-not-in-allowlist',
    });
  });
});
