import {
  type CheckedFile,
  type PathDenial,
  type RouteGuard,
  UNEXPECTED_FILE,
} from '@pathgate/core';
import type { NextFunction, Request, Response } from 'express';
import type { StorageEngine } from 'multer';
import { PathgateDeniedError } from './errors.js';
import { onceRemoved } from './multer-abort.js';
import type { Settings } from './options.js';
import { type Deny, logFailed } from './reply.js';
import { setPathgateInfo } from './request-info.js';
import type { RouteState } from './route-state.js';
import { storesSettled } from './storage.js';

const SKIP: FileDecision = { kind: 'skip' };

/** busboy's messages for a malformed body: the client's fault, so a 400, not a 500. */
const MALFORMED = new Set([
  'Malformed part header',
  'Unexpected end of form',
  'Unexpected end of file',
  'Multipart: Boundary not found',
  'Malformed content type',
]);

/** multer's errors for the app's `limits` (a MulterError's `code`): too much of something, a 413. */
const TOO_LARGE = new Set([
  'LIMIT_PART_COUNT',
  'LIMIT_FILE_SIZE',
  'LIMIT_FILE_COUNT',
  'LIMIT_FIELD_KEY',
  'LIMIT_FIELD_VALUE',
  'LIMIT_FIELD_COUNT',
  'LIMIT_FIELD_NESTING',
  'LIMIT_FIELD_ARRAY_INDEX',
]);

/** busboy's message for a `multipart/*` it cannot parse (`multipart/mixed`): a 415. */
const UNSUPPORTED = 'Unsupported content type: ';

function clientStatus(error: Error): number | undefined {
  if (MALFORMED.has(error.message)) return 400;
  if (error.message.startsWith(UNSUPPORTED)) return 415;
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
export function storedFiles(req: Request): Express.Multer.File[] {
  if (req.file) return [req.file];
  const files = req.files;
  if (!files) return [];
  return Array.isArray(files) ? files : Object.values(files).flat();
}

/**
 * Removes every stored file; settles once each removal has, even one whose
 * storage throws (else the deny waiting on it would never be answered).
 */
function removeAll(req: Request, storage: StorageEngine): Promise<unknown> {
  const remove = (file: Express.Multer.File) =>
    new Promise((done) => storage._removeFile(req, file, done));
  return Promise.allSettled(storedFiles(req).map(remove));
}

/**
 * The deny of a body no parser read, for a route whose specs need it:
 * `missing-path`, naming its first body spec, else its first file spec,
 * optional ones too (a parser after the gate would hand the handler values
 * no one checked). `undefined` for a route that declares neither.
 */
export function unreadBodyDenial(guard: RouteGuard): PathDenial | undefined {
  const label = guard.bodyLabel ?? guard.fileLabel;
  return label === undefined ? undefined : { reason: 'missing-path', label };
}

interface UploadParts {
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
  /** Left by the route's gate middleware(s), in route order; empty when none ran before multer. */
  readonly routes: readonly RouteState[];
  /** The multer gate's own deny and settings, for uploads without a route. */
  readonly deny: Deny;
  readonly settings: Settings;
  readonly storage: StorageEngine;
  /** Called when a file arrives on a route without a gate middleware. */
  readonly onOrphan: (req: Request) => void;
}

/**
 * One file part's decision: allowed (with the path to store it at, and
 * whether a gate checked it for writing), let go (a nameless part of an
 * optional field: multer drops it, nothing is stored), denied by an
 * enforcing gate (answered with that gate's deny; none: the multer gate's
 * own), or let through unchecked: report-only gates would deny it and no
 * enforcing gate decides it.
 */
type FileDecision =
  | { readonly kind: 'allow'; readonly file: CheckedFile; readonly write: boolean }
  | { readonly kind: 'skip' }
  | { readonly kind: 'deny'; readonly denial: PathDenial; readonly route: RouteState | undefined }
  | { readonly kind: 'unchecked'; readonly denial: PathDenial };

type Allowed = Extract<FileDecision, { kind: 'allow' }>;

/**
 * The allow a file part keeps as the gates decide in route order: a later
 * gate's path, unless that gate checked it for reading only and an earlier
 * one checked its own path for writing (storing is writing).
 */
function laterAllowed(
  earlier: Allowed | undefined,
  file: CheckedFile | undefined,
  route: RouteState,
): Allowed | undefined {
  if (file === undefined) return earlier;
  const write = route.guard.mode === 'write';
  return earlier?.write && !write ? earlier : { kind: 'allow', file, write };
}

/**
 * One multipart request under a gate's multer middleware: decides each file
 * part, answers a deny at once (the body may still be arriving), and keeps
 * multer's late callback from reaching the app a second time.
 */
export class Upload {
  /** The Express route whose gate.multer() started it. */
  readonly route: unknown;
  /** Answered or handed to `next(err)`: nothing more may reach the app. */
  settled = false;
  /**
   * multer called back: the body is read and the request went on (or failed)
   * without it. It always does, a deny's abort too: a request whose
   * connection closes before its body ended is destroyed for it
   * (`closeWithConnection`), else multer waits for its end for good.
   */
  finished = false;
  /** The files whose names passed and that were accepted for storage. */
  readonly accepted: CheckedFile[] = [];
  /** The fields of parts let through unchecked (report-only). */
  private readonly unchecked: { field: string }[] = [];
  /** Report-only: the labels of the file specs each gate already reported in this request. */
  private readonly reported = new Map<RouteState | undefined, Set<string>>();
  /** multer handed the body to its parser (it skips one it does not read as multipart). */
  private parsing = false;
  /** A file part's deny, waiting for multer's abort to remove what it stored. */
  private pending: (() => void) | undefined;

  constructor(private readonly parts: UploadParts) {
    this.route = parts.req.route;
    uploads.set(parts.req, this);
  }

  /** Called when multer hands the body to its parser. */
  parsed(): void {
    this.parsing = true;
  }

  /**
   * Decides one file part's name, before storage sees a byte of it. The
   * gates that declare its field decide: every enforcing one must allow it,
   * and the canonical path the last one checked for writing is where it
   * goes (a gate.read() after it checked another path, for reading only); a
   * report-only gate's deny is reported and decides nothing. A field no
   * enforcing gate declares is refused (`unexpected-file`) by the last
   * enforcing gate.
   */
  decideFile(field: string, filename: string | undefined): FileDecision {
    const decision = this.decide(field, filename);
    // Reported and let through, the part still arrived: not reported missing as well.
    if (decision.kind === 'unchecked') this.unchecked.push({ field });
    return decision;
  }

  private decide(field: string, filename: string | undefined): FileDecision {
    const { routes, req, onOrphan } = this.parts;
    if (routes.length === 0) {
      onOrphan(req);
      return { kind: 'deny', denial: UNEXPECTED_FILE, route: undefined };
    }
    let declared = false; // by an enforcing gate
    let enforced: Allowed | undefined;
    let reported: Allowed | undefined;
    let letGo = false;
    let wouldDeny: PathDenial | undefined;
    for (const route of routes) {
      const result = route.guard.checkFile(field, filename);
      if (!result.ok && result.denial.reason === 'unexpected-file') continue; // not its field
      if (!route.reportOnly) {
        if (!result.ok) return { kind: 'deny', denial: result.denial, route };
        declared = true;
        enforced = laterAllowed(enforced, result.file, route);
      } else if (result.ok) {
        reported = laterAllowed(reported, result.file, route);
        letGo ||= result.file === undefined;
      } else {
        wouldDeny = result.denial;
        // Logged now; stop only if the app's onDeny answered the request itself.
        if (!this.report(wouldDeny, route)) return { kind: 'unchecked', denial: wouldDeny };
      }
    }
    if (enforced) return enforced;
    if (declared) return SKIP; // every enforcing gate that declares it let a nameless part go
    const last = routes.filter((route) => !route.reportOnly).at(-1);
    if (last) return { kind: 'deny', denial: UNEXPECTED_FILE, route: last };
    return this.reportOnlyDecision(reported, letGo, wouldDeny);
  }

  /** Only report-only gates: a would-be deny lets the part through unchecked. */
  private reportOnlyDecision(
    reported: Allowed | undefined,
    letGo: boolean,
    wouldDeny: PathDenial | undefined,
  ): FileDecision {
    if (wouldDeny) return { kind: 'unchecked', denial: wouldDeny };
    if (reported) return reported;
    if (letGo) return SKIP;
    // No gate declares the field: reported as the last one would have refused it.
    this.report(UNEXPECTED_FILE, this.parts.routes.at(-1));
    return { kind: 'unchecked', denial: UNEXPECTED_FILE };
  }

  /** Denies now, with the deny of the gate that refused. Returns `true` when the request goes on (report-only). */
  refuse(denial: PathDenial, route: RouteState | undefined): boolean {
    if (this.settled) return false;
    const goesOn = this.deny(denial, route);
    if (!goesOn) this.settled = true;
    return goesOn;
  }

  /**
   * A report-only deny of a file part: each gate reports a file spec once,
   * by its first denied part, as a list by its first denied element (the
   * client picks how many parts follow). Returns `true` when the request goes on.
   */
  private report(denial: PathDenial, route: RouteState | undefined): boolean {
    const labels = this.reported.get(route) ?? new Set<string>();
    this.reported.set(route, labels);
    if (labels.has(denial.label)) return !this.settled;
    labels.add(denial.label);
    return this.refuse(denial, route);
  }

  private deny(denial: PathDenial, route: RouteState | undefined): boolean {
    const { req, res, next } = this.parts;
    return (route?.deny ?? this.parts.deny)(denial, req, res, next);
  }

  /**
   * What a file part's decision does to the body: the error to abort multer
   * with (an enforced deny, or a report-only one the app's `onDeny`
   * answered itself); `undefined` to read on.
   */
  stopsWith(decision: FileDecision): PathgateDeniedError | undefined {
    if (decision.kind === 'deny' && !this.settled) {
      const enforced = !(decision.route ?? this.parts.settings).reportOnly;
      if (enforced) return this.denyOnceRemoved(decision.denial, decision.route);
      if (this.report(decision.denial, decision.route)) return undefined;
    }
    const stops = decision.kind === 'deny' || (decision.kind === 'unchecked' && this.settled);
    return stops ? new PathgateDeniedError(decision.denial) : undefined;
  }

  /**
   * An enforced deny of a file part: settled now (no later part is
   * decided), answered once multer's abort has removed the files it stored
   * and this request's stores have settled, so a client that looks right
   * after the 403 finds none of them. Returns the error to abort with.
   */
  private denyOnceRemoved(denial: PathDenial, route: RouteState | undefined): PathgateDeniedError {
    this.settled = true;
    const answer = () => {
      if (this.pending !== answer) return;
      this.pending = undefined;
      void storesSettled(this.parts.req).then(() => this.deny(denial, route));
    };
    this.pending = answer;
    return onceRemoved(new PathgateDeniedError(denial), answer);
  }

  /**
   * An enforced refusal after multer stored the files (by a gate's body
   * specs or required files here, or by a gate after this middleware): the
   * first deny is answered once they are removed.
   */
  refuseStored(denials: readonly PathDenial[], answer: (denial: PathDenial) => unknown): void {
    const [denial] = denials as [PathDenial];
    void removeAll(this.parts.req, this.parts.storage).then(() => answer(denial));
  }

  /**
   * The app's onDeny answered a report-only deny itself: no handler will
   * take the stored files, so they go (after the answer it already sent).
   */
  dropStored(): void {
    void removeAll(this.parts.req, this.parts.storage);
  }

  /**
   * A user fileFilter's error after multer called back: handed to multer, it
   * would remove the files the handler was already given. Logged instead.
   */
  filterFailedLate(error: Error): void {
    logFailed(this.parts.settings, this.parts.req, 'fileFilter (after the upload was read)')(error);
  }

  /** multer's callback: its error, or the body fields and required files, then the handler. */
  finish(error: unknown): void {
    this.finished = true;
    if (this.pending) {
      // multer aborted with an error of its own first: ours never reached its removal, done by now.
      this.pending();
      return;
    }
    // After our answer, multer's late error must not reach the app (finalhandler would cut the socket).
    if (this.settled) return;
    const { req, next, routes } = this.parts;
    if (error) {
      this.settled = true;
      // multer does not wait for a store whose part failed (a body cut inside it): the disk first.
      void storesSettled(req).then(() => next(withClientStatus(error)));
    } else if (routes.length === 0) next();
    else this.finishRoutes(routes);
  }

  /**
   * Each gate's body specs and required files, in route order. The first
   * enforced deny removes what multer stored and answers; a report-only
   * gate reports each of its denies, and the next gate is checked.
   * `req.pathgate` then gathers every gate's paths, as without multipart.
   */
  private finishRoutes(routes: readonly RouteState[]): void {
    for (const route of routes) {
      const denials = this.checkFields(route);
      if (denials.length === 0) continue;
      if (!route.reportOnly) {
        this.refuseStored(denials, (denial) => this.refuse(denial, route));
        return;
      }
      for (const denial of denials) {
        if (this.refuse(denial, route)) continue;
        this.dropStored();
        return;
      }
    }
    this.proceed(routes);
  }

  /**
   * Multipart text fields exist only now; required files are known only
   * after the last part. Enforced: the first deny; report-only: every one.
   */
  private checkFields(route: RouteState): readonly PathDenial[] {
    const denials: PathDenial[] = [];
    const { guard, info, reportOnly } = route;
    // A body multer called back on without reading it: Express's type-is reads
    // `multipart/form-data; boundary=x;` as multipart, so the gate left it to
    // multer, whose older type-is does not, and skips it.
    if (!this.parsing) return [unreadBodyDenial(guard)].filter((denial) => denial !== undefined);
    // The request itself, not its body: a body whose read throws (a getter an
    // app's middleware defined) then throws in the guard's read, a deny, not
    // here in busboy's event, where it was uncaught (the process ended).
    const body = guard.checkRequest(
      this.parts.req,
      info,
      ['body'],
      reportOnly ? denials : undefined,
    );
    if (!body.ok) return [body.denial];
    const files = guard.checkMissingFiles([...this.accepted, ...this.unchecked]);
    if (!files.ok) denials.push(files.denial);
    return denials;
  }

  /** Every gate's paths on `req.pathgate`; the accepted files once, with the last gate's. */
  private proceed(routes: readonly RouteState[]): void {
    const { req, res } = this.parts;
    const files = routes.at(-1)?.info.files;
    // A push per file: a spread passes each as an argument, a RangeError past about 100k.
    for (const file of this.accepted) files?.push(file);
    for (const route of routes) setPathgateInfo(req, res, route.info, route.reportOnly);
    this.parts.next();
  }
}
