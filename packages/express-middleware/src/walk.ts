import { lstat, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type Held, holdFolder } from './folders.js';
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
 * (`mkdir -p` would follow a planted link out of the root). A name or a path
 * too long for the file system is refused first, so no empty directory is
 * left for it. Holds each directory it makes at once, so those it made
 * before a failure further down (no inode left) are removed too, and each
 * one it enters that another upload in flight made (`holdFolder`).
 */
export async function ensureParent(root: string, target: string, held: Held): Promise<void> {
  // A path another gate's policy checked, under another root: the walk below
  // could not vouch for its directories (a server misconfiguration: a 500).
  if (root !== '/' && !target.startsWith(`${root}/`)) {
    throw new Error(
      "pathgate: a file checked by another gate's policy (another root) reached this gate's storage; use that gate's multer()",
    );
  }
  const tooLong =
    Buffer.byteLength(target) >= PATH_MAX ||
    target.split('/').some((name) => Buffer.byteLength(name) > NAME_MAX);
  if (tooLong) {
    throw refuse(NAME_TOO_LONG);
  }
  const below = dirname(target).slice(root.length).split('/').filter(Boolean);
  let current = root === '/' ? '' : root;
  for (const segment of below) {
    current = `${current}/${segment}`;
    try {
      await mkdir(current);
      holdFolder(held, current, true);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      holdFolder(held, current, false);
    }
    if (!(await lstat(current)).isDirectory()) {
      throw refuse(NOT_A_DIRECTORY);
    }
  }
}
