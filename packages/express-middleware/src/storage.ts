import { randomUUID } from 'node:crypto';
import { type BigIntStats, constants, type PathLike, type Stats } from 'node:fs';
import { type FileHandle, link, lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { finished as eos } from 'node:stream';
import { finished } from 'node:stream/promises';
import { readOwn } from '@pathgate/core';
import type { Request } from 'express';
import type { StorageEngine } from 'multer';
import { PathgateStorageError, STORAGE_CODES, type StorageCode } from './errors.js';
import {
  againIfGone,
  foldersHeldBy,
  type Held,
  holdFolder,
  removeEmptyFolders,
  whileHeld,
} from './folders.js';
import { inPlace, openedAt, type RealPathOf, realPathsUnder } from './real-path.js';
import { uploadOf } from './upload.js';

export interface DiskStorageOptions {
  /** Replace an existing file (still never through a symlink). Default `false`: an existing target is a 409. */
  overwrite?: boolean | undefined;
}

type File = Express.Multer.File;
const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

type Refusal = readonly [StorageCode, string];

const NOT_A_FILE: Refusal = [STORAGE_CODES.NOT_A_FILE, 'target is not a regular file of its own'];
const EXISTS: Refusal = [STORAGE_CODES.EXISTS, 'the target exists'];
const SYMLINK: Refusal = [STORAGE_CODES.SYMLINK, 'target is a symlink'];
const NOT_A_DIRECTORY: Refusal = [
  STORAGE_CODES.NOT_A_DIRECTORY,
  'path component is not a directory',
];
const NAME_TOO_LONG: Refusal = [STORAGE_CODES.NAME_TOO_LONG, 'file name too long'];
const FILE_TOO_LARGE: Refusal = [STORAGE_CODES.FILE_TOO_LARGE, 'file too large to store'];
const NO_SPACE: Refusal = [STORAGE_CODES.NO_SPACE, 'no space left to store the file'];

/** The OS errors a client's name or size can cause, or a full disk: each its own status, never a 500. */
const OS_ERRORS: Readonly<Record<string, Refusal>> = {
  EEXIST: EXISTS,
  EISDIR: EXISTS,
  ELOOP: SYMLINK,
  ENOTDIR: NOT_A_DIRECTORY,
  ENAMETOOLONG: NAME_TOO_LONG,
  EFBIG: FILE_TOO_LARGE,
  ENOSPC: NO_SPACE,
  EDQUOT: NO_SPACE,
};

const refuse = ([code, message]: Refusal) => new PathgateStorageError(code, message);

/** An OS error as the storage's refusal, when it is one of `OS_ERRORS`; any other error as it is. */
function storageError(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && Object.hasOwn(OS_ERRORS, code)
    ? refuse(OS_ERRORS[code] as Refusal)
    : error;
}

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
async function ensureParent(root: string, target: string, held: Held): Promise<void> {
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

/** Creates `path` for writing: a file of our own, never an existing one, never through a symlink. */
function createFile(path: string): Promise<FileHandle> {
  return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666);
}

/** The temporary file a part is written to, beside its target, created (see `createFile`). */
interface Created {
  readonly path: string;
  readonly handle: FileHandle;
}

/**
 * Writes the stream to the file just created. Piped, not `pipeline`d: a
 * write error must not destroy the part's stream, or multer would abort
 * with that raw error (a 500) before the storage's refusal reached it.
 */
async function writeNew(file: File, { path, handle }: Created): Promise<number> {
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
    await unlink(path).catch(() => {});
    throw error;
  }
  return out.bytesWritten;
}

/** For `.catch`: a missing file is `undefined`, any other error is thrown on. */
function ifMissing(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT') return undefined;
  throw error;
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
async function checkReplaceable(target: string): Promise<void> {
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
 * target is checked: written in place, a file in flight could be read,
 * moved or deleted half-written, and its cleanup would then remove by name
 * a file another request stored there since. Confirmed where the walk
 * checked it before a byte is written (`confirmCreated`).
 */
async function createFor(target: string, overwrite: boolean, realPathOf: RealPathOf) {
  await (overwrite ? checkReplaceable(target) : checkAbsent(target));
  const path = join(dirname(target), `.pathgate-${randomUUID()}.part`);
  const created: Created = { path, handle: await createFile(path) };
  await confirmCreated(created, realPathOf(path));
  return created;
}

/**
 * Refuses the file just created unless the kernel has it at `expected`: a
 * folder on the way swapped for a link since the walk (a 403, as the walk
 * refuses a link it meets). Where /proc cannot be read, the walk's check
 * stands alone.
 */
async function confirmCreated({ path, handle }: Created, expected: Buffer): Promise<void> {
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

/**
 * The request failed while this part waited its turn or was written: its
 * body was cut, or its answer is a deny. Every file it stored is removed,
 * so giving this one its name would only lose an old file, or show a file
 * that is about to go.
 */
const failed = (req: Request) => req.readableAborted || uploadOf(req)?.settled === true;

/**
 * Which file is at `path`: its inode, and its birth time, as a deleted
 * file's inode number is soon given to a new one; `undefined` when none is.
 */
async function identityAt(path: PathLike): Promise<string | undefined> {
  const stat = await lstat(path, { bigint: true }).catch(ifMissing);
  return stat && identityOf(stat);
}

const identityOf = (stat: BigIntStats) => `${stat.dev}:${stat.ino}:${stat.birthtimeNs}`;

/**
 * What a request stored at a target: its file (`identityAt`), and with
 * `overwrite` the file it replaced, kept under a hidden name (`keepOld`).
 */
interface Stored {
  readonly identity: string | undefined;
  readonly kept: Kept | undefined;
}

/** A file an overwrite replaced, at its hidden name; `identity` (`identityAt`) says which file it is. */
interface Kept {
  readonly path: string;
  identity: string;
}

/**
 * The kept files of the requests in flight, by the file each holds: a
 * request whose file another request replaced (and keeps), that then
 * fails, finds it there (`handOver`).
 */
const keptFiles = new Map<string, Kept>();

/** The file each request stored at each of its targets: the one its removal may unlink. */
const storedBy = new WeakMap<Request, Map<string, Stored>>();

function remember(req: Request, target: string, stored: Stored): void {
  const targets = storedBy.get(req) ?? new Map<string, Stored>();
  storedBy.set(req, targets);
  targets.set(target, stored);
}

/**
 * Overwrite, right before the rename: links the file at `target` to a
 * hidden name beside it, so that removing the request's file (it failed
 * later) puts the old one back. The request's own file stored there
 * earlier (one name twice) is not kept: the file it replaced is, already.
 * Every hidden name goes once nothing of the request removes its files
 * (`Held.onRelease`). Returns it; `undefined` when no file is there. A
 * file that cannot be linked is not replaced (`NOT_A_FILE`).
 */
async function keepOld(req: Request, target: string, held: Held): Promise<Kept | undefined> {
  const earlier = storedBy.get(req)?.get(target);
  const current = await identityAt(target);
  if (current === undefined) return undefined;
  if (earlier !== undefined && current === earlier.identity) return earlier.kept;
  const kept: Kept = {
    path: join(dirname(target), `.pathgate-${randomUUID()}.old`),
    identity: current,
  };
  try {
    await link(target, kept.path);
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
 * Unlinks the file the request stored at `path`, unless the name holds
 * another by now: one another request stored there once this one's was
 * replaced (overwrite) or deleted by the app, whose 201 must stay true.
 * The file it replaced, kept (`keepOld`), takes its name back in one
 * rename: the name never lacks a file. Should that fail (the kept one
 * gone), the request's file is unlinked all the same. A file of its
 * replaced since is no longer its to remove, only to hand over (`handOver`).
 */
async function removeStored(req: Request, path: string): Promise<void> {
  const stored = storedBy.get(req)?.get(path);
  const { identity, kept } = stored ?? {};
  if (identity !== undefined && (await identityAt(path)) !== identity)
    return handOver(identity, kept);
  if (kept !== undefined && (await putBack(kept.path, path))) return;
  await unlink(path).catch(ifMissing);
}

/**
 * The request's file, replaced since by another request's that keeps it
 * (`keepOld`), must not come back should that one fail too: what this
 * request replaced takes its place there, the kept file or (none) nothing.
 */
async function handOver(identity: string, kept: Kept | undefined): Promise<void> {
  const keeper = keptFiles.get(identity);
  if (keeper === undefined) return;
  keptFiles.delete(identity);
  if (kept !== undefined) {
    keeper.identity = kept.identity;
    keptFiles.set(kept.identity, keeper);
    if (await putBack(kept.path, keeper.path)) return;
  }
  await unlink(keeper.path).catch(() => {});
}

/** Renames the kept file to `path`; `false` when that fails. */
const putBack = (kept: string, path: string) =>
  rename(kept, path).then(
    () => true,
    () => false,
  );

/**
 * Gives the written file its target's name: renamed over it (`overwrite`)
 * or linked to it. Both names are in one folder, so the file can land only
 * where its temporary name is. That name gone (ENOENT) means the folder was
 * moved away since the file was checked, maybe a link left in its place: a
 * 403, as the walk refuses such a folder, not a 500.
 */
async function giveName(path: string, target: string, overwrite: boolean): Promise<void> {
  try {
    await (overwrite ? rename(path, target) : link(path, target));
  } catch (error) {
    throw (error as NodeJS.ErrnoException).code === 'ENOENT' ? refuse(NOT_A_DIRECTORY) : error;
  }
}

/**
 * Stores the stream at `target`: written beside it, then renamed over it
 * (`overwrite`) or linked to its name (never replacing a file there: a 409)
 * once complete, so a cut-off, refused or failed upload leaves the target
 * as it was (and no reader sees a half-written file). A file it replaced
 * comes back if the request fails later (`keepOld`, `removeStored`).
 */
async function place(req: Request, file: File, temp: Created, placement: Placement) {
  const { target, overwrite, held } = placement;
  const size = await writeNew(file, temp);
  try {
    // Cut short by multer's fileSize limit: the request fails, and the target stays as it was.
    if ((file.stream as { truncated?: boolean }).truncated) throw refuse(FILE_TOO_LARGE);
    const identity = await identityAt(temp.path);
    // Checked again: a symlink, FIFO or hard link made there while the body arrived stays too.
    if (overwrite) await checkReplaceable(target);
    // Checked right before the name is given: without overwrite no await
    // between the two; with it, a failure while the old file is kept is
    // caught below, as one during the rename, and the old file put back.
    if (failed(req)) throw new Error('pathgate: the request failed before the file was stored');
    const kept = overwrite ? await keepOld(req, target, held) : undefined;
    await giveName(temp.path, target, overwrite);
    remember(req, target, { identity, kept });
    // Failed while the name was given: multer's abort cleanup ran with the
    // temporary name, and will not run for this file again.
    if (failed(req)) {
      await removeStored(req, target);
      throw new Error('pathgate: the request failed while the file was stored');
    }
    // At once, before the next await: an abort from here on removes the file by this name.
    file.path = target;
  } catch (error) {
    await unlink(temp.path).catch(() => {});
    throw error;
  }
  // Linked, the file has its target's name too: the temporary one goes.
  if (!overwrite) await unlink(temp.path).catch(() => {});
  return size;
}

/** A file that was not checked (report-only deny): its bytes are read and dropped, never written. */
async function discard(file: File): Promise<number> {
  let size = 0;
  for await (const chunk of file.stream) size += (chunk as Buffer).length;
  return size;
}

function fail(message: string): never {
  throw new TypeError(`pathgate: gate.diskStorage(): ${message}`);
}

function readOverwrite(options: unknown): boolean {
  if (options === undefined) return false;
  if (typeof options !== 'object' || options === null) fail('options must be an object');
  for (const key of Object.keys(options)) if (key !== 'overwrite') fail(`unknown option "${key}"`);
  // An own key: a polluted Object.prototype must not turn overwriting on.
  const overwrite = readOwn(options, 'overwrite');
  if (overwrite !== undefined && typeof overwrite !== 'boolean') {
    fail('option overwrite must be a boolean');
  }
  return overwrite === true;
}

interface Placement {
  readonly root: string;
  readonly target: string;
  readonly overwrite: boolean;
  /** Resolves the root's real path (`realPathsUnder`). */
  readonly realPaths: () => Promise<RealPathOf>;
  /** The request's folders (`foldersHeldBy`), shared while this store runs. */
  readonly held: Held;
}

/**
 * Stores one part at its target, making the folders on the way (the
 * request's: `held`). A failure removes those it left empty.
 */
async function store(req: Request, file: File, placement: Placement) {
  const { root, target, overwrite, held } = placement;
  // Before the walk: a root whose real path cannot be found stores nothing, unchecked or not.
  const realPathOf = await placement.realPaths();
  try {
    const created = await againIfGone(async () => {
      await ensureParent(root, target, held);
      return createFor(target, overwrite, realPathOf);
    });
    return await place(req, file, created, placement);
  } catch (error) {
    await removeEmptyFolders(held, inPlace(realPathOf));
    throw error;
  }
}

/** Each request's last store: the next one of that request starts after it. */
const lastStore = new WeakMap<Request, Promise<unknown>>();

/**
 * Runs a request's stores one after another, as the parts arrive, so a
 * request holds at most one open file here: busboy hands on many tiny parts
 * at once, and one request of thousands of files would otherwise take all
 * of the process's descriptors (EMFILE, for every request). A waiting part
 * is not read meanwhile, which holds busboy back.
 */
function inTurn<T>(req: Request, store: () => Promise<T>): Promise<T> {
  const turn = (lastStore.get(req) ?? Promise.resolve()).then(store);
  lastStore.set(
    req,
    turn.catch(() => {}),
  );
  return turn;
}

/**
 * Settles once every store this request began here has, its cleanup
 * included. multer calls back without waiting for a store whose part's
 * stream failed (a body cut inside it), which may still be opening the file.
 */
export function storesSettled(req: Request): Promise<unknown> {
  return lastStore.get(req) ?? Promise.resolve();
}

/**
 * multer storage that writes each file exactly where pathgate checked it
 * (`file.pathgatePath`). multer's diskStorage would follow symlinks and
 * overwrite. Node has no `openat2(RESOLVE_BENEATH)`: a folder swapped for a
 * link after the walk is followed by the open, and refused once the kernel
 * says where the file is (Linux, `confirmCreated`); after that the file is
 * named beside its temporary name (`giveName`), and only a swap between the
 * two path lookups of that one system call goes unseen. Keep the upload
 * tree writable by this process only.
 */
export function safeDiskStorage(root: string, options?: DiskStorageOptions): StorageEngine {
  const overwrite = readOverwrite(options);
  const realPaths = realPathsUnder(root);
  return {
    _handleFile(req: Request, file: File, callback) {
      const target = file.pathgatePath;
      if (target === undefined) {
        discard(file).then((size) => callback(null, { size }), callback);
        return;
      }
      const held = foldersHeldBy(req);
      const placement = { root, target, overwrite, realPaths, held };
      void whileHeld(held, () =>
        inTurn(req, () => store(req, file, placement)).then(
          (size) =>
            callback(null, {
              destination: dirname(target),
              filename: basename(target),
              path: target,
              size,
            }),
          (error: unknown) => callback(storageError(error)),
        ),
      );
    },
    _removeFile(req: Request, file: File, callback) {
      const { path } = file;
      for (const key of ['destination', 'filename', 'path'] as const)
        delete (file as Partial<File>)[key];
      if (!path) return callback(null);
      const held = foldersHeldBy(req);
      void whileHeld(held, () =>
        removeStored(req, path)
          .then(realPaths)
          .then((realPathOf) => removeEmptyFolders(held, inPlace(realPathOf)))
          .then(() => callback(null), callback),
      );
    },
  };
}
