import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { canonicalize } from '../src/index.js';
import { orderedDecomposition, toNfc } from '../src/nfc.js';

// Step 4 (NFC) without ICU's quadratic case: a long run of combining marks
// out of canonical order. The answer must stay exactly String#normalize's.

const ACUTE = '\u0301'; // combining class 230
const DOT_BELOW = '\u0323'; // combining class 220: canonical order puts it first

/** ICU's reordering work on `text`: each dot below must move left past every acute before it. */
function inversions(text: string): number {
  let acutes = 0;
  let total = 0;
  for (const c of text) {
    if (c === ACUTE) acutes++;
    else if (c === DOT_BELOW) total += acutes;
  }
  return total;
}

// Marks of many combining classes (1, 10, 129, 130, 220, 230, 232, 240), class-0
// marks (U+0903, U+0F3E), marks that decompose (U+0344, U+0F73, U+0340), and
// starters that compose or decompose: precomposed letters, Hangul, KELVIN SIGN.
const unit = fc.constantFrom(
  'a',
  'e',
  'u',
  'A',
  '/',
  '.',
  'x',
  '\u01d8',
  '\u1ea1',
  '\u00e9',
  '\u212a',
  '\uac00',
  '\u1100',
  '\u1161',
  '\u11a8',
  '\u0301',
  '\u0300',
  '\u0323',
  '\u0334',
  '\u05b0',
  '\u0f71',
  '\u0f72',
  '\u0f73',
  '\u0344',
  '\u0340',
  '\u0345',
  '\u0315',
  '\u0903',
  '\u0f3e',
  '\u0308',
  '\u0327',
  '\u{1d165}',
  '\u{1d16d}',
);

describe('NFC (step 4)', () => {
  afterEach(() => vi.restoreAllMocks());

  it('orders the marks itself before ICU composes: String#normalize gets no reversed run', () => {
    const spy = vi.spyOn(String.prototype, 'normalize');
    const half = 5_000;
    const value = `a${ACUTE.repeat(half)}${DOT_BELOW.repeat(half)}`;
    const result = canonicalize(value, '/srv');
    const work = spy.mock.contexts.reduce<number>((sum, text) => sum + inversions(String(text)), 0);
    spy.mockRestore();
    // Handed as it is, ICU would move every dot below past every acute: half² steps.
    expect(work).toBeLessThan(100);
    // The sorted form normalizes fast, and is the same text up to canonical order.
    const expected = `a${DOT_BELOW.repeat(half)}${ACUTE.repeat(half)}`.normalize('NFC');
    expect(result).toEqual({ ok: true, path: `/srv/${expected}` });
  });

  it('the decomposition ordered here is String#normalize("NFD"), on any text', () => {
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 60 }), (text) => {
        expect(orderedDecomposition(text)).toBe(text.normalize('NFD'));
      }),
      { numRuns: 2_000 },
    );
  });

  it('equals String#normalize with long runs of marks, where the ordered path is taken', () => {
    const marks = fc.constantFrom(
      '\u0301',
      '\u0323',
      '\u0334',
      '\u0f71',
      '\u0f73',
      '\u0344',
      '\u0903',
    );
    const run = fc.string({ unit: marks, minLength: 32, maxLength: 200 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ unit, maxLength: 4 }), run), { maxLength: 4 }),
        (parts) => {
          const text = parts.map(([head, tail]) => head + tail).join('');
          expect(toNfc(text)).toBe(text.normalize('NFC'));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('every combining mark that reorders is a \\p{M} code point (what finds a long run)', () => {
    const reorders = (x: string, y: string) => `a${x}${y}`.normalize('NFD') !== `a${x}${y}`;
    const outside: number[] = [];
    for (let cp = 0x80; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const first = String.fromCodePoint(
        String.fromCodePoint(cp).normalize('NFD').codePointAt(0) as number,
      );
      const nonStarter = reorders(first, '\u0334') || reorders('\u0301', first);
      if (nonStarter && !/\p{M}/u.test(String.fromCodePoint(cp))) outside.push(cp);
    }
    expect(outside).toEqual([]);
  }, 60_000);
});
