import {
  denyBody,
  type GuardDenyReason,
  type PathDenial,
  SAND_PERM_CODES,
  type SandPermCode,
} from '@pathgate/core';

/**
 * What `errors: 'next'` hands to `next(err)`, shaped like an http-errors
 * error so Express error handlers render it as a 403. Its message and
 * enumerable fields name the reason and the spec, never a path or the root;
 * `denial` (not enumerable) keeps the details for logs.
 */
export class PathgateDeniedError extends Error {
  readonly status = 403;
  readonly statusCode = 403;
  readonly expose = true;
  readonly code: SandPermCode = SAND_PERM_CODES.DENIED;
  readonly reason: GuardDenyReason;
  /** The spec that denied: `body.from`, `params.path`, `file avatar`. */
  readonly label: string;
  declare readonly denial: PathDenial;

  constructor(denial: PathDenial) {
    super(denyBody(denial).message);
    this.name = 'PathgateDeniedError';
    this.reason = denial.reason;
    this.label = denial.label;
    Object.defineProperty(this, 'denial', { value: denial, enumerable: false });
  }
}

/** Codes of the safe disk storage's refusals, and of its own failure (`FAILED`); the README lists the same. */
export const STORAGE_CODES = Object.freeze({
  /** The target exists and `overwrite` is off, or it is a folder (`overwrite` or not). */
  EXISTS: 'PATHGATE_EXISTS',
  /** A component of the target is a symlink or not a directory. */
  NOT_A_DIRECTORY: 'PATHGATE_NOT_A_DIRECTORY',
  /** The target is a symlink. */
  SYMLINK: 'PATHGATE_SYMLINK',
  /** The target (with `overwrite`) is not a regular file of its own: a FIFO, a device, a hard link. */
  NOT_A_FILE: 'PATHGATE_NOT_A_FILE',
  /** A name is longer than the file system allows. */
  NAME_TOO_LONG: 'PATHGATE_NAME_TOO_LONG',
  /** The file grew past what the file system or the process may write (`EFBIG`). */
  FILE_TOO_LARGE: 'PATHGATE_FILE_TOO_LARGE',
  /** The disk or the quota is full (`ENOSPC`, `EDQUOT`). */
  NO_SPACE: 'PATHGATE_NO_SPACE',
  /** Any other failure (EACCES, EROFS, EIO, a missing root, a bug): the server's, not the client's. */
  FAILED: 'PATHGATE_STORAGE_FAILED',
} as const);

export type StorageCode = (typeof STORAGE_CODES)[keyof typeof STORAGE_CODES];

const STORAGE_STATUS: Record<StorageCode, number> = {
  PATHGATE_EXISTS: 409,
  PATHGATE_NOT_A_DIRECTORY: 403,
  PATHGATE_SYMLINK: 403,
  PATHGATE_NOT_A_FILE: 403,
  PATHGATE_NAME_TOO_LONG: 400,
  PATHGATE_FILE_TOO_LARGE: 413,
  PATHGATE_NO_SPACE: 507,
  PATHGATE_STORAGE_FAILED: 500,
};

/**
 * Why the safe disk storage refused or could not finish an allowed file. It
 * reaches the app's error handler through multer, with an http-errors shape
 * and a message that names no path, so bad input never becomes a 500 and a
 * full disk is a 507, not an unexplained 500. Any other failure is a 500
 * `FAILED`, not exposed (the server's fault: a handler shows a generic
 * message); the OS error behind it, path and all, stays on `cause` for logs.
 */
export class PathgateStorageError extends Error {
  readonly status: number;
  readonly statusCode: number;
  readonly expose: boolean;
  readonly code: StorageCode;

  // `{ cause }`, not ES2022's `ErrorOptions`: the built d.ts names no type
  // an older `lib` (an ES2021 target's) lacks.
  constructor(code: StorageCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PathgateStorageError';
    this.code = code;
    this.status = STORAGE_STATUS[code];
    this.statusCode = this.status;
    this.expose = code !== STORAGE_CODES.FAILED;
  }
}
