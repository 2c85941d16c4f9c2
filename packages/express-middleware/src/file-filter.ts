import { callCatching, UNEXPECTED_FILE } from '@pathgate/core';
import type { Request } from 'express';
import type { FileFilterCallback, Options } from 'multer';
import { PathgateDeniedError } from './errors.js';
import { uploadOf } from './upload.js';

export type FileFilter = NonNullable<Options['fileFilter']>;

/** The files whose `pathgatePath` only a gate.read() checked: readable there, maybe not writable. */
const readOnly = new WeakSet<Express.Multer.File>();

/** Whether only a gate.read() checked the file's `pathgatePath`: a storage must not write there. */
export const checkedForReading = (file: Express.Multer.File): boolean => readOnly.has(file);

/** The files a report-only deny let through without a checked path. */
const unchecked = new WeakSet<Express.Multer.File>();

/**
 * Whether a gate's multer let the file through unchecked (report-only): a
 * file without `pathgatePath` that it did not is one no gate saw at all.
 */
export const letThroughUnchecked = (file: Express.Multer.File): boolean => unchecked.has(file);

/**
 * The checked path, read-only: a user filter (or storage) that assigns
 * another throws instead of sending the file where no check looked.
 */
function pinPath(file: Express.Multer.File, path: string, write: boolean): void {
  Object.defineProperty(file, 'pathgatePath', { value: path, enumerable: true });
  if (!write) readOnly.add(file);
}

/**
 * multer's `fileFilter`: runs once per file part, after its headers and
 * before storage reads a byte. A denied name is answered at once; an allowed
 * one gets its canonical path on `file.pathgatePath` (enumerable, so multer
 * copies it to `req.file`; read-only), then the user's own filter decides.
 */
export function pathgateFileFilter(userFilter: FileFilter | undefined): FileFilter {
  return function fileFilter(req: Request, file: Express.Multer.File, cb: FileFilterCallback) {
    const upload = uploadOf(req);
    // A filter outside a gate's multer middleware cannot answer early: it refuses every file.
    if (!upload) return cb(new PathgateDeniedError(UNEXPECTED_FILE));
    if (upload.settled) return cb(null, false); // already answered: skip the rest quietly
    const decision = upload.decideFile(file.fieldname, file.originalname);
    // Let go: only a nameless part is, and multer drops those before any fileFilter.
    if (decision.kind === 'skip') return cb(null, false);
    const stop = upload.stopsWith(decision);
    if (stop) return cb(stop);
    // report-only goes on without a checked path: pathgate's storage writes nothing for it.
    if (decision.kind === 'allow') pinPath(file, decision.file.path, decision.write);
    else unchecked.add(file);
    let answered = false;
    const accept = ((error: Error | null, include?: boolean) => {
      // The first answer decides: multer would hand the one stream to storage
      // again (a hang, or a file written from the rest of a part it drained).
      // A later error still aborts the request, while multer reads it.
      if (error && upload.finished) return upload.filterFailedLate(error);
      if (answered && !error) return;
      answered = true;
      if (!error && include && decision.kind === 'allow') upload.accepted.push(decision.file);
      (cb as (error: Error | null, include?: boolean) => void)(error, include);
    }) as FileFilterCallback;
    if (!userFilter) return accept(null, true);
    callCatching(() => userFilter(req, file, accept), accept);
  };
}
