/**
 * Wildcard matching by dynamic programming, in O(pattern × subject) time
 * whatever the input: used for `**` over a path's segments (within one
 * segment, `?` and classes are matched on its text: segment-match.ts). No
 * backtracking regex, so no catastrophic cases on long paths.
 */
export interface SequencePattern<P, S> {
  readonly elements: readonly P[];
  isStar(element: P): boolean;
  /** Whether a star may swallow this subject item (dotfile rule for `**`). */
  starTakes(item: S): boolean;
  matchOne(element: P, item: S): boolean;
}

/** Matches `subject[from..to)` against the whole pattern. */
export function matchSequence<P, S>(
  pattern: SequencePattern<P, S>,
  subject: readonly S[],
  from: number,
  to: number = subject.length,
): boolean {
  const n = to - from;
  let reach = new Uint8Array(n + 1);
  let next = new Uint8Array(n + 1);
  reach[0] = 1;
  for (const element of pattern.elements) {
    const star = pattern.isStar(element);
    next[0] = star ? (reach[0] as number) : 0;
    for (let j = 1; j <= n; j++) {
      const item = subject[from + j - 1] as S;
      const on = star
        ? reach[j] === 1 || (next[j - 1] === 1 && pattern.starTakes(item))
        : reach[j - 1] === 1 && pattern.matchOne(element, item);
      next[j] = on ? 1 : 0;
    }
    // The two rows are reused: no allocation per pattern element.
    [reach, next] = [next, reach];
  }
  return reach[n] === 1;
}
