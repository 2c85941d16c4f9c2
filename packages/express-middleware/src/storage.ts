import { link, rename, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { readOwn } from '@pathgate/core';
import type { Request } from 'express';
import type { StorageEngine } from 'multer';
import { PathgateStorageError, STORAGE_CODES } from './errors.js';
import { checkedForReading, letThroughUnchecked } from './file-filter.js';
import { identityAt } from './file-identity.js';
import { againIfGone, foldersHeldBy, type Held, removeEmptyFolders, whileHeld } from './folders.js';
import { type RealPathOf, realPathsUnder } from './real-path.js';
import { FILE_TOO_LARGE, NOT_A_DIRECTORY, refuse, storageError } from './storage-refusals.js';
import { keepOld, remember, removeStored } from './stored-files.js';
import { type Created, checkReplaceable, createFor, writeNew } from './temp-file.js';
import { nameTurns, Turns } from './turns.js';
import { uploadOf } from './upload.js';
import { ensureParent } from './walk.js';

export interface DiskStorageOptions {
  /** Replace an existing file (still never through a symlink). Default `false`: an existing target is a 409. */
  overwrite?: boolean | undefined;
}

type File = Express.Multer.File;

/**
 * The request failed while this part waited its turn or was written: its
 * body was cut, or its answer is a deny. Every file it stored is removed,
 * so giving this one its name would only lose an old file, or show a file
 * that is about to go.
 */
const failed = (req: Request) => req.readableAborted || uploadOf(req)?.settled === true;

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
 * Gives the written file its target's name (keeping the file it replaces,
 * `keepOld`) in the name's turn: never while another request's removal
 * there acts on what it looked at, or that removal would put an old file
 * back over this one, or unlink it, after this request's 201; nor while
 * another store keeps the old file there, a second link for a moment.
 */
function nameInTurn(req: Request, path: string, identity: string | undefined, placed: Placed) {
  const { target, overwrite, held, realPathOf } = placed;
  return nameTurns.run(target, async () => {
    // Checked again, in the turn: a symlink, FIFO or hard link made there
    // while the body arrived stays too; another store's old file, linked to
    // be kept while it renames, is never seen as a second link.
    if (overwrite) await checkReplaceable(target);
    // Checked right before the name is given: without overwrite no await
    // between the two; with it, a failure while the old file is kept is
    // caught (`place`), as one during the rename, and the old file put back.
    if (failed(req)) throw new Error('pathgate: the request failed before the file was stored');
    const kept = overwrite ? await keepOld(req, target, realPathOf, held) : undefined;
    await giveName(path, target, overwrite);
    remember(req, target, { identity, real: realPathOf(target), kept });
  });
}

/**
 * Stores the stream at `target`: written beside it, then renamed over it
 * (`overwrite`) or linked to its name (never replacing a file there: a 409)
 * once complete, so a cut-off, refused or failed upload leaves the target
 * as it was (and no reader sees a half-written file). A file it replaced
 * comes back if the request fails later (`keepOld`, `removeStored`).
 */
async function place(req: Request, file: File, temp: Created, placed: Placed) {
  const { target, overwrite } = placed;
  const size = await writeNew(file, temp);
  try {
    // Cut short by multer's fileSize limit: the request fails, and the target stays as it was.
    if ((file.stream as { truncated?: boolean }).truncated) throw refuse(FILE_TOO_LARGE);
    const identity = await identityAt(temp.real);
    await nameInTurn(req, temp.path, identity, placed);
    // Failed while the name was given: multer's abort cleanup ran with the
    // temporary name, and will not run for this file again.
    if (failed(req)) {
      await removeStored(req, target);
      throw new Error('pathgate: the request failed while the file was stored');
    }
    // At once, before the next await: an abort from here on removes the file by this name.
    file.path = target;
  } catch (error) {
    await unlink(temp.real).catch(() => {});
    throw error;
  }
  // Linked, the file has its target's name too: the temporary one goes.
  if (!overwrite) await unlink(temp.real).catch(() => {});
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

/** A store's placement, the root's real path resolved for it: where its files are removed from. */
interface Placed extends Placement {
  readonly realPathOf: RealPathOf;
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
      await ensureParent(root, target, held, realPathOf);
      return createFor(target, overwrite, realPathOf);
    });
    return await place(req, file, created, { ...placement, realPathOf });
  } catch (error) {
    await removeEmptyFolders(held);
    throw error;
  }
}

/**
 * The setup mistakes that bring a file here with no path this storage may
 * write: each a 500 whose message says what to fix (it names no path).
 */
const MISTAKES = {
  ungated:
    'a file no gate.multer() decided reached gate.diskStorage(), which has no checked path to write it to; pass the storage to gate.multer({ storage }), not to multer()',
  readOnly:
    'a file only gate.read() checked reached the storage, which writes it; check uploads with gate.write()',
  otherRoot:
    "a file checked by another gate's policy (another root) reached this gate's storage, which cannot vouch for its folders; use that gate's multer()",
} as const;

/** Which setup mistake, other than `ungated`, brought a checked file here, if one did. */
function setupMistake(file: File, target: string, root: string): string | undefined {
  // The policy may let it be read there, not written.
  if (checkedForReading(file)) return MISTAKES.readOnly;
  // The walk could not vouch for the folders under another root.
  if (root !== '/' && !target.startsWith(`${root}/`)) return MISTAKES.otherRoot;
  return undefined;
}

/**
 * Answers multer with the storage's error (`storageError`): whatever leaves
 * the storage, a store's or a removal's (multer hands the app those in
 * `storageErrors`), names no path.
 */
const failWith = (callback: (error: Error) => void) => (error: unknown) =>
  callback(storageError(error));

/**
 * Each request's stores, one after another as the parts arrive, so a
 * request holds at most one open file here: busboy hands on many tiny parts
 * at once, and one request of thousands of files would otherwise take all
 * of the process's descriptors (EMFILE, for every request). A waiting part
 * is not read meanwhile, which holds busboy back.
 */
const requestStores = new Turns<Request>();

/**
 * Settles once every store this request began here has, its cleanup
 * included. multer calls back without waiting for a store whose part's
 * stream failed (a body cut inside it), which may still be opening the file.
 */
export const storesSettled = (req: Request): Promise<void> => requestStores.settled(req);

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
export function safeDiskStorage(
  root: string,
  options: DiskStorageOptions | undefined,
  warn: (req: Request, message: string) => void,
): StorageEngine {
  const overwrite = readOverwrite(options);
  const realPaths = realPathsUnder(root);
  return {
    _handleFile(req: Request, file: File, callback) {
      // Dropping the file would be a 200 for nothing stored; writing it, a write no check allowed.
      const refuseSetup = (mistake: string) => {
        warn(req, mistake);
        callback(new PathgateStorageError(STORAGE_CODES.FAILED, `pathgate: ${mistake}`));
      };
      const target = file.pathgatePath;
      if (target === undefined) {
        // Report-only's unchecked file is read and dropped, as the deny it reports would have.
        if (!letThroughUnchecked(file)) return refuseSetup(MISTAKES.ungated);
        discard(file).then((size) => callback(null, { size }), failWith(callback));
        return;
      }
      const mistake = setupMistake(file, target, root);
      if (mistake !== undefined) return refuseSetup(mistake);
      const held = foldersHeldBy(req);
      const placement = { root, target, overwrite, realPaths, held };
      void whileHeld(held, () =>
        requestStores
          .run(req, () => store(req, file, placement))
          .then(
            (size) =>
              callback(null, {
                destination: dirname(target),
                filename: basename(target),
                path: target,
                size,
              }),
            failWith(callback),
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
          .then(() => removeEmptyFolders(held))
          .then(() => callback(null), failWith(callback)),
      );
    },
  };
}
