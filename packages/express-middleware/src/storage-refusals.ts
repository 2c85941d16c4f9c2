import { PathgateStorageError, STORAGE_CODES, type StorageCode } from './errors.js';

// The safe disk storage's refusals: each a 4xx with a code and a message
// that names no path, never a 500 for what a client's name or size causes.

export type Refusal = readonly [StorageCode, string];

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

export const refuse = ([code, message]: Refusal) => new PathgateStorageError(code, message);

/** An OS error as the storage's refusal, when it is one of `OS_ERRORS`; any other error as it is. */
export function storageError(error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && Object.hasOwn(OS_ERRORS, code)
    ? refuse(OS_ERRORS[code] as Refusal)
    : error;
}
