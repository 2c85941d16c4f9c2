import { type GuardResult, type PathDenial, UNEXPECTED_FILE } from '@pathgate/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PathgateAnsweredError, PathgateDeniedError, PathgateFieldTooLongError } from './errors.js';
import type { PathgateSettings } from './options.js';
import { answered, closeIfBodyPending, refuse } from './reply.js';
import type { RequestState } from './request-state.js';
import { removeSpooled } from './spool.js';

/** What the guard touches on a @fastify/multipart part. */
interface Part {
  type?: unknown;
  fieldname: string;
  filename: unknown;
  file?: {
    destroy(): unknown;
    resume(): unknown;
    on?(event: 'error', listener: (error: unknown) => void): unknown;
    /** Node's stored stream error: set when busboy failed the part before the guard saw it. */
    errored?: unknown;
  };
  fields?: Record<string, unknown>;
  /** On a field: busboy cut its value at `limits.fieldSize`. */
  valueTruncated?: unknown;
  pathgatePath?: string;
}

/** The request methods @fastify/multipart decorates (absent where it is not registered). */
interface MultipartMethods {
  parts?: (options?: unknown) => AsyncIterable<Part>;
  files?: (options?: unknown) => AsyncIterable<Part>;
  file?: (options?: unknown) => Promise<Part | undefined>;
  saveRequestFiles?: (options?: unknown) => Promise<{ files: Part[] }>;
}

/** busboy's errors for a malformed body carry no status: the client's fault, a 400, not a 500. */
const MALFORMED = [
  'Multipart: Boundary not found',
  'Unexpected end of multipart data',
  'terminated early due to unexpected end of multipart data',
  'The needle cannot have a length bigger than 256.',
];

function withClientStatus(error: unknown): unknown {
  if (error instanceof Error && !('statusCode' in error)) {
    if (MALFORMED.some((message) => error.message.endsWith(message))) {
      Object.assign(error, { statusCode: 400 });
    }
  }
  return error;
}

/** Iterates multipart's own iterator, giving its malformed-body errors a 400. */
async function* clientErrors<T>(parts: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* parts;
  } catch (error) {
    throw withClientStatus(error);
  }
}

/**
 * On a route with body specs: a field busboy cut at `limits.fieldSize` is a
 * 413, not a value to check as if it had been sent. Nothing after it is
 * handed on.
 */
function refuseCut(part: Part): void {
  if (part.valueTruncated === true) throw new PathgateFieldTooLongError();
}

/**
 * Per request, on routes with body specs and no file spec: an own-property
 * wrapper of multipart's `parts()`, which `attachFieldsToBody` reads
 * through, refusing a cut field (`refuseCut`) and giving a malformed body a
 * 400 (`clientErrors`). Files are not these routes' business, so the other
 * methods stay as they are. The answer to such an error may leave while
 * the rest of the body arrives, and these routes have no `onSend` hook of
 * pathgate's to close the connection then: it is closed here, as a deny's
 * is (multipart stops reading mid-part, and keep-alive would hold the
 * connection open for the rest that no one reads).
 */
export function guardFields(
  request: FastifyRequest,
  reply: FastifyReply,
  settings: PathgateSettings,
): void {
  const methods = request as unknown as MultipartMethods;
  const { parts } = methods;
  if (typeof parts !== 'function') return; // @fastify/multipart is not registered for this route
  methods.parts = async function* pathgateFieldParts(options) {
    try {
      for await (const part of clientErrors(parts.call(request, options))) {
        if (part.type === 'field') refuseCut(part);
        yield part;
      }
    } catch (error) {
      closeIfBodyPending(request, reply, settings);
      throw error;
    }
  };
}

/** Every file part the guard has checked. */
const checked = new WeakSet<object>();

/** Whether a parsed body holds a value, or an element of an array value, passing `test`. */
function someBodyValue(body: unknown, test: (value: unknown) => boolean): boolean {
  return typeof body === 'object' && body !== null && Object.values(body).flat().some(test);
}

/**
 * A body (attachFieldsToBody, or a user's hook) holding a multipart file part
 * that never went through the guard: fail closed.
 */
export function holdsUncheckedFile(body: unknown): boolean {
  return someBodyValue(body, isUncheckedFile);
}

/** A multipart file part the guard never saw. */
function isUncheckedFile(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as Part).type === 'file' &&
    !checked.has(value)
  );
}

/**
 * A parsed multipart body holding a Buffer: `attachFieldsToBody: 'keyValues'`
 * made it of a file part (a field's value is a string, or what its JSON
 * holds), so after a late start, a file no one checked. Not merged with
 * `holdsUncheckedFile`: after a normal start, these Buffers were checked.
 */
export function holdsFileBuffer(body: unknown): boolean {
  return someBodyValue(body, (v) => Buffer.isBuffer(v));
}

/**
 * A part no one is handed (denied, or a nameless one let go) is already in
 * multipart's shared `fields` (the attachFieldsToBody body): take it out.
 */
function forgetPart(part: Part): void {
  const { fields, fieldname } = part;
  if (fields === undefined || !Object.hasOwn(fields, fieldname)) return;
  const entry = fields[fieldname];
  if (entry === part) {
    delete fields[fieldname];
  } else if (Array.isArray(entry)) {
    // From the end: multipart adds each part last, so a part let go as it
    // arrives is found at once, not past every part kept before it.
    const at = entry.lastIndexOf(part);
    if (at === -1) return;
    entry.splice(at, 1);
    if (entry.length === 0) delete fields[fieldname];
  }
}

/**
 * After a deny: multipart's shared `fields` also holds the file parts busboy
 * parsed behind the denied one (a body that arrived in one piece is parsed
 * whole), which no one will check now. They leave it too, so a handler
 * that catches the deny finds only the parts it was handed. One pass per
 * field: removing them one by one cost the square of the parts an app's
 * raised `limits.parts` lets in.
 */
function forgetUnchecked(fields: Record<string, unknown> | undefined): void {
  if (fields === undefined) return;
  for (const [fieldname, entry] of Object.entries(fields)) {
    const emptied = Array.isArray(entry) ? keepChecked(entry) : isUncheckedFile(entry);
    if (emptied) delete fields[fieldname];
  }
}

/**
 * Takes the unchecked files out of a field's list, in place (the handler
 * may hold it): whether that left it empty.
 */
function keepChecked(list: unknown[]): boolean {
  let kept = 0;
  for (const value of list) if (!isUncheckedFile(value)) list[kept++] = value;
  if (kept === list.length) return false;
  list.length = kept;
  return kept === 0;
}

/** The per-request checks the wrappers share. */
class PartChecks {
  /** The fields of parts let through unchecked (report-only): they arrived, so are not missing. */
  private readonly unchecked: { field: string }[] = [];
  /** Report-only: the labels of the file specs already reported in this request. */
  private readonly reported = new Set<string>();
  /** `files()`/`parts()` iterations begun and not left: one the handler dropped stays counted. */
  private open = 0;
  /** `end` checked the required files: a dropped iteration needs no check of its own. */
  private ended = false;
  /** `dropped` checked them as the answer left: the last check, whatever comes after. */
  private droppedChecked = false;
  /** A deny is being answered: `onDeny`'s own answer may pass `onSend` before `refused` is set. */
  private denying = false;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly state: RequestState,
    private readonly settings: PathgateSettings,
  ) {}

  /** Once refused, a request stays refused: a handler that swallowed the 403 gets it again. */
  sticky(part?: Part): void {
    if (this.state.refused === undefined) return;
    part?.file?.destroy();
    throw new PathgateDeniedError(this.state.refused);
  }

  /**
   * Before any read: the sticky deny, or a body whose rest never comes, so
   * that multipart would wait for it forever. The answer ended it
   * (`uploadEnded`), or the client hung up before the read began:
   * multipart only watches for that from then on, so it gets its own error
   * for it here.
   */
  begin(): void {
    this.sticky();
    if (this.state.uploadEnded) throw new PathgateAnsweredError();
    const { raw, server } = this.request;
    if (raw.destroyed && !raw.readableEnded) throw new server.multipartErrors.PrematureCloseError();
  }

  /**
   * Runs before the part is handed on, so a denied file's bytes are never
   * read. `false`: a nameless part of an optional field (a browser's empty
   * file input), drained and not handed on, as if it had not been sent.
   */
  file(part: Part): boolean {
    this.sticky(part);
    checked.add(part);
    const result = this.state.guard.checkFile(part.fieldname, part.filename);
    if (result.ok && result.file === undefined) {
      forgetPart(part);
      part.file?.resume();
      return false;
    }
    if (result.ok) {
      // A body that ends mid-part fails the part's stream, before this check (a
      // body that had all arrived) or in the handler's hands: a 400 either way.
      withClientStatus(part.file?.errored);
      part.file?.on?.('error', withClientStatus);
      part.pathgatePath = result.file.path;
      this.state.info.files.push(result.file);
      return true;
    }
    if (!this.reportedBefore(result.denial)) this.deny(result.denial, part);
    // Report-only: the part goes on, without a pathgatePath.
    this.unchecked.push({ field: part.fieldname });
    return true;
  }

  /**
   * Whether to hand the part on: a file as `file` says; a field always,
   * unless cut on a route with body specs (a 413, `refuseCut`).
   */
  take(part: Part): boolean {
    if (part.type !== 'field') return this.file(part);
    if (this.state.guard.bodyLabel !== undefined) refuseCut(part);
    return true;
  }

  /**
   * After the last part the caller gets, or once its loop is left early:
   * every required file spec must have been met. `handed` is `file()`'s
   * one part, which a deny then refuses unread.
   */
  end(handed?: Part): void {
    // An iteration that was awaiting a part as the answer left: checked then (`dropped`).
    if (this.droppedChecked) return;
    this.ended = true;
    const result = this.missing();
    if (!result.ok) this.deny(result.denial, handed);
  }

  private missing(): GuardResult {
    return this.state.guard.checkMissingFiles([...this.state.info.files, ...this.unchecked]);
  }

  /** An iteration begins (`leave`: it finished, was returned, or failed). */
  enter(): void {
    this.open++;
  }

  leave(): void {
    this.open--;
  }

  /**
   * As the answer leaves, once: an iteration the handler advanced by hand
   * and dropped (neither finished nor returned) never reached `end`, so
   * the required files it would have checked are checked now, against the
   * parts handed out. Nothing when some `end` checked them already, or a
   * deny was thrown; `onSend` answers what is returned.
   */
  dropped(): PathDenial | undefined {
    if (this.open === 0 || this.ended || this.droppedChecked || this.denying) return undefined;
    if (this.state.refused !== undefined) return undefined;
    this.droppedChecked = true;
    const result = this.missing();
    return result.ok ? undefined : result.denial;
  }

  /**
   * After `saveRequestFiles()`: a deny that ended its loop is thrown now. And
   * fail closed should it ever stop reading through `parts()`.
   */
  async saved(files: readonly Part[]): Promise<void> {
    const unchecked = files.some((f) => typeof f.pathgatePath !== 'string');
    if (this.state.refused === undefined && (this.settings.reportOnly || !unchecked)) return;
    await removeSpooled(this.request);
    this.sticky();
    this.deny(UNEXPECTED_FILE);
  }

  /**
   * Report-only: a file spec is reported once, by its first denied part, as
   * a list is by its first denied element: the client picks how many parts
   * follow. (Enforced, the first deny ends the request.)
   */
  private reportedBefore(denial: PathDenial): boolean {
    if (!this.settings.reportOnly) return false;
    const seen = this.reported.has(denial.label);
    this.reported.add(denial.label);
    return seen;
  }

  private deny(denial: PathDenial, part?: Part): void {
    const sentBefore = answered(this.reply);
    this.denying = true;
    let body: object | undefined;
    try {
      body = refuse(this.request, this.reply, denial, this.settings);
    } finally {
      this.denying = false;
    }
    // Report-only: the part goes on, without a pathgatePath, unless the app's
    // onDeny answered the request itself: then no one is left to take it or a
    // later part, so it is refused as if enforced (saveRequestFiles() removes
    // what it spooled), under that answer.
    if (body === undefined && (sentBefore || !answered(this.reply))) return;
    if (part) {
      forgetPart(part);
      // Unread, not resumed: multipart unpipes the request and ends the iteration.
      part.file?.destroy();
      forgetUnchecked(part.fields);
    }
    this.state.refused = denial;
    this.state.thrownBody = body;
    throw new PathgateDeniedError(denial);
  }
}

/**
 * Hands on the parts `checks` lets through, then checks the required file
 * specs. A caller that leaves its loop at a part (`break`, `return`, or a
 * throw in the loop body) calls `return()`, which runs the `finally` with
 * `handing` still set: the rest of the body is never read, so the same
 * check runs against the parts handed out so far, and the loop's exit
 * throws its deny. The three exits look alike from here; after a throw, the
 * language keeps the caller's own error and drops this one. An iterator
 * dropped at a part, with no `return()`, is checked as the answer leaves
 * (`PartChecks.dropped`).
 */
async function* checkedParts(
  checks: PartChecks,
  source: AsyncIterable<Part>,
): AsyncGenerator<Part> {
  // At the first step, before multipart's iteration starts reading.
  checks.begin();
  checks.enter();
  let handing = false;
  try {
    for await (const part of clientErrors(source)) {
      if (!checks.take(part)) continue;
      handing = true;
      yield part;
      handing = false;
    }
  } catch (error) {
    // Ours, or one a caller threw in (`throw()`): that error is the answer.
    handing = false;
    throw error;
  } finally {
    checks.leave();
    if (handing) checks.end();
  }
  checks.end();
}

/**
 * Throws `error`; a deny, once the answer `onDeny` sent itself has left: an
 * async `onSend` hook holds it back with `reply.sent` still false, and
 * Fastify would answer a deny thrown before with its error handler too,
 * over the app's status.
 */
async function throwAfterAnswer(reply: FastifyReply, error: unknown): Promise<never> {
  if (error instanceof PathgateDeniedError && !reply.sent && answered(reply)) {
    await new Promise<void>((left) => reply.then(left, () => left()));
  }
  throw error;
}

/**
 * Per request, on routes that declare files: own-property wrappers of
 * multipart's `parts()`, `files()`, `file()` and `saveRequestFiles()` that
 * check each file part's filename before handing it on. `saveRequestFiles()`
 * and the `attachFieldsToBody` hook read through `request.parts()`, so they
 * are covered too; installed in `onRequest`, before any of them can run (or
 * late, by `checkRoute`, should another plugin have taken that hook away).
 */
export function guardMultipart(
  request: FastifyRequest,
  reply: FastifyReply,
  state: RequestState,
  settings: PathgateSettings,
): void {
  const methods = request as unknown as MultipartMethods;
  const { parts, files, file, saveRequestFiles } = methods;
  if (typeof parts !== 'function') return; // @fastify/multipart is not registered for this route
  const checks = new PartChecks(request, reply, state, settings);
  state.droppedDenial = () => checks.dropped();
  /** `saveRequestFiles()` is making its own `parts()` iteration. */
  let saving = false;
  // A flag per iteration: a parts() loop of the handler's own that runs while
  // saveRequestFiles() does must throw its deny, not just end.
  const guarded = async function* (source: AsyncIterable<Part>, forSave: boolean) {
    try {
      yield* checkedParts(checks, source);
    } catch (error) {
      // Out of its loop, multipart would log the deny at `error` and remove
      // the spool (again after its onResponse hook): the loop ends instead,
      // and its wrapper removes the spool and throws the deny (`saved`).
      if (!forSave || !(error instanceof PathgateDeniedError)) await throwAfterAnswer(reply, error);
    }
  };
  methods.parts = function pathgateParts(options) {
    return guarded(parts.call(request, options), saving);
  };
  if (typeof files === 'function') {
    methods.files = function pathgateFiles(options) {
      return guarded(files.call(request, options), false);
    };
  }
  if (typeof file === 'function') {
    // Only the first file: the rest of the body is never parsed.
    const firstFile = async (options: unknown) => {
      checks.begin();
      const part = await file.call(request, options).catch((error) => {
        throw withClientStatus(error);
      });
      // A nameless first part of an optional field: no file. Either way the rest
      // is never parsed, so a required file spec this part did not meet is missing.
      const handed = part && checks.file(part) ? part : undefined;
      checks.end(handed);
      return handed;
    };
    methods.file = function pathgateFile(options) {
      return firstFile(options).catch((error) => throwAfterAnswer(reply, error));
    };
  }
  if (typeof saveRequestFiles === 'function') {
    const save = async (options: unknown) => {
      checks.begin();
      // multipart calls parts() in its first, synchronous step.
      saving = true;
      let saved: Promise<{ files: Part[] }>;
      try {
        saved = saveRequestFiles.call(request, options);
      } finally {
        saving = false;
      }
      const result = await saved;
      await checks.saved(result.files);
      return result;
    };
    methods.saveRequestFiles = function pathgateSaveRequestFiles(options) {
      return save(options).catch((error) => throwAfterAnswer(reply, error));
    };
  }
}
