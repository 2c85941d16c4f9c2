import { rmdir } from 'node:fs/promises';
import type { Request } from 'express';

const made = new WeakMap<Request, string[]>();

/** The folders the safe disk storage made for this request's files (none was there before). */
export function foldersMadeBy(req: Request): string[] {
  let folders = made.get(req);
  if (folders === undefined) {
    folders = [];
    made.set(req, folders);
  }
  return folders;
}

/** rmdir: `true` once the folder is gone; `false` while it holds anything (ours or another upload's). */
const removeIfEmpty = (folder: string) =>
  rmdir(folder).then(
    () => true,
    (error: NodeJS.ErrnoException) => error.code === 'ENOENT',
  );

/**
 * Removes those of `folders` that are empty, deepest first, and forgets
 * them: a failed upload takes back the folders it made. One that holds a
 * file stays, and an upload that walked through one just removed, to open
 * its file in it, makes it again (`onceMoreIfGone`).
 */
export async function removeEmptyFolders(folders: string[]): Promise<void> {
  const deepestFirst = [...folders].sort((a, b) => b.length - a.length);
  for (const folder of deepestFirst) {
    if (!(await removeIfEmpty(folder))) continue;
    const at = folders.indexOf(folder);
    if (at !== -1) folders.splice(at, 1);
  }
}

/**
 * Runs `attempt` (make the folders, create the file) once more when a
 * folder on the way is gone: a failed upload beside this one removed it,
 * empty until this one's file is created in it.
 */
export async function onceMoreIfGone<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return attempt();
  }
}
