import { rmdir } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Request } from 'express';
import { entryIn, FOLDER, openFolder } from './open-folder.js';
import { inPlace, parentOf } from './real-path.js';
import { Turns } from './turns.js';

/**
 * A folder a walk made or entered: its checked path, and its real path
 * then. A link on the way to the root may be retargeted meanwhile
 * (`current -> releases/N`): the same path then names another release's
 * folder, never this one's to remove.
 */
export interface Folder {
  readonly path: string;
  readonly real: Buffer;
}

/** A folder's key in `holders`: its real path's bytes, one to one. */
const keyOf = ({ real }: Folder) => real.toString('latin1');

/**
 * The folders the safe disk storage made for uploads in flight (by real
 * path, `keyOf`), each with the number of requests holding it: the one
 * whose upload made it, and those whose uploads walked into it since. Any
 * of them that fails removes it once empty, so a folder made for two
 * uploads that both failed goes with the second, whichever made it.
 * Entries leave with their last holder (see `Held`): the map never
 * outgrows the uploads in flight.
 */
const holders = new Map<string, number>();

/**
 * One request's folders (see `holders`), shared while it may still remove
 * them: until its response is over, and neither multer's parse of its body
 * nor any of its stores or removals runs. A cut connection ends the
 * response first; multer's abort then removes the stored files one by
 * one, a turn of the event loop apart, while a store may still run.
 * Shared no longer meanwhile, a folder another upload walked into would be
 * held by neither, and stay once both failed; and the old files its
 * overwrites kept would go (`onRelease`) before they were put back.
 */
export interface Held {
  /**
   * By key (`keyOf`): a walk looks each folder up, and a list searched for
   * it cost the square of their number (16,000 folders, 4 s of event loop).
   */
  readonly folders: Map<string, Folder>;
  /** Its response is over (or it has none, as in a unit test). */
  over: boolean;
  /** Its parse by multer, stores and removals under way (`hold`). */
  busy: number;
  /** Run once, the first time it is shared no longer: nothing of the request removes its files after. */
  readonly onRelease: (() => void)[];
}

const heldBy = new WeakMap<Request, Held>();

const isShared = (held: Held) => !held.over || held.busy > 0;

/** Counts the request's folders in `holders` (`by` 1) or takes them out (-1). */
function count(held: Held, by: 1 | -1): void {
  for (const key of held.folders.keys()) {
    const holding = (holders.get(key) ?? 0) + by;
    if (holding === 0) holders.delete(key);
    else holders.set(key, holding);
  }
}

/** Shared no longer: its folders leave `holders`, and what waited for that runs. */
function release(held: Held): void {
  count(held, -1);
  for (const run of held.onRelease.splice(0)) run();
}

/** The folders this request holds: those made for its files, and those it entered, made for another's. */
export function foldersHeldBy(req: Request): Held {
  const known = heldBy.get(req);
  if (known !== undefined) return known;
  const held: Held = { folders: new Map(), over: true, busy: 0, onRelease: [] };
  heldBy.set(req, held);
  const { res } = req;
  if (res !== undefined && !res.closed) {
    held.over = false;
    res.once('close', () => {
      held.over = true;
      if (!isShared(held)) release(held);
    });
  }
  return held;
}

/**
 * Marks one of the request's stores, removals or multer's parse of its
 * body as under way: its folders are shared until the returned `done` is
 * called (once; later calls do nothing), even past the end of its response.
 */
export function hold(held: Held): () => void {
  if (!isShared(held)) count(held, 1);
  held.busy++;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    held.busy--;
    if (!isShared(held)) release(held);
  };
}

/**
 * Runs one of the request's stores or removals (with the callback it
 * answers multer by, which may start the next removal) under `hold`.
 */
export async function whileHeld<T>(held: Held, work: () => Promise<T>): Promise<T> {
  const done = hold(held);
  try {
    return await work();
  } finally {
    done();
  }
}

/**
 * The walk to a target reached `folder`: `made` when it made it, else it
 * was there, and is held only if an upload in flight made it (one there
 * before any upload is never ours to remove). Walks run in a store, so
 * within `whileHeld`: the request's folders are shared.
 */
function holdFolder(held: Held, folder: Folder, made: boolean): void {
  const key = keyOf(folder);
  const holding = holders.get(key);
  if (!made && holding === undefined) return;
  if (held.folders.has(key)) return;
  held.folders.set(key, folder);
  holders.set(key, (holding ?? 0) + 1);
}

/**
 * One walk at a time makes a folder and holds it (by real path): the
 * thread pool may report another walk's mkdir finding it there (EEXIST)
 * before the one that made it held it, which would take it for a folder
 * there before, never its own to remove, and leave it once both failed.
 */
const making = new Turns<string>();

/** Makes `folder` (`make`: whether it made it, not found it there), then holds it (`holdFolder`), in its turn. */
export const makeAndHold = (held: Held, folder: Folder, make: () => Promise<boolean>) =>
  making.run(keyOf(folder), async () => holdFolder(held, folder, await make()));

/**
 * Removes `folder` if it is empty (rmdir: one holding anything, ours or
 * another upload's, stays), in the folder above it, opened by its real
 * path when walked and confirmed there (`openFolder`): a folder on the way
 * swapped for a link is not followed, and rmdir does not follow a link in
 * `folder`'s place. Where the kernel cannot say where a folder is, by its
 * real path, once that still resolves to itself (`inPlace`): a swap after
 * that check is followed (the race the README states). Best effort: a
 * failure leaves it.
 */
async function removeIfEmpty({ path, real }: Folder): Promise<void> {
  try {
    const above = await openFolder(parentOf(real), FOLDER, parentOf(real));
    if (above === undefined) {
      if (await inPlace(real)) await rmdir(real);
      return;
    }
    await rmdir(entryIn(above, basename(path))).finally(() => above.close());
  } catch {
    // Gone already, not empty, or not where it was checked: it stays.
  }
}

/**
 * Removes those of the request's folders that are empty, deepest first: a
 * failed upload takes back the folders it made or shares. One that holds a
 * file stays, and an upload that walked through one just removed, to open
 * its file in it, makes it again (`againIfGone`). Only one still where its
 * walk made or entered it (`removeIfEmpty`): never an empty folder outside
 * the root, reached through a folder on the way swapped for a link.
 */
export async function removeEmptyFolders({ folders }: Held): Promise<void> {
  const deepestFirst = [...folders.values()].sort((a, b) => b.real.length - a.real.length);
  for (const folder of deepestFirst) await removeIfEmpty(folder);
}

/** How many times a store walks and creates its file while folders on the way keep going. */
const ATTEMPTS = 4;

/**
 * Runs `attempt` (make the folders, create the file) again when a folder on
 * the way is gone: a failed upload beside this one removed it, empty until
 * this one's file is created in it. Several can fail in turn, so a few
 * times; a folder that keeps going ends in the error.
 */
export async function againIfGone<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || tries === ATTEMPTS) throw error;
    }
  }
}
