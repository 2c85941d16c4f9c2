import type { CheckedFile, FileResult, GuardResult, PathDenial } from '@pathgate/core';
import type { NextFunction, Request, Response } from 'express';
import type { StorageEngine } from 'multer';
import type { Deny } from './reply.js';
import { setPathgateInfo } from './request-info.js';
import type { RouteState } from './route-state.js';

/** What a multer upload on a route without a gate gets: no route declared a file. */
const ORPHAN: FileResult = { ok: false, denial: { reason: 'unexpected-file', label: 'file' } };

/** busboy's messages for a malformed body: the client's fault, so a 400, not a 500. */
const MALFORMED = new Set([
  'Malformed part header',
  'Unexpected end of form',
  'Unexpected end of file',
  'Multipart: Boundary not found',
  'Malformed content type',
]);

/** multer's limit errors (a MulterError's `code`): too much of something, a 413. */
const TOO_LARGE = new Set([
  'LIMIT_PART_COUNT',
  'LIMIT_FILE_SIZE',
  'LIMIT_FILE_COUNT',
  'LIMIT_FIELD_KEY',
  'LIMIT_FIELD_VALUE',
  'LIMIT_FIELD_COUNT',
]);

function clientStatus(error: Error): number | undefined {
  if (MALFORMED.has(error.message)) return 400;
  if (error.name !== 'MulterError') return undefined;
  const { code } = error as Error & { code?: unknown };
  return typeof code === 'string' && TOO_LARGE.has(code) ? 413 : 400;
}

function withClientStatus(error: unknown): unknown {
  if (!(error instanceof Error) || 'status' in error) return error;
  const status = clientStatus(error);
  if (status !== undefined) Object.assign(error, { status, statusCode: status, expose: true });
  return error;
}

const uploads = new WeakMap<Request, Upload>();

/** The upload a gate's multer middleware started for this request, if any. */
export function uploadOf(req: Request): Upload | undefined {
  return uploads.get(req);
}

/** The files multer stored for `single`, `array`, `fields` or `any`. */
function storedFiles(req: Request): Express.Multer.File[] {
  if (req.file) return [req.file];
  const files = req.files;
  if (!files) return [];
  return Array.isArray(files) ? files : Object.values(files).flat();
}

function removeAll(req: Request, storage: StorageEngine): Promise<unknown> {
  const remove = (file: Express.Multer.File) =>
    new Promise((done) => storage._removeFile(req, file, done));
  return Promise.all(storedFiles(req).map(remove));
}

export interface UploadParts {
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
  /** Left by the route's gate middleware; undefined when none ran before multer. */
  readonly route: RouteState | undefined;
  /** The multer gate's own deny, for uploads without a route. */
  readonly deny: Deny;
  readonly storage: StorageEngine;
  /** Called when a file arrives on a route without a gate middleware. */
  readonly onOrphan: (req: Request) => void;
}

/**
 * One multipart request under a gate's multer middleware: decides each file
 * part, answers a deny at once (the body may still be arriving), and keeps
 * multer's late callback from reaching the app a second time.
 */
export class Upload {
  /** Answered or handed to `next(err)`: nothing more may reach the app. */
  settled = false;
  /** The files whose names passed and that were accepted for storage. */
  readonly accepted: CheckedFile[] = [];

  constructor(private readonly parts: UploadParts) {
    uploads.set(parts.req, this);
  }

  /** Decides one file part's name, before storage sees a byte of it. */
  checkFile(field: string, filename: string | undefined): FileResult {
    const { route, req, onOrphan } = this.parts;
    if (route) return route.guard.checkFile(field, filename);
    onOrphan(req);
    return ORPHAN;
  }

  /** Denies now. Returns `true` when the request goes on (report-only). */
  refuse(denial: PathDenial): boolean {
    if (this.settled) return false;
    const { req, res, next, route } = this.parts;
    const goesOn = (route?.deny ?? this.parts.deny)(denial, req, res, next);
    if (!goesOn) this.settled = true;
    return goesOn;
  }

  /** multer's callback: its error, or the body fields and required files, then the handler. */
  finish(error: unknown): void {
    // After our answer, multer's late error must not reach the app (finalhandler would cut the socket).
    if (this.settled) return;
    const { req, next, route } = this.parts;
    if (error) next(withClientStatus(error));
    else if (!route) next();
    else this.finishRoute(route, req);
  }

  private finishRoute(route: RouteState, req: Request): void {
    route.info.files.push(...this.accepted);
    const result = this.checkFields(route);
    if (result.ok) this.proceed(route);
    else if (route.reportOnly) {
      if (this.refuse(result.denial)) this.proceed(route);
    } else {
      // Refused after multer stored the files: remove them before answering.
      removeAll(req, this.parts.storage).then(() => this.refuse(result.denial));
    }
  }

  /** Multipart text fields exist only now; required files are known only after the last part. */
  private checkFields(route: RouteState): GuardResult {
    const body = route.guard.checkRequest({ body: this.parts.req.body }, route.info, ['body']);
    return body.ok ? route.guard.checkMissingFiles(this.accepted) : body;
  }

  private proceed(route: RouteState): void {
    setPathgateInfo(this.parts.req, this.parts.res, route.info);
    this.parts.next();
  }
}
