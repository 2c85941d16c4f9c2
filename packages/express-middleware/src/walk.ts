import { lstat, mkdir } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { type Folder, type Held, makeAndHold } from './folders.js';
import { BELOW, entryIn, FOLDER, openFolder } from './open-folder.js';
import type { RealPathOf } from './real-path.js';
import { NAME_TOO_LONG, NOT_A_DIRECTORY, refuse } from './storage-refusals.js';

// The safe disk storage's walk: the target's folders, made or entered one
// segment at a time below the root, never through a link.

/** The longest file name of the usual Linux file systems (ext4, xfs, btrfs, tmpfs), in bytes. */
const NAME_MAX = 255;
/** Linux's longest path for a system call, in bytes, counting the terminating NUL. */
const PATH_MAX = 4096;

/**
 * Creates the target's parent directories one segment at a time below the
 * root, refusing any component that is a symlink or not a directory
 * (`mkdir -p` would follow a planted link out of the root). On Linux each
 * is made and opened through the one above it, open and confirmed where it
 * was checked (`throughOpen`), never by its path again. A name or a path
 * too long for the file system is refused first, so no empty directory is
 * left for it. Holds each directory it makes at once, so those it made
 * before a failure further down (no inode left) are removed too, and each
 * one it enters that another upload in flight made (`makeAndHold`). The
 * target lies below the root: the storage refused one under another root.
 */
export async function ensureParent(
  root: string,
  target: string,
  held: Held,
  realPathOf: RealPathOf,
): Promise<void> {
  const tooLong =
    Buffer.byteLength(target) >= PATH_MAX ||
    target.split('/').some((name) => Buffer.byteLength(name) > NAME_MAX);
  if (tooLong) {
    throw refuse(NAME_TOO_LONG);
  }
  const folders = foldersBelow(root, dirname(target), realPathOf);
  if (folders.length === 0) return;
  if (!(await throughOpen(root, folders, held, realPathOf))) await byPath(folders, held);
}

/** The folders from below the root down to `dir`, shallowest first, each with its real path. */
function foldersBelow(root: string, dir: string, realPathOf: RealPathOf): Folder[] {
  let path = root === '/' ? '' : root;
  return dir
    .slice(root.length)
    .split('/')
    .filter(Boolean)
    .map((name) => {
      path = `${path}/${name}`;
      return { path, real: realPathOf(path) };
    });
}

/** Makes `path` (by its path or through an open folder): whether it made it, not found it there. */
const made = (path: string) =>
  mkdir(path).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
      return false;
    },
  );

/**
 * The walk on Linux: the root opened and confirmed, then each folder below
 * made in the open one above it and opened through it (a link put in its
 * place is refused, `BELOW`), confirmed at its path too, before the next:
 * a folder swapped for a link meanwhile has nothing made through it.
 * `false` where the kernel cannot say where a folder is: walk by path.
 */
async function throughOpen(
  root: string,
  folders: Folder[],
  held: Held,
  realPathOf: RealPathOf,
): Promise<boolean> {
  let folder = await openFolder(root, FOLDER, realPathOf(root));
  if (folder === undefined) return false;
  try {
    for (const below of folders) {
      const entry = entryIn(folder, basename(below.path));
      await makeAndHold(held, below, () => made(entry));
      const next = await openFolder(entry, BELOW, below.real);
      if (next === undefined) throw refuse(NOT_A_DIRECTORY);
      const above = folder;
      folder = next;
      await above.close();
    }
    return true;
  } finally {
    await folder.close();
  }
}

/** The walk where the kernel cannot say where a folder is: each made by path, then checked by lstat. */
async function byPath(folders: Folder[], held: Held): Promise<void> {
  for (const folder of folders) {
    await makeAndHold(held, folder, () => made(folder.path));
    if (!(await lstat(folder.path)).isDirectory()) {
      throw refuse(NOT_A_DIRECTORY);
    }
  }
}
