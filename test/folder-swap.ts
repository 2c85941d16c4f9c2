import type * as fsPromises from 'node:fs/promises';
import { namedThrough } from './fd-path.js';

/** Folders to swap for a link on the next open below them, with the link's target. */
const armed = new Map<string, string>();
let procHidden = false;

/**
 * Arms a swap: the next open of a path below `folder` first replaces the
 * folder by a link to `target`, as another process could between pathgate's
 * check and the open. Deterministic, where a swapping loop only sometimes wins.
 */
export function swapBeforeOpen(folder: string, target: string): void {
  armed.set(folder, target);
}

/** Folders to swap for a link on the next use of them or of a path below them, with the link's target. */
const armedUse = new Map<string, string>();

/**
 * Arms a swap like `swapBeforeOpen`, earlier: before the next open, lstat,
 * readdir, unlink or link naming `folder` itself or a path below it, as
 * another process could between pathgate's check and the server's first use
 * of the path.
 */
export function swapBeforeUse(folder: string, target: string): void {
  armedUse.set(folder, target);
}

/** Folders to swap for a link on the next mkdir below them, by path or descriptor, with the link's target. */
const armedMkdir = new Map<string, string>();

/**
 * Arms a swap like `swapBeforeUse`, on the next mkdir naming a folder below
 * `folder` by its path or through a descriptor open on a folder
 * (`/proc/self/fd/<fd>/<name>`): as another process could between pathgate's
 * check and the making of a move's or an upload's new folders. `folder` may
 * be one the request makes itself, not there yet when armed.
 */
export function swapBeforeMkdir(folder: string, target: string): void {
  armedMkdir.set(folder, target);
}

/** Folders to swap for a link on the next rmdir below them, by path or descriptor, with the link's target. */
const armedRmdir = new Map<string, string>();

/**
 * Arms a swap like `swapBeforeMkdir`, on the next rmdir naming a folder
 * below `folder` by its path or through a descriptor open on a folder: as
 * another process could between the check of a failed upload's folder and
 * its removal.
 */
export function swapBeforeRmdir(folder: string, target: string): void {
  armedRmdir.set(folder, target);
}

/** Folders to move away before the next link or rename into them: where to, and the link left in their place. */
const moves = new Map<string, { to: string; link: string }>();

/**
 * Arms a move: the next link or rename naming a file below `folder` first
 * moves the folder to `to` and leaves a link to `link` in its place, as
 * another process could once the file in it was created and checked.
 */
export function moveBeforeName(folder: string, to: string, link: string): void {
  moves.set(folder, { to, link });
}

/** Folders to move away before the next unlink or link below them, by path or descriptor: as `moves`. */
const openedMoves = new Map<string, { to: string; link: string }>();

/**
 * Arms a move like `moveBeforeName`, on the next unlink or link naming a
 * file below `folder` by its path or through a descriptor open on the folder
 * (`/proc/self/fd/<fd>/<name>`): as another process could once the server
 * opened the folder.
 */
export function moveOnceOpened(folder: string, to: string, link: string): void {
  openedMoves.set(folder, { to, link });
}

/** Folders to remove (empty) before the next opens below them: how many times, and whether through a descriptor too. */
const removals = new Map<string, { times: number; opened: boolean }>();

/**
 * Arms `times` removals: each of the next `times` opens below `folder` first
 * removes it, empty, as failed uploads beside this one each take back a
 * folder they share (the open then fails with ENOENT).
 */
export function removeBeforeOpen(folder: string, times: number): void {
  armRemovals(folder, times, false);
}

/**
 * Arms removals like `removeBeforeOpen`, on opens below `folder` by path or
 * through a descriptor open on it (`/proc/self/fd/<fd>/<name>`): as a
 * failed upload beside this one could once the server opened the folder.
 */
export function removeOnceOpened(folder: string, times: number): void {
  armRemovals(folder, times, true);
}

function armRemovals(folder: string, times: number, opened: boolean): void {
  if (times > 0) removals.set(folder, { times, opened });
  else removals.delete(folder);
}

/** Folders to remove (empty) right after the next open of them, by path or through a descriptor. */
const removedOnOpen = new Set<string>();

/**
 * Arms a removal: the next open of `folder` itself, by path or through a
 * descriptor open on the folder above it, is followed by its removal
 * (empty), as a failed upload beside this one could take it back once the
 * server opened it, before the server checks where it is.
 */
export function removeOnOpen(folder: string): void {
  removedOnOpen.add(folder);
}

/** Called after each open and link the server made: to read the disk between them. */
let watcher: (() => void) | undefined;

/**
 * Calls `watch` (until `undefined`) right after each open and link that
 * succeeded: what was on disk at that moment, not only once the request is
 * over (a file created and removed again leaves no trace after).
 */
export function watchCalls(watch: (() => void) | undefined): void {
  watcher = watch;
}

/** Makes /proc/self/fd unreadable (ENOENT), as on a system without /proc (macOS). */
export function hideProc(hidden: boolean): void {
  procHidden = hidden;
}

/** Called with where each read of /proc/self/fd found the file, before the server has it. */
let procReader: ((found: Buffer) => Promise<void>) | undefined;

/**
 * Calls `read` (until `undefined`) with each answer a read of /proc/self/fd
 * gives the server, before the server has it: to change the disk between
 * that read and the server's next look, or to fail the read (by throwing).
 */
export function onProcRead(read: ((found: Buffer) => Promise<void>) | undefined): void {
  procReader = read;
}

/**
 * `node:fs/promises` for `vi.mock`, with `open` running the swaps armed by
 * `swapBeforeOpen` and the removals armed by `removeBeforeOpen`,
 * `removeOnceOpened` and `removeOnOpen`, `link` and
 * `rename` the moves armed by `moveBeforeName`, `open`, `lstat`, `readdir`,
 * `unlink` and `link` the swaps armed by `swapBeforeUse`, `unlink` and
 * `link` the moves armed by `moveOnceOpened`, `mkdir` the swaps armed by
 * `swapBeforeMkdir`, `rmdir` those armed by `swapBeforeRmdir`, `open` and
 * `link` the watch set by `watchCalls`, and `readlink` failing on /proc
 * while `hideProc` is on, calling `onProcRead`'s reader otherwise.
 * Everything else is the real module.
 */
export async function withFolderSwap(
  importOriginal: () => Promise<typeof fsPromises>,
): Promise<typeof fsPromises> {
  const fs = await importOriginal();
  // `force`: a folder the request is about to make is swapped in as a link too.
  const swap = async (folder: string, target: string) => {
    await fs.rm(folder, { recursive: true, force: true });
    await fs.symlink(target, folder);
  };
  const swapUsed = async (path: unknown) => {
    for (const [folder, target] of armedUse) {
      if (String(path) !== folder && !String(path).startsWith(`${folder}/`)) continue;
      armedUse.delete(folder);
      await swap(folder, target);
    }
  };
  const named = (path: unknown) => namedThrough(fs, path);
  const moveOpened = async (path: unknown) => {
    for (const [folder, { to, link }] of openedMoves) {
      if (!(await named(path)).startsWith(`${folder}/`)) continue;
      openedMoves.delete(folder);
      await fs.rename(folder, to);
      await fs.symlink(link, folder);
    }
  };
  const open: typeof fs.open = async (path, flags, mode) => {
    await swapUsed(path);
    for (const [folder, target] of armed) {
      if (!String(path).startsWith(`${folder}/`)) continue;
      armed.delete(folder);
      await swap(folder, target);
    }
    for (const [folder, { times, opened }] of removals) {
      if (!(opened ? await named(path) : String(path)).startsWith(`${folder}/`)) continue;
      if (times <= 1) removals.delete(folder);
      else removals.set(folder, { times: times - 1, opened });
      await fs.rmdir(folder);
    }
    const handle = await fs.open(path, flags, mode);
    const opened = await named(path);
    if (removedOnOpen.delete(opened)) await fs.rmdir(opened);
    watcher?.();
    return handle;
  };
  const moveArmed = async (path: unknown) => {
    for (const [folder, { to, link }] of moves) {
      if (!String(path).startsWith(`${folder}/`)) continue;
      moves.delete(folder);
      await fs.rename(folder, to);
      await fs.symlink(link, folder);
    }
  };
  const link: typeof fs.link = async (existing, path) => {
    for (const named of [existing, path]) await swapUsed(named);
    await moveOpened(path);
    await moveArmed(path);
    await fs.link(existing, path);
    watcher?.();
  };
  const unlink: typeof fs.unlink = async (path) => {
    await swapUsed(path);
    await moveOpened(path);
    return fs.unlink(path);
  };
  const lstat = (async (path: string, options?: object) => {
    await swapUsed(path);
    return fs.lstat(path, options);
  }) as typeof fs.lstat;
  const readdir = (async (path: string, options?: object) => {
    await swapUsed(path);
    return fs.readdir(path, options as undefined);
  }) as typeof fs.readdir;
  const swapNamed = async (armedAt: Map<string, string>, path: unknown) => {
    for (const [folder, target] of armedAt) {
      if (!(await named(path)).startsWith(`${folder}/`)) continue;
      armedAt.delete(folder);
      await swap(folder, target);
    }
  };
  const mkdir = (async (path: string, options?: object) => {
    await swapNamed(armedMkdir, path);
    return fs.mkdir(path, options);
  }) as typeof fs.mkdir;
  const rmdir: typeof fs.rmdir = async (path, options) => {
    await swapNamed(armedRmdir, path);
    return fs.rmdir(path, options);
  };
  const rename: typeof fs.rename = async (from, to) => {
    await moveArmed(to);
    return fs.rename(from, to);
  };
  const readlink = (async (path: string, options: { encoding: 'buffer' }) => {
    if (!path.startsWith('/proc/')) return fs.readlink(path, options);
    if (procHidden) throw Object.assign(new Error('ENOENT: no /proc'), { code: 'ENOENT' });
    const found = await fs.readlink(path, options);
    await procReader?.(Buffer.from(found));
    return found;
  }) as typeof fs.readlink;
  return { ...fs, open, lstat, readdir, link, unlink, mkdir, rmdir, rename, readlink };
}
