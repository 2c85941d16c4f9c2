import { callWatching, denyBody, hookBody, loggedPath, type PathDenial } from '@pathgate/core';
import { bodyPending, closeWithAnswer, lingerClose } from '@pathgate/core/http';
import type { NextFunction, Request, Response } from 'express';
import { PathgateDeniedError } from './errors.js';
import type { Settings } from './options.js';

/**
 * Handles one deny with the gate's settings. Returns `true` when the request
 * goes on (report-only), `false` when it was answered or handed to `next(err)`.
 */
export type Deny = (denial: PathDenial, req: Request, res: Response, next: NextFunction) => boolean;

/**
 * Answering while the body arrives: close the connection (keep-alive would
 * read the rest of a refused upload) and linger so the client sees the 403.
 * Headers an earlier middleware sent (an event stream) said keep-alive: the
 * connection closes once the response ends.
 */
function closeIfBodyPending(req: Request, res: Response, settings: Settings): void {
  if (bodyPending(req) && lingerClose(req, settings.linger)) closeWithAnswer(req, res);
}

function logReportOnly(settings: Settings, denial: PathDenial, req: Request): void {
  const path = denial.result?.path;
  settings.log({
    event: 'report-only',
    message: `would deny ${denial.label} (${denial.reason})`,
    method: req.method,
    url: req.originalUrl,
    label: denial.label,
    reason: denial.reason,
    ...(path === undefined ? {} : { path: loggedPath(path) }),
  });
}

/** What a hook rejected with, as text; a value that cannot be made text does not throw. */
function describe(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return 'a value that cannot be printed';
  }
}

/**
 * An app function that failed where nothing can answer for it any more: an
 * `onDeny` that throws, or an async one that rejects (after the reply; the
 * deny goes on as if it had returned nothing), or a `fileFilter` or storage
 * engine that fails after it called back. Logged, never an unhandled rejection.
 */
export function logFailed(
  settings: Settings,
  req: Request,
  hook: string,
): (error: unknown) => void {
  return (error) =>
    settings.log({
      event: 'hook-failed',
      message: `${hook} failed: ${describe(error)}`,
      method: req.method,
      url: req.originalUrl,
      error,
    });
}

/** Answers that leave after the call that began them: `res.download` calls `res.sendFile`. */
const LATE_ANSWERS = ['render', 'sendFile'] as const;

/**
 * Runs `call` (the app's `onDeny`), calling `begun` if it begins an answer
 * that leaves later: a view rendered (engines read their file on a later
 * turn), a file sent, a stream piped in. `res.headersSent` is still false
 * then; answering too would make that answer throw ERR_HTTP_HEADERS_SENT
 * from its callback, which ends the process.
 */
function watchLateAnswers(res: Response, begun: () => void, call: () => unknown): unknown {
  res.once('pipe', begun);
  try {
    return callWatching(res, LATE_ANSWERS, begun, call);
  } finally {
    res.removeListener('pipe', begun);
  }
}

export function makeDeny(settings: Settings): Deny {
  return function deny(denial, req, res, next) {
    const { reportOnly, onDeny } = settings;
    // Headers an earlier middleware sent (an event stream) are no answer of onDeny's.
    const sentBefore = res.headersSent;
    if (!reportOnly) closeIfBodyPending(req, res, settings);
    let late = false;
    const begun = () => {
      late = true;
    };
    const shaped = hookBody(
      () => onDeny && watchLateAnswers(res, begun, () => onDeny(denial, req, res)),
      logFailed(settings, req, 'onDeny'),
      res,
    );
    const answered = late || res.writableEnded || (res.headersSent && !sentBefore);
    if (reportOnly) {
      logReportOnly(settings, denial, req);
      return !answered;
    }
    if (answered) return false; // onDeny answered itself
    // No 403 can follow sent headers: the error handler ends the request (Express's closes the connection).
    if (settings.errors === 'next' || sentBefore) next(new PathgateDeniedError(denial));
    else res.status(403).json(shaped ?? denyBody(denial));
    return false;
  };
}
