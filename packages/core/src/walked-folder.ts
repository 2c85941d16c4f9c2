import * as fs from 'node:fs';

/**
 * The most folders a lookup walks below its anchor. A lookup from `/` walks
 * the whole depth, so a walk of N folders, one lookup each, costs the
 * square of N (2,000 folders: 0.27 s a check); from a folder held open every
 * `ANCHOR_EVERY` folders, each costs at most that many (2,000 folders:
 * 18 ms), and the walk one open every `ANCHOR_EVERY` folders. Above it, a
 * walk holds nothing open: shallow paths, most of them, cost as before.
 */
export const ANCHOR_EVERY = 32;

/**
 * O_DIRECTORY: a FIFO or a device is refused before it is opened (an open
 * of a FIFO would block). O_NOFOLLOW: a name swapped for a link since it was
 * looked at is refused, not followed.
 */
const OPEN_FOLDER = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;

/** A folder of the walk held open, and its depth (segments from `/`). */
interface Anchor {
  fd: number;
  depth: number;
  /** The length of its path: the start of a path below it that /proc/self/fd/<fd> stands for. */
  length: number;
}

/**
 * The real folder a link walk has reached: its segments from `/`, no link
 * among them (each was looked at with `lstat`). Deep down, a folder of the
 * walk is held open (the anchor), and a name is looked up from it through
 * /proc/self/fd, never from `/` again: the lookup passes only folders the
 * walk has looked at. Opening an anchor can fail (a folder without read
 * permission, no /proc): names are then looked up from `/` or from the
 * anchor above, which answers the same, more slowly.
 */
export class WalkedFolder {
  /** The folder's segments from `/`. */
  readonly segments: string[];
  /** The folder's path, `''` for `/` (so a name's path is `${path}/${name}`). */
  private path: string;
  private anchor: Anchor | undefined;

  constructor(segments: string[]) {
    this.segments = segments;
    this.path = segments.map((segment) => `/${segment}`).join('');
  }

  /** The path of `name` in this folder, from `/`. */
  pathOf(name: string): string {
    return `${this.path}/${name}`;
  }

  /** The path the kernel is to look `name` up by: `here`, its path from `/`, or one below the anchor. */
  lookup(here: string): string {
    if (this.anchor === undefined) return here;
    return `/proc/self/fd/${this.anchor.fd}${here.slice(this.anchor.length)}`;
  }

  /** Goes down into `name`, a folder of this one, just looked at. */
  enter(name: string): void {
    this.segments.push(name);
    this.path = this.pathOf(name);
    if (this.segments.length - (this.anchor?.depth ?? 0) >= ANCHOR_EVERY) this.reanchor();
  }

  /** Goes up to the parent folder (`..` at `/` stays at `/`). */
  up(): void {
    this.segments.pop();
    this.path = this.path.slice(0, this.path.lastIndexOf('/'));
    if (this.anchor !== undefined && this.segments.length < this.anchor.depth) this.climb();
  }

  /** Goes back to `/` (an absolute link target). */
  restart(): void {
    this.release();
    this.segments.length = 0;
    this.path = '';
  }

  /** Closes the anchor, if any. */
  release(): void {
    if (this.anchor !== undefined) fs.closeSync(this.anchor.fd);
    this.anchor = undefined;
  }

  /**
   * Above the anchor, deep down, holds the anchor's parent (its `..`, as the
   * kernel finds it) in its place: from `/` again, each name of a link target
   * such as `../d/../d/…` would cost the whole depth.
   */
  private climb(): void {
    const held = this.anchor;
    const parent =
      held !== undefined && this.segments.length >= ANCHOR_EVERY
        ? openFolder(`/proc/self/fd/${held.fd}/..`)
        : undefined;
    if (parent === undefined) this.release();
    else this.hold(parent);
  }

  /** Holds this folder open as the anchor; where it cannot be, keeps the anchor it had. */
  private reanchor(): void {
    const fd =
      this.anchor === undefined ? openByPath(this.path) : openFolder(this.lookup(this.path));
    if (fd !== undefined) this.hold(fd);
  }

  /** Makes `fd`, this folder opened, the anchor, in place of the one before (closed). */
  private hold(fd: number): void {
    this.release();
    this.anchor = { fd, depth: this.segments.length, length: this.path.length };
  }
}

/** A folder opened by `path`, or undefined where it cannot be. */
function openFolder(path: string): number | undefined {
  try {
    return fs.openSync(path, OPEN_FOLDER);
  } catch {
    return undefined;
  }
}

/**
 * The folder at `path`, opened once it is known that /proc names it so: no
 * link on its way, and a name in it may be looked up through /proc/self/fd.
 * Without /proc, such a lookup would answer "missing" for a link; a folder
 * swapped since it was walked would be another folder. Undefined otherwise.
 */
export function openByPath(path: string): number | undefined {
  const fd = openFolder(path);
  if (fd === undefined) return undefined;
  let named: string | undefined;
  try {
    named = fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {}
  if (named === path) return fd;
  fs.closeSync(fd);
  return undefined;
}
