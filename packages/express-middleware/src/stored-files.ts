import { randomUUID } from 'node:crypto';
import { link, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Request } from 'express';
import { identityAt, ifMissing } from './file-identity.js';
import type { Held } from './folders.js';
import type { RealPathOf } from './real-path.js';
import { NOT_A_FILE, refuse } from './storage-refusals.js';
import { nameTurns } from './turns.js';

// What each request stored, and with `overwrite` what it replaced (kept
// under a hidden name): a request that fails later removes its files by
// identity and puts the replaced ones back, by the real paths they had when
// stored: a link on the way to the root retargeted meanwhile (`current ->
// releases/N`) makes the same path name another release's file.

/**
 * What a request stored at a target: its file (`identityAt`), and with
 * `overwrite` the file it replaced, kept under a hidden name (`keepOld`).
 */
interface Stored {
  readonly identity: string | undefined;
  /** The target's real path when stored. */
  readonly real: Buffer;
  readonly kept: Kept | undefined;
}

/** A file an overwrite replaced at `target`, at its hidden name's real path; `identity` (`identityAt`) says which file it is. */
interface Kept {
  readonly target: string;
  readonly path: Buffer;
  identity: string;
}

/**
 * The kept files of the requests in flight, by the file each holds: a
 * request whose file another request replaced (and keeps), that then
 * fails, finds it there (`handOver`).
 */
const keptFiles = new Map<string, Kept>();

/**
 * The files each request stored at each of its targets, in order: one name
 * can take several of its files, each having replaced another request's
 * file maybe (`removeStored` undoes them all, latest first).
 */
const storedBy = new WeakMap<Request, Map<string, Stored[]>>();

export function remember(req: Request, target: string, stored: Stored): void {
  const targets = storedBy.get(req) ?? new Map<string, Stored[]>();
  storedBy.set(req, targets);
  // Added in place: a copy per store cost the square of a name's stores
  // (20,000 in one request, 9 s of event loop).
  const list = targets.get(target);
  if (list === undefined) targets.set(target, [stored]);
  else list.push(stored);
}

/**
 * Overwrite, right before the rename: links the file at `target` (by its
 * real path) to a hidden name beside it, so that removing the request's
 * file (it failed later) puts the old one back. The request's own file
 * stored there earlier (one name twice) is not kept: the file it replaced
 * is, already. Every hidden name goes once nothing of the request removes
 * its files (`Held.onRelease`). Returns it; `undefined` when no file is
 * there. A file that cannot be linked is not replaced (`NOT_A_FILE`).
 */
export async function keepOld(
  req: Request,
  target: string,
  realPathOf: RealPathOf,
  held: Held,
): Promise<Kept | undefined> {
  const earlier = storedBy.get(req)?.get(target)?.at(-1);
  const real = realPathOf(target);
  const current = await identityAt(real);
  if (current === undefined) return undefined;
  if (earlier !== undefined && current === earlier.identity) return earlier.kept;
  const kept: Kept = {
    target,
    path: realPathOf(join(dirname(target), `.pathgate-${randomUUID()}.old`)),
    identity: current,
  };
  try {
    await link(real, kept.path);
  } catch (error) {
    // Linux's protected_hardlinks: another user's file this process may not
    // write. The rename would replace it, with no way to bring it back.
    if ((error as NodeJS.ErrnoException).code === 'EPERM') throw refuse(NOT_A_FILE);
    return ifMissing(error as NodeJS.ErrnoException); // gone meanwhile: nothing to keep
  }
  keptFiles.set(current, kept);
  held.onRelease.push(() => {
    if (keptFiles.get(kept.identity) === kept) keptFiles.delete(kept.identity);
    void unlink(kept.path).catch(() => {});
  });
  return kept;
}

/**
 * Removes what the request stored at `path` in the name's turn
 * (`nameTurns`): after its earlier removals and stores. Overlapping, two
 * requests cut at once that replaced the name in turn each looked before
 * the other renamed: the name kept a failed request's file.
 */
export const removeStored = (req: Request, path: string): Promise<void> =>
  nameTurns.run(path, () => undoStores(req, path));

/**
 * Removes what the request stored at `path` (`removeOne`), latest first, one
 * after another: its second file there may have replaced another request's
 * file, which kept its first. All at the first call: multer lists a name
 * stored twice twice, and a deny removes them all at once (`removeAll`), so
 * the second call, finding nothing left, must not unlink the file put back.
 * A name with nothing remembered (a temporary one) is unlinked.
 */
async function undoStores(req: Request, path: string): Promise<void> {
  const targets = storedBy.get(req);
  const stored = targets?.get(path);
  if (targets === undefined || stored === undefined) return unlink(path).then(() => {}, ifMissing);
  targets.set(path, []);
  for (const one of stored.reverse()) await removeOne(path, one);
}

/**
 * Unlinks the file the request stored at `path`, unless the name holds
 * another by now: one another request stored there once this one's was
 * replaced (overwrite) or deleted by the app, whose 201 must stay true.
 * The file it replaced, kept (`keepOld`), takes its name back in one
 * rename: the name never lacks a file. Should that fail (the kept one
 * gone), the request's file is unlinked all the same. A file of its
 * replaced since is no longer its to remove, only to hand over (`handOver`).
 */
async function removeOne(path: string, { identity, real, kept }: Stored): Promise<void> {
  if (identity !== undefined && (await identityAt(real)) !== identity)
    return handOver(path, identity, kept);
  if (kept !== undefined && (await putBack(kept.path, real))) return;
  await unlink(real).catch(ifMissing);
}

/**
 * The request's file, replaced since by another request's that keeps it
 * (`keepOld`), must not come back should that one fail too: what this
 * request replaced takes its place there, the kept file or (none) nothing.
 * Should that request end during the rename, its release may have unlinked
 * the name before the rename gave it the file: unlinked again then. Only at
 * the same name: a file the app moved elsewhere (then replaced there) is the
 * app's, and what this request replaced never was at that other name.
 */
async function handOver(path: string, identity: string, kept: Kept | undefined): Promise<void> {
  const keeper = keptFiles.get(identity);
  if (keeper === undefined || keeper.target !== path) return;
  keptFiles.delete(identity);
  if (kept !== undefined) {
    keeper.identity = kept.identity;
    keptFiles.set(kept.identity, keeper);
    const handed = await putBack(kept.path, keeper.path);
    if (handed && keptFiles.get(keeper.identity) === keeper) return;
  }
  await unlink(keeper.path).catch(() => {});
}

/** Renames the kept file to `path`; `false` when that fails. */
const putBack = (kept: Buffer, path: Buffer) =>
  rename(kept, path).then(
    () => true,
    () => false,
  );
