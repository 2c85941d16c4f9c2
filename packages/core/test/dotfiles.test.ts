import { describe, expect, it } from 'vitest';
import { checkFs, PermissionPolicy } from '../src/index.js';

// DESIGN.md, "Dotfiles": with `dot: false` (the default) a segment that begins
// with '.' is matched only by a glob segment that begins with a literal '.'
// (or '\.'); with `dot: true` wildcards match them too.

interface DotRow {
  readonly glob: string;
  readonly path: string;
  /** Expected match with `dot` left out, with `dot: false` and with `dot: true`. */
  readonly hidden: boolean;
  readonly shown: boolean;
  readonly root?: string;
}

const row = (glob: string, path: string, hidden: boolean, shown: boolean, root?: string): DotRow =>
  root === undefined ? { glob, path, hidden, shown } : { glob, path, hidden, shown, root };

// Paths are relative to the root ('/srv' unless the row names one).
const DOT_ROWS: readonly DotRow[] = [
  // wildcards at the start of a segment
  row('*', '.env', false, true),
  row('*', 'env', true, true),
  row('*env', '.env', false, true),
  row('?env', '.env', false, true),
  row('[.]env', '.env', false, true),
  row('[^a]env', '.env', false, true),
  row('[!a]env', '.env', false, true),
  row('[!a]env', 'benv', true, true),
  row('[.a]*', '.x', false, true),
  row('x/*', 'x/.env', false, true),
  row('x/*', 'x/env', true, true),
  // a literal leading '.' (or '\.') opts the segment in
  row('.env', '.env', true, true),
  row('.*', '.env', true, true),
  row('.*', 'env', false, false),
  row('.?nv', '.env', true, true),
  row('.e*', '.env', true, true),
  row('\\.env', '.env', true, true),
  row('\\.*', '.env', true, true),
  // the rule is about the first character only
  row('a*', 'a.env', true, true),
  row('a?env', 'a.env', true, true),
  row('a[.]env', 'a.env', true, true),
  row('*.env', 'x.env', true, true),
  row('*.env', '.x.env', false, true),
  // braces: each alternative on its own
  row('{*,x}', '.env', false, true),
  row('{*,x}', 'x', true, true),
  row('{x,*}', '.env', false, true),
  row('{.env,x}', '.env', true, true),
  row('{x,.env}', '.env', true, true),
  row('{*,.env}', '.env', true, true),
  row('{*,.env}', '.other', false, true),
  row('{\\.env,x}', '.env', true, true),
  row('{.a,b}*', '.ab', true, true),
  row('{*,b}.a', '.x.a', false, true),
  row('{?env,x}', '.env', false, true),
  row('{[.]env,x}', '.env', false, true),
  // nested braces: an inner alternative that begins with a literal '.'
  row('{{.a,b},c}', '.a', true, true),
  row('{{b,.a},c}', '.a', true, true),
  row('{c,{b,*}}', '.a', false, true),
  row('{{*,b},c}', '.a', false, true),
  row('{.{a,b},c}', '.b', true, true),
  // `**` never matches, nor descends through, a dot segment
  row('public/**', 'public', true, true),
  row('public/**', 'public/a/b', true, true),
  row('public/**', 'public/.git', false, true),
  row('public/**', 'public/.git/config', false, true),
  row('public/**', 'public/a/.git/config', false, true),
  row('public/**/config', 'public/.git/config', false, true),
  row('public/**/config', 'public/a/config', true, true),
  row('**', '.env', false, true),
  row('**/.env', '.env', true, true),
  row('**/.env', 'a/.env', true, true),
  row('**/.env', '.git/.env', false, true),
  row('public/.git/**', 'public/.git/config', true, true),
  row('public/.git/**', 'public/.git', true, true),
  row('public/.git/**', 'public/.git/.hooks', false, true),
  // a dot segment in the root or in the literal part of a rule is literal text
  row('*', 'x', true, true, '/home/.app'),
  row('**', 'a/b', true, true, '/srv/.data'),
  row('**', '', true, true, '/srv/.data'),
  row('./.config/*', '.config/a', true, true),
  row('./.config/*', '.config/.b', false, true),
  row('./.config/**', '.config', true, true),
  row('/srv/.data/*', '/srv/.data/x', true, true),
];

type DotSetting = 'default' | 'false' | 'true';

function policyFor(r: DotRow, dot: DotSetting): PermissionPolicy {
  const base = { root: r.root ?? '/srv', permissions: { fs: [r.glob] } };
  if (dot === 'default') return new PermissionPolicy(base);
  return new PermissionPolicy({ ...base, dot: dot === 'true' });
}

const CASES = DOT_ROWS.flatMap((r) =>
  (['default', 'false', 'true'] as const).map((dot) => ({
    ...r,
    dot,
    match: dot === 'true' ? r.shown : r.hidden,
  })),
);

describe('dotfiles', () => {
  it.each(CASES)('$glob ~ $path (dot: $dot) → $match', (c) => {
    const result = checkFs(policyFor(c, c.dot), c.path, 'read');
    expect(result).toMatchObject(
      c.match ? { outcome: 'allow' } : { outcome: 'deny', reason: 'path-not-in-allowlist' },
    );
  });
});
