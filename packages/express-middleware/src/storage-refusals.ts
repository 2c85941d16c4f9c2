import { PathgateStorageError, STORAGE_CODES, type StorageCode } from './errors.js';

// The safe disk storage's refusals: each a 4xx with a code and a message
// that names no path, never a 500 for what a client's name or size causes.
// Every other error it meets leaves it as a 500 naming no path either.

type Refusal = readonly [StorageCode, string];

export const NOT_A_FILE: Refusal = [
  STORAGE_CODES.NOT_A_FILE,
  'target is not a regular file of its own',
];
export const EXISTS: Refusal = [STORAGE_CODES.EXISTS, 'the target exists'];
export const SYMLINK: Refusal = [STORAGE_CODES.SYMLINK, 'target is a symlink'];
export const NOT_A_DIRECTORY: Refusal = [
  STORAGE_CODES.NOT_A_DIRECTORY,
  'path component is not a directory',
];
export const NAME_TOO_LONG: Refusal = [STORAGE_CODES.NAME_TOO_LONG, 'file name too long'];
export const FILE_TOO_LARGE: Refusal = [STORAGE_CODES.FILE_TOO_LARGE, 'file too large to store'];
const NO_SPACE: Refusal = [STORAGE_CODES.NO_SPACE, 'no space left to store the file'];
const FAILED: Refusal = [STORAGE_CODES.FAILED, 'the file could not be stored'];

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

export const refuse = ([code, message]: Refusal, options?: ErrorOptions) =>
  new PathgateStorageError(code, message, options);

/**
 * Any error on its way out of the storage, as the storage's: a refusal as
 * it is, an OS error of `OS_ERRORS` as its refusal, and any other (EACCES,
 * EROFS, EIO, a missing root, a bug) as `FAILED`, a 500. Node's messages
 * name the path (`EACCES: permission denied, open '/srv/…'`), which the app's
 * error handler, or Express's own with the stack, would show: the original
 * is kept on `cause` only, for logs.
 */
export function storageError(error: unknown): PathgateStorageError {
  if (error instanceof PathgateStorageError) return error;
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const mapped = typeof code === 'string' && Object.hasOwn(OS_ERRORS, code);
  return refuse(mapped ? (OS_ERRORS[code] as Refusal) : FAILED, { cause: error });
}
