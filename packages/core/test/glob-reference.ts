import fc from 'fast-check';

/**
 * An oracle for one glob segment, written from DESIGN's glob table alone:
 * generated pieces carry both their text and what they match, braces are
 * expanded by hand, and a name is matched by plain backtracking over the
 * code points of its NFC. Nothing here shares code with src/.
 */

/** What one element of an expanded alternative matches. */
export type Atom = { star: true } | { star: false; test: (cp: string) => boolean; dot: boolean };

/** A piece of a segment: its glob text and the alternatives it expands to. */
export interface Piece {
  readonly text: string;
  readonly alternatives: readonly (readonly Atom[])[];
}

/**
 * Code points a name is made of: astral ones, both sides of the surrogate
 * gap, glob syntax, and U+0301, which NFC joins to an `a` or `e` before it.
 */
export const NAME_CHARS = [
  'a',
  'b',
  'e',
  '\u0301',
  '.',
  '-',
  ']',
  '[',
  '*',
  '?',
  '\\',
  '{',
  ',',
  'é',
  '\uD7FF',
  '\uE000',
  '\uFFFD',
  '😀',
  '😁',
  '𝒜',
] as const;

const one = (atom: Atom): Piece['alternatives'] => [[atom]];
const literal = (c: string): Atom => ({ star: false, test: (cp) => cp === c, dot: c === '.' });
const wildcard = (test: (cp: string) => boolean): Atom => ({ star: false, test, dot: false });

/**
 * Characters that mean something in a glob (or in a brace or class) are
 * written escaped; so is U+0301, which the glob's NFC would join to the
 * character before it (the `\` between keeps it a mark of its own).
 */
const SPECIAL = new Set(['*', '?', '[', ']', '{', '}', ',', '\\', '-', '!', '^', '\u0301']);

const literalPiece = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(...NAME_CHARS.filter((c) => !SPECIAL.has(c))).map((c) => ({
      text: c,
      alternatives: one(literal(c)),
    })),
  },
  {
    weight: 4,
    arbitrary: fc
      .constantFrom(...NAME_CHARS)
      .map((c) => ({ text: `\\${c}`, alternatives: one(literal(c)) })),
  },
  // e + U+0301 in the glob's text is é once NFC has run, escaped or not.
  fc
    .constantFrom('e\u0301', '\\e\u0301')
    .map((text) => ({ text, alternatives: one(literal('é')) })),
);

const cp = (c: string) => c.codePointAt(0) as number;
const inRange = (lo: string, hi: string) => (c: string) => cp(c) >= cp(lo) && cp(c) <= cp(hi);

/** Classes written as DESIGN allows: `]` first, `-` at an end, negations, ranges over astral points. */
const CLASSES: readonly (readonly [string, (c: string) => boolean])[] = [
  ['[ab]', (c) => c === 'a' || c === 'b'],
  ['[!a]', (c) => c !== 'a'],
  ['[^a]', (c) => c !== 'a'],
  ['[.]', (c) => c === '.'],
  ['[!.]', (c) => c !== '.'],
  ['[]a]', (c) => c === ']' || c === 'a'],
  ['[!]]', (c) => c !== ']'],
  ['[^]a]', (c) => c !== ']' && c !== 'a'],
  ['[a-]', (c) => c === 'a' || c === '-'],
  ['[-a]', (c) => c === 'a' || c === '-'],
  ['[\\]\\-]', (c) => c === ']' || c === '-'],
  ['[😀-😁]', inRange('😀', '😁')],
  ['[!😀-😁]', (c) => !inRange('😀', '😁')(c)],
  ['[😁😀]', (c) => c === '😀' || c === '😁'],
  ['[a-é]', inRange('a', 'é')],
  ['[\uD7FF-\uE000]', inRange('\uD7FF', '\uE000')],
  ['[\uE000-😀]', inRange('\uE000', '😀')],
  ['[!\uE000-\u{10FFFF}]', (c) => !inRange('\uE000', '\u{10FFFF}')(c)],
  ['[*?]', (c) => c === '*' || c === '?'],
  ['[\\\\\\[]', (c) => c === '\\' || c === '['],
  ['[𝒜]', (c) => c === '𝒜'],
  // NFC runs on the glob's text first: e + U+0301 in a class is é.
  ['[e\u0301]', (c) => c === 'é'],
  ['[!e\u0301]', (c) => c !== 'é'],
  ['[a-e\u0301]', inRange('a', 'é')],
  ['[\u0301]', (c) => c === '\u0301'],
];

const simplePiece: fc.Arbitrary<Piece> = fc.oneof(
  { weight: 4, arbitrary: literalPiece },
  { weight: 2, arbitrary: fc.constant({ text: '?', alternatives: one(wildcard(() => true)) }) },
  { weight: 2, arbitrary: fc.constant({ text: '*', alternatives: one({ star: true }) }) },
  {
    weight: 1,
    arbitrary: fc.constant({ text: '**', alternatives: [[{ star: true }, { star: true }]] }),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(...CLASSES)
      .map(([text, test]) => ({ text, alternatives: one(wildcard(test)) })),
  },
);

/** The alternatives of pieces in a row: every choice of each, joined. */
export function expand(pieces: readonly Piece[]): Atom[][] {
  let results: Atom[][] = [[]];
  for (const p of pieces) {
    results = results.flatMap((head) => p.alternatives.map((alt) => [...head, ...alt]));
  }
  return results;
}

const sequence = (piece: fc.Arbitrary<Piece>, max: number) =>
  fc.array(piece, { minLength: 0, maxLength: max });

/** `{a,b}` whose alternatives hold the other syntax, and (once) braces again. */
const bracePiece = (inner: fc.Arbitrary<Piece>): fc.Arbitrary<Piece> =>
  fc.array(sequence(inner, 3), { minLength: 1, maxLength: 3 }).map((alts) => ({
    text: `{${alts.map((a) => a.map((p) => p.text).join('')).join(',')}}`,
    alternatives: alts.flatMap(expand),
  }));

const nested = fc.oneof({ weight: 5, arbitrary: simplePiece }, bracePiece(simplePiece));
const piece = fc.oneof({ weight: 6, arbitrary: simplePiece }, bracePiece(nested));

/** At most 1,024 alternatives, as rule.ts allows. */
export const segmentPieces = fc
  .array(piece, { minLength: 1, maxLength: 8 })
  .filter((pieces) => pieces.reduce((n, p) => n * p.alternatives.length, 1) <= 1024);

/**
 * Whether `atoms` match all of the code points `name`, atom by atom:
 * `reach[j]` says whether the atoms so far can match the first `j`. A
 * table, not backtracking: retrying every split of every star grows
 * exponentially with the stars (one generated case took 7.6 s, and timed
 * its test out).
 */
function matchAtoms(atoms: readonly Atom[], name: readonly string[]): boolean {
  let reach = name.map(() => false).concat(false);
  reach[0] = true;
  for (const atom of atoms) {
    const next = reach.map(() => false);
    const from = reach.indexOf(true);
    if (from === -1) return false;
    if (atom.star) {
      next.fill(true, from);
    } else {
      reach.forEach((ok, j) => {
        if (ok && j < name.length && atom.test(name[j] as string)) next[j + 1] = true;
      });
    }
    reach = next;
  }
  return reach[name.length] === true;
}

/** DESIGN's answer for a segment written as `pieces` against one path segment. */
export function referenceMatch(pieces: readonly Piece[], name: string, dot: boolean): boolean {
  // DESIGN step 4: the path is NFC before anything reads it.
  const points = Array.from(name.normalize('NFC'));
  return expand(pieces).some((atoms) => {
    const first = atoms[0];
    // Dotfiles: only an alternative beginning with a literal `.` reaches one.
    if (!dot && points[0] === '.' && !(first && !first.star && first.dot)) return false;
    return matchAtoms(atoms, points);
  });
}

/**
 * A name some alternative of `pieces` matches, drawn by `picks`: each
 * wildcard takes a fitting code point, each star a few. One in two is
 * spelled decomposed (NFD): the same name once the path is normalized.
 */
export function instance(pieces: readonly Piece[], picks: readonly number[]): string {
  const alternatives = expand(pieces);
  let k = 0;
  const pick = () => picks[k++ % picks.length] as number;
  const atoms = alternatives[pick() % alternatives.length] as Atom[];
  let name = '';
  for (const atom of atoms) {
    const fits = atom.star ? NAME_CHARS : NAME_CHARS.filter(atom.test);
    const count = atom.star ? pick() % 3 : 1;
    for (let n = 0; n < count && fits.length > 0; n++) name += fits[pick() % fits.length];
  }
  return pick() % 2 === 0 ? name.normalize('NFD') : name;
}
