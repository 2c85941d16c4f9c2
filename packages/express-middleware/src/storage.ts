import { constants } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Request } from 'express';
import type { StorageEngine } from 'multer';
import { PathgateStorageError, STORAGE_CODES } from './errors.js';

export interface DiskStorageOptions {
  /** Replace an existing file (still never through a symlink). Default `false`: an existing target is a 409. */
  overwrite?: boolean;
}

type File = Express.Multer.File;
const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;

const notAFile = () =>
  new PathgateStorageError(STORAGE_CODES.NOT_A_FILE, 'target is not a regular file of its own');

/** The few OS errors that a client's name can cause: 4xx, never a 500. */
function clientError(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'EEXIST' || code === 'EISDIR') {
    return new PathgateStorageError(STORAGE_CODES.EXISTS, 'the target exists');
  }
  if (code === 'ELOOP')
    return new PathgateStorageError(STORAGE_CODES.SYMLINK, 'target is a symlink');
  if (code === 'ENXIO') return notAFile(); // a FIFO with no reader, or a socket
  if (code === 'ENOTDIR') {
    return new PathgateStorageError(
      STORAGE_CODES.NOT_A_DIRECTORY,
      'path component is not a directory',
    );
  }
  if (code === 'ENAMETOOLONG') {
    return new PathgateStorageError(STORAGE_CODES.NAME_TOO_LONG, 'file name too long');
  }
  return error;
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
 * left for it.
 */
async function ensureParent(root: string, target: string): Promise<void> {
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
    throw new PathgateStorageError(STORAGE_CODES.NAME_TOO_LONG, 'file name too long');
  }
  const below = dirname(target).slice(root.length).split('/').filter(Boolean);
  let current = root === '/' ? '' : root;
  for (const segment of below) {
    current = `${current}/${segment}`;
    try {
      await mkdir(current);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (!(await lstat(current)).isDirectory()) {
      throw new PathgateStorageError(
        STORAGE_CODES.NOT_A_DIRECTORY,
        'path component is not a directory',
      );
    }
  }
}

/**
 * Opens `target` for writing: exclusive create (unless overwrite), never
 * through a symlink. An existing target is replaced only when it is a
 * regular file with one link, and is emptied only once that is known: a
 * FIFO would block a thread on open (`O_NONBLOCK` makes it fail instead),
 * a device would take the bytes, a hard link would carry them to a file
 * outside the upload tree.
 */
async function openTarget(target: string, overwrite: boolean): Promise<FileHandle> {
  const handle = await open(
    target,
    O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | (overwrite ? 0 : O_EXCL),
    0o666,
  );
  if (!overwrite) return handle; // O_EXCL: a file of our own, just created
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || stat.nlink !== 1) throw notAFile();
    await handle.truncate(0);
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Writes the stream to `target` (see `openTarget`). */
async function writeFile(file: File, target: string, overwrite: boolean): Promise<number> {
  const handle = await openTarget(target, overwrite);
  // Set before the first byte: multer's abort removes a half-written file by its path.
  file.path = target;
  const out = handle.createWriteStream();
  try {
    await pipeline(file.stream, out);
  } catch (error) {
    await unlink(target).catch(() => {});
    throw error;
  }
  return out.bytesWritten;
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
  const { overwrite } = options as DiskStorageOptions;
  if (overwrite !== undefined && typeof overwrite !== 'boolean') {
    fail('option overwrite must be a boolean');
  }
  return overwrite === true;
}

/**
 * multer storage that writes each file exactly where pathgate checked it
 * (`file.pathgatePath`). multer's diskStorage would follow symlinks and
 * overwrite. A race remains between the directory walk and the open (Node
 * has no `openat2(RESOLVE_BENEATH)`): keep the upload tree writable by this
 * process only.
 */
export function safeDiskStorage(root: string, options?: DiskStorageOptions): StorageEngine {
  const overwrite = readOverwrite(options);
  return {
    _handleFile(_req: Request, file: File, callback) {
      const target = file.pathgatePath;
      if (target === undefined) {
        discard(file).then((size) => callback(null, { size }), callback);
        return;
      }
      ensureParent(root, target)
        .then(() => writeFile(file, target, overwrite))
        .then(
          (size) =>
            callback(null, {
              destination: dirname(target),
              filename: basename(target),
              path: target,
              size,
            }),
          (error: unknown) => callback(clientError(error)),
        );
    },
    _removeFile(_req: Request, file: File, callback) {
      const { path } = file;
      for (const key of ['destination', 'filename', 'path'] as const)
        delete (file as Partial<File>)[key];
      if (!path) return callback(null);
      unlink(path).then(
        () => callback(null),
        (error: NodeJS.ErrnoException) => callback(error.code === 'ENOENT' ? null : error),
      );
    },
  };
}
