import { randomUUID } from 'node:crypto';
import { constants, type PathLike, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { finished as eos } from 'node:stream';
import { finished } from 'node:stream/promises';
import { identityAt, identityOf, ifMissing } from './file-identity.js';
import { openedAt, type RealPathOf } from './real-path.js';
import { EXISTS, NOT_A_DIRECTORY, NOT_A_FILE, refuse, SYMLINK } from './storage-refusals.js';
import { nameTurns } from './turns.js';

// The temporary file an upload is written to, beside its target: checked
// before it is created, confirmed where the walk checked it once open, and
// written; what a failure leaves of it is removed.

type File = Express.Multer.File;
const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

/** Creates `path` for writing: a file of our own, never an existing one, never through a symlink. */
function createFile(path: string): Promise<FileHandle> {
  return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666);
}

/**
 * The temporary file a part is written to, beside its target, created (see
 * `createFile`); removed by the real path it was confirmed at, never by its
 * path again: a link on the way to the root may be retargeted meanwhile.
 */
export interface Created {
  readonly path: string;
  readonly real: Buffer;
  readonly handle: FileHandle;
}

/**
 * Writes the stream to the file just created. Piped, not `pipeline`d: a
 * write error must not destroy the part's stream, or multer would abort
 * with that raw error (a 500) before the storage's refusal reached it.
 */
export async function writeNew(file: File, { path, real, handle }: Created): Promise<number> {
  // Set before the first byte: multer's abort removes a half-written file by its path.
  file.path = path;
  const out = handle.createWriteStream();
  const written = finished(out); // settles once the file is closed, or on either side's error
  // The part may be gone already (the client left while the folders were made):
  // `eos` reports that at once, where an 'error' listener would wait forever.
  eos(file.stream, { writable: false }, (error) => {
    if (error) out.destroy(error);
  });
  file.stream.pipe(out);
  try {
    await written;
  } catch (error) {
    await unlink(real).catch(() => {});
    throw error;
  }
  return out.bytesWritten;
}

/** What is at `path`, not following a link; `undefined` when nothing is. */
function lstatIfAny(path: string): Promise<Stats | undefined> {
  return lstat(path).catch(ifMissing);
}

/**
 * What `overwrite` may replace: nothing, or a regular file with one link.
 * Not a symlink, a folder, a FIFO or a device; not a hard link, whose other
 * name the app may think unchanged.
 */
export async function checkReplaceable(target: string): Promise<void> {
  const stat = await lstatIfAny(target);
  if (stat === undefined) return;
  if (stat.isSymbolicLink()) throw refuse(SYMLINK);
  if (stat.isDirectory()) throw refuse(EXISTS);
  if (!stat.isFile() || stat.nlink !== 1) throw refuse(NOT_A_FILE);
}

/** Without `overwrite`, an existing target is refused before a byte is read (`place` refuses one made since). */
async function checkAbsent(target: string): Promise<void> {
  if ((await lstatIfAny(target)) !== undefined) throw refuse(EXISTS);
}

/**
 * Creates the temporary sibling a part is written to, once what is at its
 * target is checked (with `overwrite` in the name's turn: another store's
 * old file, linked to be kept, is no hard link of the app's). Written in
 * place, a file in flight could be read, moved or deleted half-written, and
 * its cleanup would then remove by name a file another request stored there
 * since. Confirmed where the walk checked it before a byte is written
 * (`confirmCreated`).
 */
export async function createFor(target: string, overwrite: boolean, realPathOf: RealPathOf) {
  await (overwrite ? nameTurns.run(target, () => checkReplaceable(target)) : checkAbsent(target));
  const path = join(dirname(target), `.pathgate-${randomUUID()}.part`);
  const created: Created = { path, real: realPathOf(path), handle: await createFile(path) };
  await confirmCreated(created);
  return created;
}

/**
 * Refuses the file just created unless the kernel has it at `expected`: a
 * folder on the way swapped for a link since the walk (a 403, as the walk
 * refuses a link it meets). Where /proc cannot be read, the walk's check
 * stands alone.
 */
async function confirmCreated({ path, real: expected, handle }: Created): Promise<void> {
  const opened = await openedAt(handle).catch(async (error: unknown) => {
    await abandon(handle, path);
    throw error;
  });
  if (opened === undefined || opened.equals(expected)) return;
  await abandon(handle, opened);
  throw refuse(NOT_A_DIRECTORY);
}

/**
 * Closes a file this request just created (`O_EXCL`, a unique name) and
 * unlinks it at `path` if it is still the one there: the folders on the way
 * may have been swapped again since, so the name alone does not say which
 * file it reaches. Best effort: the refusal, not a failed cleanup, is the answer.
 */
async function abandon(handle: FileHandle, path: PathLike): Promise<void> {
  try {
    const ours = identityOf(await handle.stat({ bigint: true }));
    if ((await identityAt(path)) === ours) await unlink(path);
  } catch {
    // Nothing more to do: the file was not written to, and the request is refused.
  } finally {
    await handle.close().catch(() => {});
  }
}
