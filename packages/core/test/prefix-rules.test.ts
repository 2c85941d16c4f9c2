import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readText } from '../src/canonicalize.js';
import { compiledOf, decideText } from '../src/check-fs.js';
import { checkFs, PermissionPolicy, resolveSymlinks } from '../src/index.js';
import { MAX_PREFIX_RULES } from '../src/prefix-rules.js';

// The text-only check (prefix-rules.ts) must give the general matcher's answer, rule and
// canonical path included, wherever it answers at all: on random policies of the shapes it
// takes and random paths, many of them plain, many one `.`, `..`, `//` or dotfile away.

const compiled = (root: string, fs: readonly string[], dot = false) =>
  compiledOf(new PermissionPolicy({ root, permissions: { fs }, dot }), 'test');

const NAMES = ['a', 'b', 'ab', 'a.b', '.h', 'é', 'x y'];
const name = fc.constantFrom(...NAMES);
const root = fc.constantFrom('/', '/r', '/r/a', '/r/é');

/** A rule of a shape the prefix check takes: a literal directory, then nothing, `*` or `**`. */
const rule = (r: string) =>
  fc
    .tuple(
      fc.constantFrom('', 'r:', 'rw:'),
      fc.constantFrom('./', '', `${r === '/' ? '' : r}/`),
      fc.array(name, { maxLength: 3 }),
      fc.constantFrom('', '*', '**', '**/**'),
    )
    .map(([mode, base, dirs, tail]) => {
      const glob = [...dirs, ...(tail === '' ? [] : [tail])].join('/');
      return `${mode}${base}${glob === '' && base === '' ? '.' : glob}`;
    });

const policy = root.chain((r) =>
  fc.tuple(fc.constant(r), fc.array(rule(r), { maxLength: 5 }), fc.boolean()),
);

/** Paths near the rules: their names, the forms the walk rewrites, NFD, absolute and relative. */
const pathText = (r: string) =>
  fc
    .tuple(
      fc.constantFrom('', '/', `${r === '/' ? '' : r}/`, '/elsewhere/'),
      fc.array(fc.constantFrom(...NAMES, 'c', '.', '..', '', 'e\u0301'), { maxLength: 5 }),
      fc.constantFrom('', '/'),
    )
    .map(([base, segments, end]) => `${base}${segments.join('/')}${end}`);

describe('prefix rules: the text-only check', () => {
  it('answers exactly as the general matcher wherever it answers', () => {
    let answered = 0;
    let declined = 0;
    fc.assert(
      fc.property(
        policy.chain(([r, fs, dot]) =>
          fc.tuple(fc.constant(compiled(r, fs, dot)), fc.array(pathText(r), { maxLength: 8 })),
        ),
        ([policyForm, paths]) => {
          const prefix = policyForm.prefixRules;
          expect(prefix).toBeDefined();
          for (const path of paths) {
            // The prefix check reads the raw value; the general matcher, the checked text.
            const text = readText(path) as string;
            for (const write of [false, true]) {
              const fast = prefix?.decide(path, write);
              if (fast === undefined) declined++;
              else {
                answered++;
                expect(fast).toStrictEqual(decideText(policyForm, text, write));
              }
            }
          }
        },
      ),
      { numRuns: 2000 },
    );
    // Both sides of the split were exercised, not one of them only.
    expect(answered).toBeGreaterThan(500);
    expect(declined).toBeGreaterThan(500);
  });

  it('agrees on literal roots spelled with escapes or braces, and on names the core never decodes', () => {
    // Escaped literal roots and braced tails (`{*}`, `{**}`) keep the shapes it takes; other
    // braces and classes send a policy to the general matcher. `\\`, `%2e`, `~` and `1:` are
    // ordinary names on both sides.
    const dir = fc.constantFrom(
      'a',
      'a\\*',
      '\\\\',
      '\\.',
      '%2e',
      '~',
      '1:',
      '{a,b}',
      '{a,a/b}',
      '[a]',
    );
    const tail = fc.constantFrom('', '*', '**', '{*}', '{**}', '{*,**}');
    const globOf = ([mode, dirs, last]: [string, string[], string]) =>
      `${mode}${[...dirs, ...(last === '' ? [] : [last])].join('/') || '.'}`;
    let withPrefixForm = 0;
    const value = fc
      .tuple(
        fc.constantFrom('', '/r/'),
        fc.array(fc.constantFrom('a', 'b', 'a*', '*', '\\', '%2e', '~', '1:', '[a]', '.'), {
          maxLength: 4,
        }),
      )
      .map(([base, names]) => base + names.join('/'));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('', 'rw:'), fc.array(dir, { maxLength: 3 }), tail), {
          maxLength: 4,
        }),
        fc.array(value, { maxLength: 6 }),
        (rules, paths) => {
          const form = compiled('/r', rules.map(globOf));
          if (form.prefixRules !== undefined) withPrefixForm++;
          for (const path of paths) {
            for (const write of [false, true]) {
              const fast = form.prefixRules?.decide(path, write);
              const text = readText(path) as string;
              if (fast !== undefined) expect(fast).toStrictEqual(decideText(form, text, write));
            }
          }
        },
      ),
      { numRuns: 3000 },
    );
    expect(withPrefixForm).toBeGreaterThan(500);
  });

  it('takes the common rule shapes, and no other', () => {
    for (const fs of [
      [],
      ['./public/**', 'rw:./uploads/*'],
      ['**'],
      ['./readme.txt', 'rw:/srv/x/**'],
    ]) {
      expect(compiled('/srv', fs).prefixRules, fs.join(' ')).toBeDefined();
    }
    for (const fs of [
      ['*.txt'],
      ['a/**/b'],
      ['a/*/b'],
      ['{a,b}/**'],
      ['a/?'],
      ['a/[bc]'],
      ['a/x*'],
    ]) {
      expect(compiled('/srv', ['./public/**', ...fs]).prefixRules, fs[0]).toBeUndefined();
    }
    // A resolver may move any path, so its answer always goes through the general matcher.
    const resolved = new PermissionPolicy({
      root: '/',
      permissions: { fs: ['./tmp/**'] },
      resolve: resolveSymlinks,
    });
    expect(compiledOf(resolved, 'test').prefixRules).toBeUndefined();
  });

  it('leaves a policy of many rules to the rule index: a miss would test every one of them', () => {
    // 10,000 directory rules: the text check tested each, 28 µs a miss against 0.3 µs by the index.
    const dirs = (n: number) => Array.from({ length: n }, (_, i) => `rw:./u${i}/**`);
    expect(compiled('/srv', dirs(MAX_PREFIX_RULES)).prefixRules).toBeDefined();
    expect(compiled('/srv', dirs(MAX_PREFIX_RULES + 1)).prefixRules).toBeUndefined();
    // Each brace alternative is one more prefix to test.
    const braced = `./{${dirs(MAX_PREFIX_RULES + 1).join(',')}}/**`.replaceAll('rw:./', '');
    expect(compiled('/srv', [braced]).prefixRules).toBeUndefined();
    const policyOf = new PermissionPolicy({ root: '/srv', permissions: { fs: dirs(10_000) } });
    expect(checkFs(policyOf, 'u9999/a', 'write')).toMatchObject({ outcome: 'allow' });
    expect(checkFs(policyOf, 'zz/a', 'read')).toMatchObject({ reason: 'path-not-in-allowlist' });
  });

  it('declines every value that is not its own canonical path below the root', () => {
    const prefix = compiled('/srv', ['**'], true).prefixRules;
    for (const path of [
      '',
      '/',
      '/srv',
      '/srvx/a',
      '/etc/a',
      'a/',
      'a//b',
      './a',
      'a/./b',
      'a/..',
      '.a',
      'a/.b',
      '/srv//a',
      // Not ASCII, or NUL: the general path gives the reason or normalizes.
      'a/\u00e9',
      'a/e\u0301',
      'a\u0000b',
      'a/\ud800',
    ]) {
      expect(prefix?.decide(path, false), JSON.stringify(path)).toBeUndefined();
    }
    expect(prefix?.decide('a/b', false)).toStrictEqual({
      outcome: 'allow',
      path: '/srv/a/b',
      rule: '**',
    });
    expect(prefix?.decide('/srv/a', true)).toStrictEqual({
      outcome: 'deny',
      reason: 'mode-not-permitted',
      path: '/srv/a',
      rule: '**',
    });
  });

  it('a name spelled undefined or null is an ordinary name, on a policy with rules or none', () => {
    for (const fs of [[], ['./public/**']]) {
      const form = compiled('/srv', fs);
      for (const path of [
        'undefined',
        'undefined/a',
        'null/a',
        '/srv/undefined',
        'public/undefined',
      ]) {
        for (const write of [false, true]) {
          const fast = form.prefixRules?.decide(path, write);
          expect(fast, `${fs} ${path}`).toStrictEqual(decideText(form, path, write));
        }
      }
    }
  });

  it('is what checkFs answers with (a plain value never reaches the general matcher)', () => {
    const policyOf = new PermissionPolicy({ root: '/srv', permissions: { fs: ['./public/**'] } });
    const form = compiledOf(policyOf, 'test');
    const general = form.index.candidates.bind(form.index);
    let walked = 0;
    (form.index as { candidates: typeof general }).candidates = (segments) => {
      walked++;
      return general(segments);
    };
    try {
      expect(checkFs(policyOf, 'public/a.txt', 'read')).toMatchObject({ outcome: 'allow' });
      expect(walked).toBe(0);
      expect(checkFs(policyOf, 'public/./a.txt', 'read')).toMatchObject({ outcome: 'allow' });
      expect(walked).toBe(1);
    } finally {
      delete (form.index as { candidates?: unknown }).candidates;
    }
  });
});
