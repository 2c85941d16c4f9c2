import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { openedAt } from './real-path.js';
import { NOT_A_DIRECTORY, refuse } from './storage-refusals.js';

// A folder the safe disk storage acts in, opened and confirmed where it was
// checked, its entries named through its descriptor (`entryIn`): a folder on
// the way swapped for a link after the open is not followed (Linux only;
// elsewhere the callers act by path, as before).

/**
 * `O_PATH` (Node's constants leave it out; its value on every Linux Node
 * runs on): no read permission needed, as acting by path needed none.
 */
const O_PATH = 0o10000000;

/** A folder opened by its path: the root, or the one above a folder to remove. */
export const FOLDER = O_PATH | constants.O_DIRECTORY;

/** A folder opened through the one above it (`entryIn`): a link in its place is refused (ENOTDIR), not followed. */
export const BELOW = FOLDER | constants.O_NOFOLLOW;

/** `name` in the open folder, wherever that folder is now: the kernel follows its descriptor, not its path. */
export const entryIn = (folder: FileHandle, name: string) => `/proc/self/fd/${folder.fd}/${name}`;

/** A folder on the way removed since its open (an empty one a failed upload beside this one took back): walk again. */
const gone = () =>
  Object.assign(new Error('pathgate: a folder on the way was removed'), { code: 'ENOENT' });

/**
 * Opens the folder at `path` (`flags`) and confirms the kernel has it at
 * `expected`; one anywhere else is closed and refused (a 403, as the walk
 * refuses a link it meets). `undefined` where that cannot be known (not
 * Linux, or /proc cannot be read): the caller acts by path.
 */
export async function openFolder(
  path: string | Buffer,
  flags: number,
  expected: Buffer,
): Promise<FileHandle | undefined> {
  if (process.platform !== 'linux') return undefined;
  const folder = await open(path, flags);
  try {
    const at = await openedAt(folder);
    if (at === undefined) {
      await folder.close();
      return undefined;
    }
    if (!at.equals(expected))
      throw (await folder.stat()).nlink === 0 ? gone() : refuse(NOT_A_DIRECTORY);
    return folder;
  } catch (error) {
    await folder.close();
    throw error;
  }
}
