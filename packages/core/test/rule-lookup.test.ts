import { describe, expect, it } from 'vitest';
import { checkFs, PermissionPolicy } from '../src/index.js';

// How a policy finds the rules for a path: rules are filed under their literal roots, so a
// check looks only at the path's own directory chain. Many siblings, nested literal roots,
// and which rule a result names (DESIGN.md leaves `rule` open; the index fixes it: the
// deepest literal root first, then rule text order, never the order of `fs`).

const ROOT = '/srv';
const build = (fs: readonly string[]) => new PermissionPolicy({ root: ROOT, permissions: { fs } });

describe('rule lookup: many sibling directories', () => {
  // More siblings under one directory than a short list is kept for, and a few below one.
  const names = Array.from({ length: 20 }, (_, i) => `d${i}`);
  const fs = [...names.map((n) => `${n}/*.txt`), 'd7/sub/**', 'rw:d7/sub/w/*', 'top'];

  it('finds every sibling and nothing beside them', () => {
    const p = build(fs);
    for (const n of names) {
      expect(checkFs(p, `${n}/a.txt`, 'read'), n).toMatchObject({
        outcome: 'allow',
        rule: `${n}/*.txt`,
      });
      expect(checkFs(p, `${n}/a.png`, 'read'), n).toMatchObject({
        outcome: 'deny',
        reason: 'path-not-in-allowlist',
      });
      expect(checkFs(p, `${n}x/a.txt`, 'read'), n).toMatchObject({
        outcome: 'deny',
        reason: 'path-not-in-allowlist',
      });
    }
    expect(checkFs(p, 'd20/a.txt', 'read')).toMatchObject({ reason: 'path-not-in-allowlist' });
    expect(checkFs(p, 'top', 'read')).toMatchObject({ outcome: 'allow', rule: 'top' });
  });

  it('walks below a sibling to the deeper rules, and falls back to the parent rules', () => {
    const p = build(fs);
    expect(checkFs(p, 'd7/sub/x/y', 'read')).toMatchObject({ outcome: 'allow', rule: 'd7/sub/**' });
    expect(checkFs(p, 'd7/sub/w/f', 'write')).toMatchObject({
      outcome: 'allow',
      rule: 'rw:d7/sub/w/*',
    });
    expect(checkFs(p, 'd7/sub/w/f/g', 'write')).toMatchObject({
      outcome: 'deny',
      reason: 'mode-not-permitted',
      rule: 'd7/sub/**',
    });
    expect(checkFs(p, 'd7/other/f', 'read')).toMatchObject({ reason: 'path-not-in-allowlist' });
    expect(checkFs(p, '/etc/d7/sub/x', 'read')).toMatchObject({ reason: 'path-not-in-allowlist' });
    expect(checkFs(p, '/', 'read')).toMatchObject({ reason: 'path-not-in-allowlist' });
  });
});

describe('rule lookup: the rule a result names', () => {
  const orders = (fs: readonly string[]) => [fs, [...fs].reverse(), [...fs].sort()];

  it.each([
    // same literal root: the first rule in text order that decides
    [['rw:a/*', 'a/*', 'a/**'], 'a/x', 'read', 'a/*'],
    [['rw:a/*', 'a/*', 'a/**'], 'a/x', 'write', 'rw:a/*'],
    [['r:a/*', 'a/*', 'rw:a/x*'], 'a/x', 'write', 'rw:a/x*'],
    // a deeper literal root first, whatever the text order
    [['**', 'a/*', 'a/b/*'], 'a/x', 'read', 'a/*'],
    [['**', 'a/*', 'a/b/*'], 'a/b/x', 'read', 'a/b/*'],
    [['**', 'rw:a/**', 'a/b/*'], 'a/b/x', 'write', 'rw:a/**'],
  ] as const)('%j: %s (%s) → %s', (fs, path, mode, rule) => {
    for (const order of orders(fs)) {
      expect(checkFs(build(order), path, mode), order.join(' ')).toMatchObject({
        outcome: 'allow',
        rule,
      });
    }
  });

  it.each([
    [['a/*', 'r:a/*', 'a/**'], 'a/x', 'a/*'],
    [['r:**', 'a/x', 'r:a/**'], 'a/x', 'a/x'],
  ] as const)('mode-not-permitted names the first matching rule: %j', (fs, path, rule) => {
    for (const order of orders(fs)) {
      expect(checkFs(build(order), path, 'write'), order.join(' ')).toEqual({
        outcome: 'deny',
        reason: 'mode-not-permitted',
        path: `${ROOT}/${path}`,
        rule,
      });
    }
  });
});

describe('rule lookup: a literal root thousands of segments deep', () => {
  // The index is built in a loop, not by recursion: 20,000 nested directories overflowed the stack.
  it('builds, and finds the rule at the bottom', () => {
    const deep = 'a/'.repeat(20_000);
    const p = build([`${deep}*.txt`, 'rw:b/*']);
    expect(checkFs(p, `${deep}x.txt`, 'read')).toMatchObject({
      outcome: 'allow',
      rule: `${deep}*.txt`,
    });
    expect(checkFs(p, `${deep}x.bin`, 'read')).toMatchObject({ reason: 'path-not-in-allowlist' });
    expect(checkFs(p, 'b/x', 'write')).toMatchObject({ outcome: 'allow', rule: 'rw:b/*' });
  });
});
