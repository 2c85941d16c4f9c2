import * as fs from 'node:fs';
import { posix } from 'node:path';
import type { FsAccessMode } from '../src/index.js';

// A reference for `resolveSymlinks` and checkFs built on the operating system
// itself: the kernel's realpath(3) where the path exists, and where it does
// not, the real parent plus the last name, a dangling link followed through
// its target. Nothing is shared with src/realpath.ts.

/** Past this many steps a walk is taken as a loop (the kernel's own limit is 40 links). */
const MAX_STEPS = 40;

/** The errors that mean the name is not there (the paths here stay below PATH_MAX). */
const NOT_THERE = ['ENOENT', 'ENOTDIR', 'ENAMETOOLONG'];

/** A name that cannot be walked here: a `..` after a missing name or a file, or a loop. */
export class Unresolvable extends Error {}

/**
 * The path `path` (absolute, maybe with `.`, `..` and empty names) names on
 * disk, following links as the kernel would up to the last existing name,
 * then appending what does not exist yet.
 */
export function osResolve(path: string, steps = 0): string {
  if (steps > MAX_STEPS) throw new Unresolvable(`loop at ${path}`);
  try {
    return fs.realpathSync.native(path);
  } catch (error) {
    const code = (error as { code?: string }).code;
    // ENAMETOOLONG below PATH_MAX: a name too long for its folder, so not there.
    if (!NOT_THERE.includes(code ?? '')) throw new Unresolvable(`${code} at ${path}`);
  }
  // Empty and `.` names at the end name the folder before them.
  const names = path.split('/');
  while (names.length > 1 && (names.at(-1) === '' || names.at(-1) === '.')) names.pop();
  const name = names.pop() as string;
  if (name === '..') throw new Unresolvable(`.. below nothing at ${path}`);
  const parent = osResolve(names.join('/') || '/', steps + 1);
  const full = posix.join(parent, name);
  const stat = lstatQuiet(full);
  if (!stat?.isSymbolicLink()) return full;
  // A dangling link (realpath failed on it): where its target would be made.
  const target = fs.readlinkSync(full);
  return osResolve(target.startsWith('/') ? target : `${parent}/${target}`, steps + 1);
}

/** lstat that answers undefined for a name that is missing, too long, or below a non-folder. */
function lstatQuiet(path: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(path, { throwIfNoEntry: false });
  } catch (error) {
    if (NOT_THERE.includes((error as { code?: string }).code ?? '')) return undefined;
    throw error;
  }
}

/** A rule of the simple shapes the reference knows: a literal folder, then `**` or `*`. */
export interface SimpleRule {
  readonly text: string;
  readonly folder: readonly string[];
  readonly below: 'any' | 'one';
  readonly write: boolean;
}

/** Reads `[rw:]./a/b/**` or `[rw:]./a/*`. */
export function simpleRule(text: string): SimpleRule {
  const write = text.startsWith('rw:');
  const names = text
    .replace(/^(rw|r):/, '')
    .split('/')
    .slice(1);
  const last = names.pop();
  if (last !== '**' && last !== '*') throw new Error(`not a simple rule: ${text}`);
  return { text, folder: names, below: last === '**' ? 'any' : 'one', write };
}

/** Whether the names below the root match: no wildcard matches a dotfile (`dot: false`). */
function matches(rule: SimpleRule, below: readonly string[]): boolean {
  const { folder } = rule;
  if (!folder.every((name, i) => below[i] === name)) return false;
  const rest = below.slice(folder.length);
  if (rest.some((name) => name.startsWith('.'))) return false;
  return rule.below === 'any' || rest.length === 1;
}

/** The names of `path` below `root`, or null when it is not inside. */
export function namesBelow(path: string, root: string): string[] | null {
  if (path === root) return [];
  // The root may resolve to `/` (a link to it), which every path is below.
  const prefix = root === '/' ? root : `${root}/`;
  if (!path.startsWith(prefix)) return null;
  return path.slice(prefix.length).split('/');
}

export type Expected =
  | { outcome: 'allow'; path: string }
  | { outcome: 'deny'; reason: 'path-not-in-allowlist' | 'mode-not-permitted'; path: string }
  | { outcome: 'deny'; reason: 'resolve-failed' };

/** The policy root `root` resolves to, or null when it cannot be (the policy must refuse it). */
export function expectedRoot(root: string): string | null {
  return unlessUnresolvable(() => composed(osResolve(root)));
}

/** A policy's root as written and as resolved; `fenced` for a route guard's check of a client's value. */
export interface Roots {
  realRoot: string;
  spelledRoot: string;
  fenced: boolean;
}

/**
 * What checkFs must answer for `value` with a policy of `rules` and
 * `resolve: resolveSymlinks` whose root `spelledRoot` resolved to
 * `realRoot`: the value is made NFC, absolute and lexically normal against
 * that root (DESIGN.md steps 4–7), then resolved on disk. `fenced` (a route
 * guard): one below neither spelling of the root is outside, never looked
 * at; one below it is walked from the real root, and is outside where the
 * walk would look at a path neither below the real root nor above it (or
 * above, or at, the root as written).
 */
export function expectedCheck(
  value: string,
  { realRoot, spelledRoot, fenced }: Roots,
  rules: readonly SimpleRule[],
  mode: FsAccessMode,
): Expected {
  const lexical = posix.resolve(realRoot, value.normalize('NFC'));
  const outside =
    namesBelow(lexical, realRoot) === null && namesBelow(lexical, spelledRoot) === null;
  if (fenced && outside) return { outcome: 'deny', reason: 'path-not-in-allowlist', path: lexical };
  const left = fenced ? unlessUnresolvable(() => leftAt(lexical, realRoot, spelledRoot)) : '';
  if (left === null) return { outcome: 'deny', reason: 'resolve-failed' };
  if (left !== '') return { outcome: 'deny', reason: 'path-not-in-allowlist', path: left };
  const path = unlessUnresolvable(() => composed(osResolve(lexical)));
  if (path === null) return { outcome: 'deny', reason: 'resolve-failed' };
  const below = namesBelow(path, realRoot);
  const matching = below === null ? [] : rules.filter((rule) => matches(rule, below));
  if (matching.some((rule) => mode === 'read' || rule.write)) return { outcome: 'allow', path };
  const reason = matching.length > 0 ? 'mode-not-permitted' : 'path-not-in-allowlist';
  return { outcome: 'deny', reason, path };
}

/**
 * `path` when it is in NFC. The core normalizes the resolver's answer to
 * NFC (step 8), which on disk names another file: it cannot be checked.
 */
function composed(path: string): string {
  if (path.normalize('NFC') !== path) throw new Unresolvable(`not in NFC: ${path}`);
  return path;
}

/** What `resolve` answers, or null when the path cannot be resolved. */
function unlessUnresolvable(resolve: () => string): string | null {
  try {
    return resolve();
  } catch (error) {
    if (error instanceof Unresolvable) return null;
    throw error;
  }
}

/** A walk's end: the real folder it reached, or where it stopped, and whether it left the bound there. */
type Walked = { at: string } | { stopped: string; left: boolean };

/**
 * Where the route guard's bounded walk of `lexical` (a value below a
 * spelling of the root) leaves the bound, the path it answers then; '' when
 * it never leaves (the kernel's answer stands). Modelled as the kernel's
 * lookup, by recursion: a link's target is looked up from the link's folder
 * on its own, then the names after the link.
 */
function leftAt(lexical: string, realRoot: string, spelledRoot: string): string {
  const below = namesBelow(lexical, realRoot) ?? namesBelow(lexical, spelledRoot) ?? [];
  // Below the real root, or above it or the root as written (or that spelling itself).
  const bound = (path: string) =>
    namesBelow(path, realRoot) !== null ||
    namesBelow(realRoot, path) !== null ||
    namesBelow(spelledRoot, path) !== null;
  const walked = lookup('/', [...realRoot.split('/'), ...below], bound, { links: 0 });
  return 'stopped' in walked && walked.left ? composed(walked.stopped) : '';
}

/** Looks `names` up from the real folder `from`, never looking at a path `bound` refuses. */
function lookup(
  from: string,
  names: readonly string[],
  bound: (path: string) => boolean,
  count: { links: number },
): Walked {
  let at = from;
  for (const [i, name] of names.entries()) {
    if (name === '' || name === '.') continue;
    if (name === '..') {
      at = posix.dirname(at);
      continue;
    }
    const here = posix.join(at, name);
    const rest = names.slice(i + 1);
    if (!bound(here)) return stop(here, rest, true);
    const stat = lstatQuiet(here);
    if (stat === undefined || !(stat.isDirectory() || stat.isSymbolicLink()))
      return stop(here, rest, false);
    if (!stat.isSymbolicLink()) {
      at = here;
      continue;
    }
    count.links += 1;
    if (count.links > MAX_STEPS) throw new Unresolvable(`loop at ${here}`);
    const target = utf8Target(here);
    const walked = lookup(target.startsWith('/') ? '/' : at, target.split('/'), bound, count);
    if ('stopped' in walked) return stop(walked.stopped, rest, walked.left);
    at = walked.at;
  }
  return { at };
}

/** A walk that can look at nothing more: the rest is appended, unless a `..` in it would climb. */
function stop(path: string, rest: readonly string[], left: boolean): Walked {
  if (rest.includes('..')) throw new Unresolvable(`.. after ${path}`);
  return { stopped: posix.join(path, ...rest), left };
}

/** A link's target; one that is not UTF-8 cannot be walked. */
function utf8Target(link: string): string {
  const raw = fs.readlinkSync(link, { encoding: 'buffer' });
  const text = raw.toString('utf8');
  if (!Buffer.from(text).equals(raw)) throw new Unresolvable(`not UTF-8 at ${link}`);
  return text;
}
