/**
 * Wildcard matching by dynamic programming, in O(pattern × subject) time
 * whatever the input: used for `**` over segments and for `?`/`[...]` over
 * code points. No backtracking regex, so no catastrophic cases on long paths.
 */
export interface SequencePattern<P, S> {
  readonly elements: readonly P[];
  isStar(element: P): boolean;
  /** Whether a star may swallow this subject item (dotfile rule for `**`). */
  starTakes(item: S): boolean;
  matchOne(element: P, item: S): boolean;
}

export function matchSequence<P, S>(
  pattern: SequencePattern<P, S>,
  subject: readonly S[],
  from: number,
): boolean {
  const n = subject.length - from;
  let reach = new Array<boolean>(n + 1).fill(false);
  reach[0] = true;
  for (const element of pattern.elements) {
    const next = new Array<boolean>(n + 1).fill(false);
    const star = pattern.isStar(element);
    next[0] = star && (reach[0] as boolean);
    for (let j = 1; j <= n; j++) {
      const item = subject[from + j - 1] as S;
      next[j] = star
        ? (reach[j] as boolean) || ((next[j - 1] as boolean) && pattern.starTakes(item))
        : (reach[j - 1] as boolean) && pattern.matchOne(element, item);
    }
    reach = next;
  }
  return reach[n] as boolean;
}
