import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkFs, PermissionPolicy } from '../src/index.js';
import { instance, NAME_CHARS, referenceMatch, segmentPieces } from './glob-reference.js';

// One glob segment against one name: `*`, `?`, literals and classes, astral
// code points and a line break among them, decided as a regular expression
// over code points (the `u` flag; `s`, so that `.` takes a line break too)
// decides it. The matcher runs the runs between `*`s left to right on the
// text itself; the expression is the independent oracle.

const TOKENS: readonly (readonly [glob: string, regex: string])[] = [
  ['a', 'a'],
  ['b', 'b'],
  ['😀', '😀'],
  ['?', '.'],
  ['*', '.*'],
  ['[ab]', '[ab]'],
  ['[!a]', '[^a]'],
  ['[😀-😁]', '[😀-😁]'],
];
const NAME_UNITS = ['a', 'b', 'c', '😀', '😁', '\n'];

const pattern = fc.array(fc.constantFrom(...TOKENS), { minLength: 1, maxLength: 7 });
const name = fc.array(fc.constantFrom(...NAME_UNITS), { minLength: 1, maxLength: 9 });

const allows = (rule: string, value: string) =>
  checkFs(new PermissionPolicy({ root: '/srv', permissions: { fs: [rule] } }), value, 'read')
    .outcome === 'allow';

describe('a glob segment against a name', () => {
  it('decides as the regular expression over code points does', () => {
    fc.assert(
      fc.property(pattern, name, (tokens, units) => {
        const glob = tokens.map(([g]) => g).join('');
        const regex = new RegExp(`^${tokens.map(([, r]) => r).join('')}$`, 'su');
        const text = units.join('');
        expect(allows(`./x/${glob}`, `x/${text}`)).toBe(regex.test(text));
      }),
      { numRuns: 3000 },
    );
  });

  it('reads long names whole: a run found only at their end, or missing from them', () => {
    const long = '7'.repeat(100_000);
    const cases: [string, string, boolean][] = [
      ['IMG_[0-9]*[a-z]*.png', `IMG_0${long}q.png`, true],
      ['IMG_[0-9]*[a-z]*.png', `IMG_0${long}.png`, false],
      ['*[😀-😁]?', `${long}😁😀`, true],
      ['*[😀-😁]?', `${long}😀`, false],
      ['????', `😀😀😀😀`, true],
      ['????', `${long}`, false],
    ];
    for (const [glob, text, allowed] of cases) {
      expect([glob, text.length, allows(`./x/${glob}`, `x/${text}`)]).toEqual([
        glob,
        text.length,
        allowed,
      ]);
    }
  });

  it('counts code points at the edges: U+FFFF is one unit, an astral name one point', () => {
    const cases: [string, string, boolean][] = [
      // One code point in two units cannot fill two `?`s, with or without a `*` before them.
      ['*??', '😀', false],
      ['??', '😀', false],
      // U+FFFF is the last code point of one unit: stepping two would skip the `a`.
      ['?a', '\uFFFFa', true],
      ['*??', '\uFFFFab', true],
      ['*[ab]*', '\uFFFFa', true],
      // A run between `*`s is tried at code points only: from the second unit of
      // 😀, `[!😀]` would take its lone low surrogate and `b` follow it.
      ['a*[!😀]b*c', 'a😀bc', false],
    ];
    for (const [glob, text, allowed] of cases) {
      expect([glob, text, allows(`./x/${glob}`, `x/${text}`)]).toEqual([glob, text, allowed]);
    }
  });
});

describe('a glob segment against a name, over DESIGN’s whole segment grammar', () => {
  const randomName = fc.array(fc.constantFrom(...NAME_CHARS), { minLength: 1, maxLength: 10 });
  const cases = fc
    .tuple(segmentPieces, fc.array(fc.nat(), { minLength: 1 }), randomName, fc.nat(2))
    // Two in three names fit the pattern by construction, so both answers are tried.
    .map(([pieces, picks, random, draw]) => {
      const drawn = instance(pieces, picks);
      return { pieces, name: draw === 0 || drawn === '' ? random.join('') : drawn };
    })
    .filter(({ name }) => name !== '.' && name !== '..');

  it.each([false, true])(
    'decides as a matcher written from DESIGN does (dot: %s)',
    (dot) => {
      fc.assert(
        fc.property(cases, ({ pieces, name }) => {
          const glob = pieces.map((p) => p.text).join('');
          const policy = new PermissionPolicy({
            root: '/srv',
            permissions: { fs: [`./x/${glob}`] },
            dot,
          });
          const allowed = checkFs(policy, `x/${name}`, 'read').outcome === 'allow';
          expect([glob, name, allowed]).toEqual([glob, name, referenceMatch(pieces, name, dot)]);
        }),
        { numRuns: 4000 },
      );
    },
    30_000,
  );
});
