import { type CanonicalRoot, isWithin } from './canonicalize.js';
import { BOUNDED_WALK, type resolveWithin } from './realpath.js';

type Resolve = ((path: string) => string) | undefined;

/**
 * The resolver the route guard asks about a client's value. With pathgate's
 * own `resolveSymlinks`, its walk is bounded to the resolved root: it looks
 * at what lies below the root and on its way (the root's ancestors, and the
 * root as written and its ancestors, which the policy's build walked),
 * nothing else. A link inside that points out stops the walk where it
 * leaves, so the value is outside (`path-not-in-allowlist`) whatever lies
 * beyond, or `resolve-failed` when the link's target climbs back with `..`:
 * the answer depends on the link's text only. A link out and back in is then
 * outside too; a link up to an ancestor and back down is followed, as is one
 * through the root as written (`current/uploads` where `current` is the link
 * the root was given by). `resolveSymlinks` is known by the walk it carries
 * (`BOUNDED_WALK`), so that of the package's other build is too. Any other
 * resolver, a wrapper of `resolveSymlinks` included, is asked as it is: its
 * walk is not pathgate's to bound. checkFs and the predicates resolve every
 * value unbounded (DESIGN.md step 8).
 */
export function fencedResolver(resolve: Resolve, root: CanonicalRoot): Resolve {
  const within = boundedWalkOf(resolve);
  if (within === undefined) return resolve;
  const { path: real, spelled } = root;
  // A link inside may name the root by the link it was given by (`current -> releases/5`).
  const bound = (path: string): boolean =>
    isWithin(path, real) || isWithin(real, path) || isWithin(spelled, path);
  return (path) => within(fromRealRoot(path, root), bound);
}

/** The bounded walk a `resolveSymlinks` carries, of this build or the other; else undefined. */
function boundedWalkOf(resolve: Resolve): typeof resolveWithin | undefined {
  try {
    const walk = (resolve as { [BOUNDED_WALK]?: unknown } | undefined)?.[BOUNDED_WALK];
    return typeof walk === 'function' ? (walk as typeof resolveWithin) : undefined;
  } catch {
    // A resolver whose read throws (a proxy) is asked as it is, like any of your own.
    return undefined;
  }
}

/**
 * A value below the root as written, moved below the root as resolved (where
 * the policy's build resolved it): walked from there, it stays in the bound.
 */
function fromRealRoot(path: string, { path: real, spelled }: CanonicalRoot): string {
  if (isWithin(path, real) || !isWithin(path, spelled)) return path;
  return real + path.slice(spelled.length);
}
