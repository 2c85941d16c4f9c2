import * as fs from 'node:fs';
import { toNfc } from './nfc.js';
import { joinSegments } from './segments.js';
import { openByPath, WalkedFolder } from './walked-folder.js';

/** Links followed in one call before giving up, as Linux does (ELOOP). */
const MAX_LINKS = 40;

/** Linux's PATH_MAX: the bytes of a path with its NUL; a longer path is ENAMETOOLONG to every call. */
const PATH_MAX = 4096;

/**
 * A ready `resolve` option for `canonicalize` and `PermissionPolicy`: resolves
 * the symbolic links of an absolute, lexically canonical POSIX path, so that a
 * link inside the sandbox that points outside it is seen as outside.
 *
 * It walks the path one component at a time with `lstat`, the way the kernel
 * looks a path up:
 *
 * - a symbolic link is replaced by its target, absolute or relative to the
 *   link's (already resolved) directory, and the walk goes on through the
 *   target and then the rest of the path. A `..` in a target goes up from the
 *   real directory reached so far, as the kernel does;
 * - a dangling link (its target does not exist yet) resolves to its target, so
 *   a write through `uploads/x -> /etc/cron.d/job` is seen at `/etc/cron.d/job`;
 * - the first component that does not exist ends the walk: it and the rest are
 *   appended as they are (an upload target that is about to be created). So
 *   does one the kernel finds too long for its directory (ENAMETOOLONG on a
 *   path shorter than PATH_MAX: no such name can be there), as a throw would
 *   tell a client which directories above a long name exist;
 * - a component below anything but a directory (a regular file, a FIFO, a
 *   device: the kernel answers ENOTDIR) is appended the same way: nothing can
 *   exist there, so nothing there can be a link, and any access to it fails;
 * - after a missing component or a non-directory, a `..` still to walk (it can
 *   only come from a link target) throws ENOENT or ENOTDIR: the kernel would
 *   fail the lookup there, and a lexical `..` could land anywhere;
 * - deep down, it holds a folder of the walk open every 32 folders, and
 *   looks names up from it through /proc/self/fd (walked-folder.ts): a walk
 *   of `lstat` calls, each from `/`, would cost the square of the depth;
 * - where no link is among the folders above the last name, their walk is
 *   one open of the last folder, whose real path the kernel names in
 *   /proc/self/fd (`linkFreeFolders`). Not in a bounded walk: the kernel's
 *   open would follow a link out and look beyond it;
 * - a link whose target is not valid UTF-8 throws (code `EILSEQ`): decoding it
 *   lossily could hide a link under a name that merely looks missing;
 * - an answer not in Unicode NFC (a name from a link target) throws (code
 *   `EILSEQ`): the core would normalize it to another name, maybe a link.
 *
 * It throws, and the core then denies with `resolve-failed`, on: a path that
 * is not a string starting with `/`; a path of PATH_MAX (4,096) bytes or
 * more (code `ENAMETOOLONG`, the kernel's answer to any call with it: walking
 * a 1 MiB value of one-letter names took 0.3 s, even when the walk stopped at
 * its first); more than 40 links in one walk (a loop, a self-link: code
 * `ELOOP`); a link target that is not UTF-8, or an answer not in NFC; and every
 * file system error other than a missing component (EACCES, ENAMETOOLONG,
 * EIO, ...), so it fails closed.
 *
 * The result is an absolute path starting with `/`, with no trailing slash
 * (the root is `/`), and no `.`, `..` or empty segments.
 *
 * What it cannot promise:
 * - it checks, then the caller uses: a link created or changed between the
 *   two (a race, TOCTOU) is not seen. Open the file with the returned path,
 *   never with the raw one, and keep the sandbox unwritable to others;
 * - hard links and bind mounts are not links: a hard link to a file outside,
 *   or a directory bind-mounted into the sandbox, looks like it is inside;
 * - it does synchronous file system I/O on every call, on the request path:
 *   one open of the last folder, or one `lstat` per component where a link
 *   is on the way, plus one `readlink` per link and one open every 32
 *   folders.
 *
 * @param path An absolute, lexically canonical POSIX path.
 * @returns The path with its existing links resolved.
 * @throws On a relative path, a link loop, or a file system error.
 */
export function resolveSymlinks(path: string): string {
  return resolveWithin(path, undefined);
}

/**
 * Where `resolveSymlinks` carries its bounded walk (`resolveWithin`), under
 * a key every copy of this package in a process shares: its ESM and
 * CommonJS builds are two copies, and an app may load both, so the route
 * guard of one copy finds the bounded walk of the other copy's function.
 */
export const BOUNDED_WALK = Symbol.for('@pathgate/core: resolveSymlinks, bounded walk, v1');
Object.defineProperty(resolveSymlinks, BOUNDED_WALK, { value: resolveWithin });

/**
 * `resolveSymlinks`, its walk bounded: a component whose path `bound`
 * refuses is never looked at (no `lstat`, no `readlink`); the walk stops
 * there and answers that path with the rest still to walk appended, or
 * throws when that rest holds a `..` (it came from a link target), as after
 * a missing component. Without a bound it is `resolveSymlinks`. The route
 * guard's bound is its root (fenced-resolve.ts).
 */
export function resolveWithin(path: string, bound: Bound | undefined): string {
  // Only absolute paths: a relative one would depend on process.cwd().
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError('resolveSymlinks: the path must be a string starting with "/"');
  }
  if (Buffer.byteLength(path) >= PATH_MAX) {
    throw fsError('ENAMETOOLONG', 'path too long', `${path.slice(0, 64)}…`);
  }
  const resolved = walk(path, bound);
  // The core normalizes the answer to NFC (DESIGN.md step 8). On Linux an NFD
  // name from a link target is another file than its NFC twin, which may be a
  // link out: the path checked and the path opened would differ.
  if (toNfc(resolved) !== resolved) throw fsError('EILSEQ', 'resolves to a name not in NFC', path);
  return resolved;
}

/** Which paths a bounded walk may look at. */
export type Bound = (path: string) => boolean;

/** Follows the links of an absolute path, as described above, never beyond `bound`. */
function walk(path: string, bound: Bound | undefined): string {
  const segments = segmentsOf(path);
  // `folder` holds resolved components (no links); `todo` is a stack, next segment last.
  const folder = new WalkedFolder(linkFreeFolders(segments, bound));
  const todo = segments.slice(folder.segments.length).reverse();
  try {
    return walkFrom(folder, todo, bound, path);
  } finally {
    folder.release();
  }
}

/** The walk of `todo` from `folder`; `path` names the walk in its errors. */
function walkFrom(
  folder: WalkedFolder,
  todo: string[],
  bound: Bound | undefined,
  path: string,
): string {
  const real = folder.segments;
  let links = 0;
  for (let segment = todo.pop(); segment !== undefined; segment = todo.pop()) {
    // `..` goes up from a real directory, so popping it is the physical parent.
    if (segment === '..') {
      folder.up();
      continue;
    }
    const here = folder.pathOf(segment);
    // Beyond the bound nothing is looked at: the rest is appended, as at a missing name.
    if (bound !== undefined && !bound(here)) {
      return appendRest(real, [segment, ...todo.reverse()], 'EXDEV');
    }
    const lookup = folder.lookup(here);
    const stat = lstatHere(lookup, here);
    // Missing: nothing below exists yet, so the rest is appended as it is.
    if (stat === undefined) return appendRest(real, [segment, ...todo.reverse()], 'ENOENT');
    if (stat.isSymbolicLink()) {
      // Cap the links followed, so a loop throws instead of spinning.
      links += 1;
      if (links > MAX_LINKS) throw fsError('ELOOP', 'too many symbolic links', path);
      followLink(readTarget(lookup, here), folder, todo);
      continue;
    }
    // Below a non-directory nothing can exist (ENOTDIR): append the rest.
    if (!stat.isDirectory()) return appendRest([...real, segment], todo.reverse(), 'ENOTDIR');
    folder.enter(segment);
  }
  return joinSegments(real);
}

/**
 * The folders above the path's last name, when all of them are real
 * folders, no link among them: then the walk has only that name to look at.
 * One `lstat` a folder costs about 9 µs (2,000 folders: 18 ms a check),
 * where opening the last folder looks it up once, and the kernel then names
 * its real path (/proc/self/fd). Any difference (a link, `..`, a name that is
 * not UTF-8), any failure (a missing or unreadable folder, no /proc), and
 * the walk goes step by step from `/`. Never in a bounded walk: the open
 * follows any link on the way, one out of the bound included, and whether it
 * found a folder there shows in the time taken (about 6 µs).
 */
function linkFreeFolders(segments: readonly string[], bound: Bound | undefined): string[] {
  if (bound !== undefined || segments.length < 3) return [];
  const folders = segments.slice(0, -1);
  const fd = openByPath(joinSegments(folders));
  if (fd === undefined) return [];
  fs.closeSync(fd);
  return folders;
}

/**
 * lstat, not stat, so a link is seen as a link; undefined where no such name
 * can be. `lookup` is the path asked (maybe through /proc), `here` the path
 * it stands for, in errors.
 */
function lstatHere(lookup: string, here: string): fs.Stats | undefined {
  // From `/`, the kernel refuses a path this long (one a link's target grew);
  // below an anchor (walked-folder.ts), it would be looked up.
  if (lookup !== here && Buffer.byteLength(here) >= PATH_MAX) {
    throw fsError('ENAMETOOLONG', 'path too long', `${here.slice(0, 64)}…`);
  }
  try {
    return fs.lstatSync(lookup, { throwIfNoEntry: false });
  } catch (error) {
    // Below PATH_MAX, ENAMETOOLONG is about this one name: its file system
    // holds none so long (the kernel's own limit, not a guessed 255 bytes).
    const tooLong = (error as NodeJS.ErrnoException).code === 'ENAMETOOLONG';
    if (tooLong && Buffer.byteLength(here) < PATH_MAX) return undefined;
    throw namedAt(error, lookup, here);
  }
}

/** Reads a link's target; one that is not UTF-8 throws rather than being guessed at. */
function readTarget(lookup: string, link: string): string {
  let raw: Buffer;
  try {
    raw = fs.readlinkSync(lookup, { encoding: 'buffer' });
  } catch (error) {
    throw namedAt(error, lookup, link);
  }
  // A lossy decode could turn a name that is a link into one that looks missing.
  const target = raw.toString('utf8');
  if (!Buffer.from(target, 'utf8').equals(raw))
    throw fsError('EILSEQ', 'link target is not UTF-8', link);
  return target;
}

/** A file system error about `lookup` (a /proc path), told of `here`, the path the caller gave. */
function namedAt(error: unknown, lookup: string, here: string): unknown {
  if (lookup === here || !(error instanceof Error)) return error;
  // A function, not a string: a `$&` or `$'` in a folder's name is no pattern to replace.
  error.message = error.message.replace(lookup, () => here);
  return Object.assign(error, { path: here });
}

/** Puts a link's target in front of what is left to walk. */
function followLink(target: string, folder: WalkedFolder, todo: string[]): void {
  // An absolute target restarts at `/`; a relative one starts at the link's directory.
  if (target.startsWith('/')) folder.restart();
  todo.push(...segmentsOf(target).reverse());
}

/** Joins the segments that cannot exist after the real prefix. */
function appendRest(real: readonly string[], rest: readonly string[], code: string): string {
  // The kernel fails a `..` after a missing component: so do we, not lexically.
  if (rest.includes('..')) throw fsError(code, 'cannot walk ".." from here', rest.join('/'));
  return joinSegments([...real, ...rest]);
}

/** Splits a path or a link target; empty and `.` segments name nothing. */
function segmentsOf(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '' && segment !== '.');
}

/** An error shaped like Node's own file system errors (`code` set). */
function fsError(code: string, message: string, path: string): Error {
  return Object.assign(new Error(`${code}: ${message}, '${path}'`), { code, path });
}
