import type { BigIntStats, PathLike } from 'node:fs';
import { lstat } from 'node:fs/promises';

// Which file is at a path, by inode and birth time, not by name: a name can
// come to hold another file (another request's) between two looks at it.

/** For `.catch`: a missing file is `undefined`, any other error is thrown on. */
export function ifMissing(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
}

/**
 * Which file is at `path`: its inode, and its birth time, as a deleted
 * file's inode number is soon given to a new one; `undefined` when none is.
 */
export async function identityAt(path: PathLike): Promise<string | undefined> {
  const stat = await lstat(path, { bigint: true }).catch(ifMissing);
  return stat && identityOf(stat);
}

export const identityOf = (stat: BigIntStats) => `${stat.dev}:${stat.ino}:${stat.birthtimeNs}`;
