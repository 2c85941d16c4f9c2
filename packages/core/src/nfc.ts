/**
 * Unicode NFC (DESIGN step 4) in linear time. ICU puts combining marks in
 * canonical order by insertion, so a run of marks out of order costs the
 * square of its length: one 100 KB JSON value of alternating marks took
 * seconds. A text with a long run of marks is put in canonical order here
 * first, so ICU finds nothing to move; the answer is `normalize('NFC')`'s.
 */

/**
 * A run of 32 marks or more, with the code point before it, whose own
 * decomposition may end in marks that join the run. Every code point that
 * reorders (a non-starter), or decomposes into one first, is a `\p{M}`
 * (nfc.test.ts checks every code point), so a run ends at the next
 * non-mark, and shorter runs cost ICU little. A run is tried only from its
 * start (`^` or a non-mark), so the search is linear too.
 */
const LONG_MARK_RUNS = /(?:^|\P{M})\p{M}{32,}/gu;
const MARK = /\p{M}/u;
/** The cheap first look, for the common value: no 32 marks in a row, nothing for ICU to sort at length. */
const ANY_LONG_RUN = /\p{M}{32}/u;

/** `text` in NFC: ICU's own answer, without its quadratic case. */
export function toNfc(text: string): string {
  if (text.length < 32 || !ANY_LONG_RUN.test(text)) return text.normalize('NFC');
  // Each long run in its canonical decomposition: an equivalent text, so the same NFC.
  const runs = Array.from(text.matchAll(LONG_MARK_RUNS));
  // Worked out once for the whole text: thousands of short runs must not each ask ICU again.
  const tables = tablesOf(runs.map((run) => run[0]));
  let ordered = '';
  let done = 0;
  for (const { 0: run, index } of runs) {
    ordered += text.slice(done, index) + orderedDecomposition(run, tables);
    done = index + run.length;
  }
  return (ordered + text.slice(done)).normalize('NFC');
}

/** Whether NFD reorders `x` before `y`: both are non-starters and `x` has the higher class. */
const reorders = (x: string, y: string): boolean => `a${x}${y}`.normalize('NFD') !== `a${x}${y}`;

/** A non-starter: it moves past a class-1 mark (U+0334) or a class-230 one (U+0301) moves past it. */
const isNonStarter = (c: string): boolean => reorders(c, '\u0334') || reorders('\u0301', c);

/** A code point's full canonical decomposition, as code points. */
const decompose = (cp: number): number[] =>
  Array.from(String.fromCodePoint(cp).normalize('NFD'), (part) => part.codePointAt(0) as number);

// What ICU says about a mark is kept for the process (a few thousand marks
// exist, so the memo stays small; other code points are never kept): asked
// again for every text, each of its distinct marks cost a few tiny
// normalize calls, 1.7 ms for one 3 KB value holding every non-starter,
// where ICU normalizes it in 0.2 ms.

/** Each mark's decomposition (`decompose`). */
const markParts = new Map<number, number[]>();

/** A combining class met so far: one of its marks, and its place in canonical order. */
interface CombiningClass {
  readonly mark: string;
  place: number;
}

/** The classes met so far, in canonical order (ascending class): a few dozen at most. */
const classes: CombiningClass[] = [];

/** Each decomposed mark's class, undefined for a starter. */
const markClass = new Map<number, CombiningClass | undefined>();

const isMark = (cp: number): boolean => MARK.test(String.fromCodePoint(cp));

/** `decompose`, kept for a mark only: starters are countless, and each is decomposed once a text. */
function partsOf(cp: number): number[] {
  const known = markParts.get(cp);
  if (known !== undefined) return known;
  const parts = decompose(cp);
  if (isMark(cp)) markParts.set(cp, parts);
  return parts;
}

/** `c`'s class, found by binary search (`reorders` compares two classes), else added in its place. */
function classEntry(c: string): CombiningClass {
  let low = 0;
  let high = classes.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    const other = classes[middle] as CombiningClass;
    if (reorders(c, other.mark)) low = middle + 1;
    else if (reorders(other.mark, c)) high = middle;
    else return other;
  }
  const entry = { mark: c, place: low };
  classes.splice(low, 0, entry);
  for (let i = low + 1; i < classes.length; i++) (classes[i] as CombiningClass).place = i;
  return entry;
}

/** Classifies a decomposed code point (`markClass`). Every non-starter is a mark. */
function classify(cp: number): void {
  if (markClass.has(cp) || !isMark(cp)) return;
  const c = String.fromCodePoint(cp);
  markClass.set(cp, isNonStarter(c) ? classEntry(c) : undefined);
}

/**
 * What ordering runs takes: each code point's decomposition, and a bucket
 * per class (a non-starter's rank is its class's place).
 */
interface Tables {
  readonly decompositions: Map<number, number[]>;
  /** One per class; emptied after each run. */
  readonly buckets: number[][];
  /** The ranks whose bucket holds code points, as first filled. */
  readonly used: number[];
}

/**
 * The tables for `texts`: each distinct code point decomposed and its parts
 * classified, once. Use them before the next call: a class met later moves
 * the places, and so the ranks, of the classes above it.
 */
export function tablesOf(texts: readonly string[]): Tables {
  const decompositions = new Map<number, number[]>();
  for (const text of texts) {
    for (let i = 0; i < text.length; ) {
      const cp = text.codePointAt(i) as number;
      i += cp > 0xffff ? 2 : 1;
      if (decompositions.has(cp)) continue;
      const parts = partsOf(cp);
      decompositions.set(cp, parts);
      for (const part of parts) classify(part);
    }
  }
  // After every class of the texts is in: places no longer move.
  return { decompositions, buckets: classes.map((): number[] => []), used: [] };
}

/**
 * Moves the buffered code points to `out`, in rank order, leaving the
 * buckets empty. Only the buckets in use are visited: visiting all of
 * them (one per class met) at every starter was half the time of a run
 * of class-0 marks between non-starters, then 45 times ICU's own.
 */
function flush({ buckets, used }: Tables, out: number[]): void {
  if (used.length === 0) return;
  if (used.length > 1) used.sort((a, b) => a - b);
  for (const rank of used) {
    const bucket = buckets[rank] as number[];
    for (let i = 0; i < bucket.length; i++) out.push(bucket[i] as number);
    bucket.length = 0;
  }
  used.length = 0;
}

/** Code points to a string, in slices (an argument list has a limit). */
function fromCodePoints(codePoints: readonly number[]): string {
  let text = '';
  for (let i = 0; i < codePoints.length; i += 4096) {
    text += String.fromCodePoint(...codePoints.slice(i, i + 4096));
  }
  return text;
}

/**
 * `text`'s canonical decomposition (its NFD), the reordering done here:
 * each code point's own decomposition, then each run of non-starters
 * stably sorted by combining class, one bucket per class. Code points are
 * numbers throughout: no string per mark for the collector.
 */
export function orderedDecomposition(text: string, tables = tablesOf([text])): string {
  const { decompositions, buckets, used } = tables;
  const out: number[] = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i) as number;
    i += cp > 0xffff ? 2 : 1;
    const parts = decompositions.get(cp) as number[];
    for (let j = 0; j < parts.length; j++) {
      const part = parts[j] as number;
      const rank = markClass.get(part)?.place;
      if (rank !== undefined) {
        const bucket = buckets[rank] as number[];
        if (bucket.length === 0) used.push(rank);
        bucket.push(part);
      } else {
        flush(tables, out);
        out.push(part);
      }
    }
  }
  flush(tables, out);
  return fromCodePoints(out);
}
