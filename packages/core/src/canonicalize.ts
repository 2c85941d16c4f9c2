import { toNfc } from './nfc.js';
import { readOwn } from './own-key.js';
import { joinSegments } from './segments.js';

/** Why a value or a root could not be canonicalized. */
export type CanonicalizeFailure =
  | 'not-a-string'
  | 'nul-byte'
  | 'invalid-unicode'
  | 'relative-root'
  | 'resolve-failed';

export type CanonicalizeResult =
  | { ok: true; path: string }
  | { ok: false; reason: CanonicalizeFailure };

export interface CanonicalizeOptions {
  /**
   * Called with the lexical canonical path (of the root, and of every value),
   * for example to resolve symlinks. It must return an absolute path; a throw
   * or anything else denies with `resolve-failed`. Default: none.
   */
  resolve?: ((path: string) => string) | undefined;
}

/** A canonical path and its segments, as the policy's matcher wants them. */
export interface CanonicalPath {
  path: string;
  segments: string[];
}

/** A canonical root, and its lexical spelling before the resolver moved it (the same without one). */
export interface CanonicalRoot extends CanonicalPath {
  spelled: string;
}

type Canonical<T = CanonicalPath> =
  | { ok: true; value: T }
  | { ok: false; reason: CanonicalizeFailure };

/** NUL or anything beyond ASCII: the rare strings that need steps 2–4 in full. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is what this scan looks for.
const NEEDS_CHECKS = /[\u0000\u0080-\uffff]/;

/** Steps 1–4: a string, no NUL, well-formed UTF-16; returns its NFC form. */
export function readText(value: unknown): string | { reason: CanonicalizeFailure } {
  // 1. only strings are paths: no coercion of numbers, arrays or objects
  if (typeof value !== 'string') return { reason: 'not-a-string' };
  // ASCII without NUL is well-formed and NFC already: one scan for the common case.
  if (!NEEDS_CHECKS.test(value)) return value;
  // 2. a NUL truncates the path in C APIs underneath fs calls
  if (value.includes('\0')) return { reason: 'nul-byte' };
  // 3. a lone surrogate has no UTF-8 form: the file system would see U+FFFD
  if (!value.isWellFormed()) return { reason: 'invalid-unicode' };
  // 4. NFC, so NFD look-alikes of one name compare equal (ASCII is already NFC)
  return toNfc(value);
}

/** The root of everything, the base of absolute values. */
const TOP: CanonicalPath = Object.freeze({ path: '/', segments: [] }) as CanonicalPath;

/**
 * Steps 5–7 on a checked text: joined to `base` unless absolute, then the
 * lexical walk (the rules of segments.ts, fused into one pass with no
 * split or join, since this runs on every check). The core never decodes:
 * `%2e`, `\` and `~` are ordinary.
 */
function walk(text: string, base: CanonicalPath): CanonicalPath {
  const absolute = text.charCodeAt(0) === 47;
  const segments = absolute ? [] : base.segments.slice();
  const length = text.length;
  // While `clean`, the kept segments are text.slice(keptFrom) verbatim, so the
  // canonical path is the base path plus that slice: no join needed.
  let clean = true;
  let keptFrom = 0;
  let kept = 0;
  for (let start = 0; start <= length; ) {
    let end = text.indexOf('/', start);
    if (end === -1) end = length;
    const size = end - start;
    const dot1 = size === 1 && text.charCodeAt(start) === 46;
    const dot2 = size === 2 && text.charCodeAt(start) === 46 && text.charCodeAt(start + 1) === 46;
    if (size === 0 || dot1) {
      if (kept === 0) keptFrom = end + 1;
      else clean = false;
    } else if (dot2) {
      clean = false;
      segments.pop();
    } else {
      kept++;
      segments.push(text.slice(start, end));
    }
    start = end + 1;
  }
  if (!clean) return { path: joinSegments(segments), segments };
  const prefix = absolute || base.path === '/' ? '' : base.path;
  if (kept === 0) return { path: prefix === '' ? '/' : prefix, segments };
  return { path: `${prefix}/${text.slice(keptFrom)}`, segments };
}

const ignore = (): void => {};

/**
 * A resolver that is async by mistake answers a promise, which is denied and
 * dropped: its rejection, unhandled, would end the process (Node's default),
 * so a request could crash the server. A `then` that throws settles nothing.
 */
function settleDropped(answer: unknown): void {
  if ((typeof answer !== 'object' && typeof answer !== 'function') || answer === null) return;
  try {
    const { then } = answer as { then?: unknown };
    if (typeof then === 'function') then.call(answer, ignore, ignore);
  } catch {}
}

/** Step 8: the resolver's answer is distrusted and normalized again (steps 2–7). */
function resolveStep(lexical: CanonicalPath, resolve: (path: string) => string): Canonical {
  let resolved: unknown;
  try {
    resolved = resolve(lexical.path);
  } catch {
    return { ok: false, reason: 'resolve-failed' };
  }
  if (typeof resolved !== 'string' || !resolved.startsWith('/')) {
    settleDropped(resolved);
    return { ok: false, reason: 'resolve-failed' };
  }
  const text = readText(resolved);
  if (typeof text !== 'string') return { ok: false, reason: text.reason };
  return { ok: true, value: walk(text, TOP) };
}

/** Step 8 when there is a resolver. */
function resolveLexical(
  lexical: CanonicalPath,
  resolve: ((path: string) => string) | undefined,
): Canonical {
  // Any given resolver, null included, is called: one that is not a function is resolve-failed.
  return resolve !== undefined ? resolveStep(lexical, resolve) : { ok: true, value: lexical };
}

/** Steps 5–8 for a checked value against an already canonical root. */
export function canonicalizeText(
  text: string,
  root: CanonicalPath,
  resolve: ((path: string) => string) | undefined,
): Canonical {
  return resolveLexical(walk(text, root), resolve);
}

/**
 * A build error's words for a root that does not canonicalize. A resolver's
 * failure says what the resolver must answer: an `async` one fails here
 * with nothing else to tell it from a resolver that threw.
 */
export function rootFailure(reason: CanonicalizeFailure): string {
  const hint =
    reason === 'resolve-failed'
      ? ': the resolver threw, or did not answer an absolute path synchronously'
      : '';
  return `root must canonicalize to an absolute path (${reason}${hint})`;
}

/** The root's own steps: 1–4, absolute or `relative-root`, 5–8. */
export function canonicalizeRoot(
  root: unknown,
  resolve: ((path: string) => string) | undefined,
): Canonical<CanonicalRoot> {
  const text = readText(root);
  if (typeof text !== 'string') return { ok: false, reason: text.reason };
  if (!text.startsWith('/')) return { ok: false, reason: 'relative-root' };
  const lexical = walk(text, TOP);
  const result = resolveLexical(lexical, resolve);
  return result.ok ? { ok: true, value: { ...result.value, spelled: lexical.path } } : result;
}

/** Full canonicalization (steps 1–8) of a value against an already canonical root. */
export function canonicalizeValue(
  value: unknown,
  root: CanonicalPath,
  resolve: ((path: string) => string) | undefined,
): Canonical {
  const text = readText(value);
  if (typeof text !== 'string') return { ok: false, reason: text.reason };
  return canonicalizeText(text, root, resolve);
}

/**
 * Steps 5–8 for a client's value (the route guard's): one lexically below
 * neither spelling of the root is outside, and is not resolved. What the
 * resolver would find there (a link back in, a loop, a locked folder) must
 * not show in the answer, and no file outside the root is looked at for it.
 * A value below the root is resolved with `resolve` as given: the policy's
 * fenced resolver, which bounds `resolveSymlinks` to the root
 * (fenced-resolve.ts). DESIGN.md's `canonicalize`, predicates and `checkFs`
 * resolve every value (`canonicalizeText`).
 */
export function canonicalizeBelow(
  text: string,
  root: CanonicalRoot,
  resolve: ((path: string) => string) | undefined,
): Canonical {
  const lexical = walk(text, root);
  // Without a resolver nothing is looked at: the fence's test would only cost.
  if (resolve === undefined) return { ok: true, value: lexical };
  const below = isWithin(lexical.path, root.path) || isWithin(lexical.path, root.spelled);
  return below ? resolveStep(lexical, resolve) : { ok: true, value: lexical };
}

/**
 * Canonicalizes `value` against the sandbox `root` (DESIGN.md, steps 1–8):
 * the value's type and text are checked first, then the root's, then the
 * value is joined, walked lexically and, with `options.resolve`, resolved.
 */
export function canonicalize(
  value: unknown,
  root: unknown,
  options?: CanonicalizeOptions,
): CanonicalizeResult {
  const text = readText(value);
  if (typeof text !== 'string') return { ok: false, reason: text.reason };
  const resolve = resolverOf(options);
  const base = canonicalizeRoot(root, resolve);
  if (!base.ok) return base;
  const result = canonicalizeText(text, base.value, resolve);
  return result.ok ? { ok: true, path: result.value.path } : result;
}

/**
 * `options.resolve`, read as an own key: a polluted prototype cannot supply
 * one. Options that cannot be read (a throwing getter, a revoked proxy) give
 * a resolver that throws: they fail as a throwing resolver does, never as
 * no resolver.
 */
export function resolverOf(
  options: CanonicalizeOptions | undefined,
): CanonicalizeOptions['resolve'] {
  if (typeof options !== 'object' || options === null) return undefined;
  try {
    return readOwn(options, 'resolve') as CanonicalizeOptions['resolve'];
  } catch (error) {
    return () => {
      throw error;
    };
  }
}

/** True when the canonical `path` is `root` or lies below it. */
export function isWithin(path: string, root: string): boolean {
  if (root === '/') return true;
  return path === root || (path.startsWith(root) && path.charCodeAt(root.length) === 47);
}
