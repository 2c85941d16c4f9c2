import { rmdir } from 'node:fs/promises';
import type { Request } from 'express';

/**
 * The folders the safe disk storage made for uploads whose responses are
 * not over yet, each with the number of requests holding it: the one whose
 * upload made it, and those whose uploads walked into it since. Any of them
 * that fails removes it once empty, so a folder made for two uploads that
 * both failed goes with the second, whichever made it. Entries leave with
 * their last holder's response: the map never outgrows the uploads in flight.
 */
const holders = new Map<string, number>();

/** One request's folders (see `holders`); `shared` while its response is not over. */
export interface Held {
  readonly folders: string[];
  shared: boolean;
}

const heldBy = new WeakMap<Request, Held>();

/** The folders this request holds: those made for its files, and those it entered, made for another's. */
export function foldersHeldBy(req: Request): Held {
  let held = heldBy.get(req);
  if (held === undefined) {
    held = { folders: [], shared: false };
    heldBy.set(req, held);
    share(req, held);
  }
  return held;
}

/** Shares the request's folders until its response is over (not at all without one, as in a unit test). */
function share(req: Request, held: Held): void {
  const { res } = req;
  if (res === undefined || res.closed) return;
  held.shared = true;
  res.once('close', () => {
    held.shared = false;
    for (const folder of held.folders) {
      const count = (holders.get(folder) ?? 1) - 1;
      if (count === 0) holders.delete(folder);
      else holders.set(folder, count);
    }
  });
}

/**
 * The walk to a target reached `folder`: `made` when it made it, else it
 * was there, and is held only if an upload in flight made it (one there
 * before any upload is never ours to remove).
 */
export function holdFolder(held: Held, folder: string, made: boolean): void {
  const count = holders.get(folder);
  if ((!made && count === undefined) || held.folders.includes(folder)) return;
  held.folders.push(folder);
  if (held.shared) holders.set(folder, (count ?? 0) + 1);
}

/** rmdir: ENOENT counts as gone; a folder holding anything (ours or another upload's) stays. */
const removeIfEmpty = (folder: string) => rmdir(folder).catch(() => {});

/**
 * Removes those of the request's folders that are empty, deepest first: a
 * failed upload takes back the folders it made or shares. One that holds a
 * file stays, and an upload that walked through one just removed, to open
 * its file in it, makes it again (`onceMoreIfGone`).
 */
export async function removeEmptyFolders({ folders }: Held): Promise<void> {
  const deepestFirst = [...folders].sort((a, b) => b.length - a.length);
  for (const folder of deepestFirst) await removeIfEmpty(folder);
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
