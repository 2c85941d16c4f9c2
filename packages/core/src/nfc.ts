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
const isNonStarter = (c: string): boolean =>
  MARK.test(c) && (reorders(c, '\u0334') || reorders('\u0301', c));

/** A code point's full canonical decomposition, as code points. */
const decompose = (cp: number): number[] =>
  Array.from(String.fromCodePoint(cp).normalize('NFD'), (part) => part.codePointAt(0) as number);

/** What ordering runs takes: each code point's decomposition, each non-starter's bucket. */
interface Tables {
  readonly decompositions: Map<number, number[]>;
  readonly ranks: Map<number, number>;
  /** One per rank; emptied after each run. */
  readonly buckets: number[][];
}

/** The tables for `texts`: each distinct code point decomposed once, the ranks sorted once. */
function tablesOf(texts: readonly string[]): Tables {
  const decompositions = new Map<number, number[]>();
  for (const text of texts) {
    for (let i = 0; i < text.length; ) {
      const cp = text.codePointAt(i) as number;
      i += cp > 0xffff ? 2 : 1;
      if (!decompositions.has(cp)) decompositions.set(cp, decompose(cp));
    }
  }
  const ranks = ranksOf(decompositions);
  const buckets = Array.from(new Set(ranks.values()), (): number[] => []);
  return { decompositions, ranks, buckets };
}

/**
 * Each distinct non-starter's rank in canonical order (its bucket): equal
 * ranks for equal combining classes. ICU sorts the few distinct marks (at
 * most about a thousand exist); where the class rises, the rank does.
 */
function ranksOf(decompositions: Map<number, number[]>): Map<number, number> {
  const parts = new Set([...decompositions.values()].flat());
  const distinct = [...parts].map((cp) => String.fromCodePoint(cp)).filter(isNonStarter);
  const sorted = [...`a${distinct.join('')}`.normalize('NFD')].slice(1);
  const ranks = new Map<number, number>();
  let rank = -1;
  sorted.forEach((c, i) => {
    if (i === 0 || reorders(c, sorted[i - 1] as string)) rank++;
    ranks.set(c.codePointAt(0) as number, rank);
  });
  return ranks;
}

/** Moves the buckets' code points to `out`, in rank order, leaving them empty. */
function flush(buckets: number[][], out: number[]): void {
  for (const bucket of buckets) {
    for (let i = 0; i < bucket.length; i++) out.push(bucket[i] as number);
    bucket.length = 0;
  }
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
  const { decompositions, ranks, buckets } = tables;
  const out: number[] = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i) as number;
    i += cp > 0xffff ? 2 : 1;
    const parts = decompositions.get(cp) as number[];
    for (let j = 0; j < parts.length; j++) {
      const part = parts[j] as number;
      const rank = ranks.get(part);
      if (rank !== undefined) (buckets[rank] as number[]).push(part);
      else {
        flush(buckets, out);
        out.push(part);
      }
    }
  }
  flush(buckets, out);
  return fromCodePoints(out);
}
