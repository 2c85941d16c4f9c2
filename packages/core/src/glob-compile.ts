import { type BraceEdge, expandGlob, type GlobToken } from './glob-expand.js';
import { GlobSyntaxError, parseGlob } from './glob-parse.js';
import { codePointTest, starChunksTest } from './segment-match.js';
import { pathSegmentKind, type SegmentKind, walkSegments } from './segments.js';
import { matchSequence, type SequencePattern } from './sequence-match.js';

/**
 * Compile: glob text → one matcher per brace alternative, each with its
 * literal root (the leading segments holding no glob syntax), which the
 * policy uses to index it. Done once per rule, at build time.
 */
export interface CompiledGlob {
  /** Leading literal segments, from `/`: a path not at or below them never matches. */
  readonly literalRoot: readonly string[];
  /** Matches a canonical path's segments whose first `literalRoot.length` equal the root. */
  match(segments: readonly string[]): boolean;
  /** What follows the literal root, when it is one of the shapes prefix-rules.ts decides on text. */
  readonly shape: GlobShape | undefined;
}

/**
 * Nothing (`./public/readme.txt`: the literal root alone), one `*` segment
 * (`./uploads/*`: one entry of it), or only `**` (`./public/**`: it and everything below).
 */
export type GlobShape = 'exact' | 'star' | 'globstar';

interface GlobSegment {
  readonly tokens: readonly GlobToken[];
  /** The segment's text when it holds only literal characters. */
  readonly literal: string | undefined;
  /** Holds a wildcard, a class, or characters from braces. */
  readonly syntax: boolean;
  /** Only plain characters: when it reads `.` or `..`, it is a path step. */
  readonly plain: boolean;
}

/** One segment of a pattern below its literal root. */
type SegmentMatcher = { globstar: true } | { globstar: false; test(segment: string): boolean };

function toSegment(tokens: GlobToken[], braced: boolean): GlobSegment {
  const literal = tokens.every((t) => t.type === 'char')
    ? tokens.map((t) => (t as { value: string }).value).join('')
    : undefined;
  const syntax = braced || tokens.some((t) => t.type !== 'char' || t.syntax);
  const plain = !braced && tokens.every((t) => t.type === 'char' && t.plain);
  return { tokens, literal, syntax, plain };
}

function literalSegment(text: string): GlobSegment {
  return { tokens: [], literal: text, syntax: false, plain: true };
}

function splitOnSlash(tokens: readonly (GlobToken | BraceEdge)[]): GlobSegment[] {
  const segments: GlobSegment[] = [];
  let current: GlobToken[] = [];
  let braced = false;
  for (const t of tokens) {
    if (t.type === 'slash') {
      segments.push(toSegment(current, braced));
      current = [];
      braced = false;
    } else if (t.type === 'edge') braced = true;
    else current.push(t);
  }
  segments.push(toSegment(current, braced));
  return segments;
}

// Only written `.` and `..` segments are path steps: one from braces (`a/{..,b}`)
// or escapes (`a/\.\.`) names a segment no canonical path holds, as in the
// unexpanded text, instead of climbing out of the literal root.
const segmentKind = (s: GlobSegment): SegmentKind =>
  s.plain ? pathSegmentKind(s.literal as string) : 'name';

function refusePopOfSyntax(popped: GlobSegment): void {
  if (popped.syntax) throw new GlobSyntaxError('".." cannot pop a segment holding glob syntax');
}

const isStarsAndLiterals = (tokens: readonly GlobToken[]) =>
  tokens.every((t) => t.type === 'star' || t.type === 'char');

function segmentMatcher(segment: GlobSegment, dot: boolean): SegmentMatcher {
  const { tokens, literal } = segment;
  if (literal !== undefined) return { globstar: false, test: (s) => s === literal };
  const [only] = tokens;
  if (tokens.length === 1 && only?.type === 'star' && only.twin === true) return { globstar: true };
  const test = isStarsAndLiterals(tokens) ? starChunksTest(tokens) : codePointTest(tokens);
  // Dotfiles: only a segment that itself begins with a literal `.` may match one.
  const first = tokens[0];
  if (dot || (first?.type === 'char' && first.value === '.')) return { globstar: false, test };
  return { globstar: false, test: (s) => s.charCodeAt(0) !== 46 && test(s) };
}

/** Consecutive `**` match what one does; collapsing them keeps matching linear. */
function collapseGlobstars(matchers: SegmentMatcher[]): SegmentMatcher[] {
  return matchers.filter((m, i) => !(m.globstar && matchers[i - 1]?.globstar));
}

type SegmentTest = (s: string) => boolean;

const testsOf = (matchers: readonly SegmentMatcher[]): SegmentTest[] =>
  matchers.map((m) => (m as { test: SegmentTest }).test);

/** Whether `tests` match `segments[at..]` one for one. */
function testsMatch(
  tests: readonly SegmentTest[],
  segments: readonly string[],
  at: number,
): boolean {
  for (let i = 0; i < tests.length; i++) {
    if (!(tests[i] as SegmentTest)(segments[at + i] as string)) return false;
  }
  return true;
}

/**
 * With `**`: the segments before the first `**` and after the last one each
 * take exactly one path segment, so they are checked in place at the start
 * and at the end; only what lies between goes to the dynamic programme, and
 * a lone `**` there (as in `a/**` or `**` + `/*.txt`) needs just the dotfile test.
 */
function globstarMatcher(
  matchers: SegmentMatcher[],
  offset: number,
  dot: boolean,
): (segments: readonly string[]) => boolean {
  const elements = collapseGlobstars(matchers);
  const first = elements.findIndex((m) => m.globstar);
  const last = elements.length - 1 - [...elements].reverse().findIndex((m) => m.globstar);
  const head = testsOf(elements.slice(0, first));
  const tail = testsOf(elements.slice(last + 1));
  const starTakes = (s: string) => dot || s.charCodeAt(0) !== 46;
  const pattern: SequencePattern<SegmentMatcher, string> = {
    elements: elements.slice(first, last + 1),
    isStar: (m) => m.globstar,
    starTakes,
    matchOne: (m, s) => !m.globstar && m.test(s),
  };
  const loneStar = first === last;
  return (segments) => {
    const from = offset + head.length;
    const to = segments.length - tail.length;
    if (to < from || !testsMatch(head, segments, offset) || !testsMatch(tail, segments, to)) {
      return false;
    }
    if (!loneStar) return matchSequence(pattern, segments, from, to);
    for (let i = from; i < to; i++) if (!starTakes(segments[i] as string)) return false;
    return true;
  };
}

function compileMatcher(
  matchers: SegmentMatcher[],
  offset: number,
  dot: boolean,
): (segments: readonly string[]) => boolean {
  if (matchers.some((m) => m.globstar)) return globstarMatcher(matchers, offset, dot);
  const tests = testsOf(matchers);
  return (segments) =>
    segments.length - offset === tests.length && testsMatch(tests, segments, offset);
}

const isLoneStar = (s: GlobSegment) => {
  const [only] = s.tokens;
  return s.tokens.length === 1 && only?.type === 'star' && only.twin !== true;
};

function shapeOf(
  below: readonly GlobSegment[],
  matchers: readonly SegmentMatcher[],
): GlobShape | undefined {
  if (matchers.length === 0) return 'exact';
  if (matchers.every((m) => m.globstar)) return 'globstar';
  return below.length === 1 && isLoneStar(below[0] as GlobSegment) ? 'star' : undefined;
}

const holdsSlash = (segment: GlobSegment): boolean =>
  segment.literal !== undefined
    ? segment.literal.includes('/')
    : segment.tokens.some((t) => t.type === 'char' && t.value === '/');

function compileAlternative(
  tokens: readonly (GlobToken | BraceEdge)[],
  base: readonly string[] | undefined,
  dot: boolean,
): CompiledGlob {
  const start = base ? base.map(literalSegment) : [];
  const segments = walkSegments(splitOnSlash(tokens), segmentKind, start, refusePopOfSyntax);
  let rootLength = 0;
  while (rootLength < segments.length && !segments[rootLength]?.syntax) rootLength++;
  const literalRoot = segments.slice(0, rootLength).map((s) => s.literal as string);
  // An escaped `/` (`a/b\/c`) is a character no canonical segment holds: the
  // alternative matches nothing, on every path. No shape, so the prefix form
  // never joins its literal root back into `a/b/c`.
  if (segments.some(holdsSlash)) return { literalRoot, match: () => false, shape: undefined };
  const below = segments.slice(rootLength);
  const matchers = below.map((s) => segmentMatcher(s, dot));
  const shape = shapeOf(below, matchers);
  return { literalRoot, match: compileMatcher(matchers, rootLength, dot), shape };
}

/**
 * Compiles normalized glob text (NFC, no NUL, well-formed, no leading `!`).
 * A glob not starting with `/` is joined to `root`, the canonical root's
 * segments. Throws GlobSyntaxError.
 */
export function compileGlob(text: string, root: readonly string[], dot: boolean): CompiledGlob[] {
  const base = text.startsWith('/') ? undefined : root;
  return expandGlob(parseGlob(text)).map((tokens) => compileAlternative(tokens, base, dot));
}
