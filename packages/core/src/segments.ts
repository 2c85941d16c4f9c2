/** How the lexical walk treats one segment: drop it, pop the previous one, or keep it. */
export type SegmentKind = 'skip' | 'up' | 'name';

/** Kind of a path segment: empty and `.` are dropped, `..` pops. */
export function pathSegmentKind(segment: string): SegmentKind {
  if (segment === '' || segment === '.') return 'skip';
  return segment === '..' ? 'up' : 'name';
}

/**
 * The lexical walk of DESIGN step 6 for glob text (paths take a hand-fused
 * copy of these rules in canonicalize.ts: they are on every request): appends
 * `parts` to `out`, dropping skipped parts and letting `..` pop the previous
 * one (never past the start: `..` at `/` stays at `/`). `beforePop` may veto a
 * pop by throwing (globs refuse to pop a segment holding glob syntax).
 */
export function walkSegments<T>(
  parts: readonly T[],
  kindOf: (part: T) => SegmentKind,
  out: T[],
  beforePop?: (popped: T) => void,
): T[] {
  for (const part of parts) {
    const kind = kindOf(part);
    if (kind === 'name') out.push(part);
    else if (kind === 'up' && out.length > 0) {
      beforePop?.(out[out.length - 1] as T);
      out.pop();
    }
  }
  return out;
}

/** Step 7: `/` plus the segments joined by `/`; the root of everything is `/`. */
export function joinSegments(segments: readonly string[]): string {
  return `/${segments.join('/')}`;
}
