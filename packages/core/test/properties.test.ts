import { posix } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CanonicalizeFailure,
  type CheckResult,
  canonicalize,
  checkFs,
  type FsAccessMode,
  PermissionPolicy,
} from '../src/index.js';
import { anyValue } from './arbitraries.js';

// Properties of the canonical form and of checkFs, checked with fast-check.

type Decision = 'allow' | 'path-not-in-allowlist' | 'mode-not-permitted' | CanonicalizeFailure;
const decision = (result: CheckResult): Decision =>
  result.outcome === 'allow' ? 'allow' : result.reason;

const MODES: readonly FsAccessMode[] = ['read', 'write'];
const LONE_SURROGATE = /\p{Surrogate}/u;

/** The failure DESIGN.md's steps 1–3 give a value, or null when it canonicalizes. */
const expectedFailure = (value: unknown): CanonicalizeFailure | null => {
  if (typeof value !== 'string') return 'not-a-string';
  if (value.includes('\0')) return 'nul-byte';
  if (LONE_SURROGATE.test(value)) return 'invalid-unicode';
  return null;
};

const under = (path: string, root: string): boolean =>
  root === '/' || path === root || path.startsWith(`${root}/`);

// --- canonical form -------------------------------------------------------------------------

const unicodeSegment = fc.constantFrom(
  '',
  '.',
  '..',
  '...',
  'a',
  '.a',
  'e\u0301',
  '\u00e9',
  'A\u030A',
  '\u212B',
  '\u1100\u1161',
  '\uFF0E\uFF0E',
  '\u2024',
  '\\',
  '~',
  '%2e',
  '\uD83D\uDE00',
);
const unicodePath = fc
  .tuple(fc.boolean(), fc.array(unicodeSegment, { maxLength: 8 }))
  .map(([abs, parts]) => (abs ? '/' : '') + parts.join('/'));
const trickyUnit = fc.constantFrom(
  '/',
  '/',
  '.',
  '.',
  'a',
  'e',
  '\u0301',
  '\u00e9',
  '\u212B',
  '\\',
  '\uD800',
  '\uDC00',
  '\0',
);
const value = fc.oneof(
  { arbitrary: unicodePath, weight: 4 },
  { arbitrary: fc.string({ unit: trickyUnit, maxLength: 16 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 12 }), weight: 1 },
);
const root = fc
  .array(fc.constantFrom('', '.', '..', 'srv', 'e\u0301', '\u00e9', '\u212B', '[a]', '*', '~'), {
    maxLength: 4,
  })
  .map((parts) => `/${parts.join('/')}`);

describe('canonical form', () => {
  it('fails exactly on NUL and lone surrogates, and is otherwise absolute, NFC, clean and a fixed point', () => {
    fc.assert(
      fc.property(value, root, root, (v, r, otherRoot) => {
        const result = canonicalize(v, r);
        const failure = expectedFailure(v);
        if (failure !== null) {
          expect(result).toStrictEqual({ ok: false, reason: failure });
          return;
        }
        if (!result.ok)
          throw new Error(`expected ${JSON.stringify(v)} to canonicalize, got ${result.reason}`);
        const p = result.path;
        expect(p.startsWith('/')).toBe(true);
        expect(p).toBe(p.normalize('NFC'));
        if (p !== '/') {
          expect(p.endsWith('/')).toBe(false);
          for (const segment of p.slice(1).split('/')) {
            expect(['', '.', '..']).not.toContain(segment);
          }
        }
        expect(canonicalize(p, otherRoot)).toStrictEqual({ ok: true, path: p });
        expect(canonicalize(p, otherRoot, { resolve: (x) => x })).toStrictEqual({
          ok: true,
          path: p,
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('a relative value without a ".." segment stays under the root; an absolute one ignores it', () => {
    fc.assert(
      fc.property(value, root, root, (v, r, otherRoot) => {
        if (expectedFailure(v) !== null) return;
        const canonicalRoot = canonicalize(r, '/');
        const result = canonicalize(v, r);
        if (!canonicalRoot.ok || !result.ok) throw new Error('expected both to canonicalize');
        if (v.startsWith('/')) {
          expect(canonicalize(v, otherRoot)).toStrictEqual(result);
        } else if (!v.normalize('NFC').split('/').includes('..')) {
          expect(under(result.path, canonicalRoot.path)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});

// --- checkFs --------------------------------------------------------------------------------

// Policy roots: ASCII, with glob characters that must stay literal in a root.
const policyRoot = fc
  .array(fc.constantFrom('srv', 'a', 'b', '*', '[ab]', '{a,b}', '.x'), { maxLength: 3 })
  .map((parts) => `/${parts.join('/')}`);
// Rules from a small grammar, always relative (so always inside the root).
const globSegment = fc.constantFrom(
  'a',
  'b',
  '*',
  '**',
  '.x',
  '{a,b}',
  '[ab]',
  '?',
  'a*',
  '*.x',
  '{.x,b}',
);
const rule = fc
  .tuple(
    fc.constantFrom('', 'r:', 'rw:'),
    fc.constantFrom('', './'),
    fc.array(globSegment, { minLength: 1, maxLength: 3 }),
  )
  .map(([mode, lead, parts]) => `${mode}${lead}${parts.join('/')}`);
const rules = fc.array(
  fc.oneof({ arbitrary: rule, weight: 9 }, { arbitrary: fc.constantFrom('.', 'rw:.'), weight: 1 }),
  {
    maxLength: 6,
  },
);
// Paths from the same alphabet, relative, absolute, or absolute below the root; ASCII, so
// path.posix.resolve is an independent oracle for where they point.
const pathSegment = fc.constantFrom(
  'a',
  'b',
  'ab',
  'x',
  '.x',
  '..',
  '.',
  '',
  '*',
  '{a,b}',
  '[ab]',
  'a,b',
  '?',
  'srv',
  '.x.x',
);
type PathShape = readonly ['rel' | 'abs' | 'under', readonly string[]];
const pathShape: fc.Arbitrary<PathShape> = fc.tuple(
  fc.constantFrom('rel' as const, 'abs' as const, 'under' as const),
  fc.array(pathSegment, { maxLength: 5 }),
);
const toPath = ([kind, parts]: PathShape, root: string): string => {
  const rel = parts.join('/');
  if (kind === 'rel') return rel;
  if (kind === 'abs') return `/${rel}`;
  return `${root}/${rel}`;
};

describe('checkFs', () => {
  it('an allowed path always lies inside the root', () => {
    fc.assert(
      fc.property(
        policyRoot,
        rules,
        fc.boolean(),
        fc.array(pathShape, { minLength: 1, maxLength: 6 }),
        (r, fs, dot, shapes) => {
          const policy = new PermissionPolicy({ root: r, permissions: { fs }, dot });
          const canonicalRoot = posix.resolve(r);
          for (const shape of shapes) {
            const path = toPath(shape, r);
            for (const mode of MODES) {
              if (decision(checkFs(policy, path, mode)) === 'allow') {
                expect(under(posix.resolve(r, path), canonicalRoot)).toBe(true);
              }
            }
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('never throws for any path in either mode; a non-string is denied not-a-string', () => {
    const policy = new PermissionPolicy({
      root: '/srv',
      permissions: { fs: ['**', 'rw:uploads/*'] },
    });
    const open = new PermissionPolicy({ permissions: { fs: ['rw:**'] }, dot: true });
    fc.assert(
      fc.property(anyValue(), (path) => {
        for (const p of [policy, open]) {
          for (const mode of MODES) {
            const result = checkFs(p, path, mode);
            const failure = expectedFailure(path);
            if (failure !== null) {
              expect(result).toMatchObject({ outcome: 'deny', reason: failure });
            } else {
              expect(['allow', 'deny']).toContain(result.outcome);
            }
          }
        }
      }),
      { numRuns: 500 },
    );
  });

  it('shuffling, reversing or repeating the rules never changes a result', () => {
    const case_ = rules.chain((fs) =>
      fc.tuple(
        fc.constant(fs),
        fc.shuffledSubarray(fs, { minLength: fs.length, maxLength: fs.length }),
      ),
    );
    fc.assert(
      fc.property(
        policyRoot,
        case_,
        fc.boolean(),
        fc.array(pathShape, { minLength: 1, maxLength: 6 }),
        (r, [fs, shuffled], dot, shapes) => {
          const build = (list: readonly string[]) =>
            new PermissionPolicy({ root: r, permissions: { fs: list }, dot });
          const base = build(fs);
          const variants = [build(shuffled), build([...fs].reverse()), build([...fs, ...shuffled])];
          for (const shape of shapes) {
            const path = toPath(shape, r);
            for (const mode of MODES) {
              const expected = decision(checkFs(base, path, mode));
              for (const variant of variants) {
                expect(decision(checkFs(variant, path, mode))).toBe(expected);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a policy decides as its single-rule policies combined (any grant allows, any match is mode-not-permitted)', () => {
    fc.assert(
      fc.property(
        policyRoot,
        rules,
        fc.boolean(),
        fc.array(pathShape, { minLength: 1, maxLength: 4 }),
        (r, fs, dot, shapes) => {
          const whole = new PermissionPolicy({ root: r, permissions: { fs }, dot });
          const singles = fs.map(
            (one) => new PermissionPolicy({ root: r, permissions: { fs: [one] }, dot }),
          );
          for (const shape of shapes) {
            const path = toPath(shape, r);
            // Every rule grants read, so a rule matches exactly when its read check allows.
            const matched = singles.some((p) => decision(checkFs(p, path, 'read')) === 'allow');
            const writable = singles.some((p) => decision(checkFs(p, path, 'write')) === 'allow');
            expect(decision(checkFs(whole, path, 'read'))).toBe(
              matched ? 'allow' : 'path-not-in-allowlist',
            );
            expect(decision(checkFs(whole, path, 'write'))).toBe(
              writable ? 'allow' : matched ? 'mode-not-permitted' : 'path-not-in-allowlist',
            );
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('"**" allows exactly the root and what lies below it, dotfiles only with dot: true', () => {
    fc.assert(
      fc.property(
        policyRoot,
        fc.boolean(),
        fc.array(pathShape, { minLength: 1, maxLength: 6 }),
        (r, dot, shapes) => {
          const canonicalRoot = posix.resolve(r);
          const readWrite = new PermissionPolicy({ root: r, permissions: { fs: ['rw:**'] }, dot });
          const readOnly = new PermissionPolicy({ root: r, permissions: { fs: ['./**'] }, dot });
          const none = new PermissionPolicy({ root: r, permissions: { fs: [] }, dot });
          for (const shape of shapes) {
            const path = toPath(shape, r);
            const target = posix.resolve(r, path);
            const below =
              canonicalRoot === '/' ? target.slice(1) : target.slice(canonicalRoot.length + 1);
            const dotted = below.split('/').some((segment) => segment.startsWith('.'));
            const matches = under(target, canonicalRoot) && (dot || !dotted);
            const miss = 'path-not-in-allowlist';
            expect(decision(checkFs(readWrite, path, 'read'))).toBe(matches ? 'allow' : miss);
            expect(decision(checkFs(readWrite, path, 'write'))).toBe(matches ? 'allow' : miss);
            expect(decision(checkFs(readOnly, path, 'read'))).toBe(matches ? 'allow' : miss);
            expect(decision(checkFs(readOnly, path, 'write'))).toBe(
              matches ? 'mode-not-permitted' : miss,
            );
            expect(decision(checkFs(none, path, 'read'))).toBe(miss);
            expect(decision(checkFs(none, path, 'write'))).toBe(miss);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
