import type { CheckedFile, PathSource, RequestValues, RouteGuard } from '@pathgate/core';
import type { Request, RequestHandler } from 'express';
import type { Settings } from './options.js';
import type { Deny } from './reply.js';
import { leaveRouteState, uploadFollows } from './route-state.js';

/** Checked before a multipart body is read; its fields and files are checked after multer. */
const BEFORE_BODY: readonly PathSource[] = ['params', 'query', 'headers'];
const NO_FILES: readonly CheckedFile[] = [];

/**
 * Express 5 gives a named wildcard (`/files/*path`) as its array of decoded
 * segments: one path, so it is joined with `/` (never a list of paths).
 */
function joinedParams(params: Record<string, unknown>): Record<string, unknown> {
  const joined: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(params)) {
    const value = params[key];
    joined[key] = Array.isArray(value) ? value.join('/') : value;
  }
  return joined;
}

/** `req.query` is a getter that parses the URL on every read: read it once. */
function requestValues(req: Request): RequestValues {
  return {
    params: joinedParams(req.params),
    query: req.query,
    body: req.body,
    headers: req.headers,
  };
}

/** A multipart body that no parser has read yet. */
function unreadMultipart(req: Request): boolean {
  return req.body === undefined && typeof req.is('multipart/form-data') === 'string';
}

export interface RouteMiddlewareParts {
  readonly guard: RouteGuard;
  readonly deny: Deny;
  readonly settings: Settings;
}

/**
 * The route-level middleware of `gate.read()` / `gate.write()` (route-level,
 * since Express fills `req.params` only there). It checks every declared
 * value, then hands the canonical paths to the handler on `req.pathgate`.
 * On an unread multipart body, the gate's multer middleware that follows
 * on the route checks the fields and files and sets `req.pathgate`.
 */
export function routeMiddleware({ guard, deny, settings }: RouteMiddlewareParts): RequestHandler {
  const { reportOnly } = settings;
  let warned = false;
  const warnUnparsed = (req: Request) => {
    if (warned) return;
    warned = true;
    settings.log({
      event: 'misconfigured',
      message:
        'a multipart request reached a gate with no gate.multer() middleware after it on its route: its fields and files cannot be checked; add gate.multer().single(...) (or array, fields, any, none) after the gate',
      method: req.method,
      url: req.originalUrl,
    });
  };
  const pathgate: RequestHandler = (req, res, next) => {
    const info = guard.newInfo();
    const multipart = unreadMultipart(req);
    const deferred = multipart && uploadFollows(req, pathgate);
    let result = guard.checkRequest(requestValues(req), info, deferred ? BEFORE_BODY : undefined);
    // Nothing will read files after us: a required one is missing (fail closed).
    if (result.ok && !deferred) result = guard.checkMissingFiles(NO_FILES);
    if (!result.ok && multipart && !deferred) warnUnparsed(req);
    if (!result.ok && !deny(result.denial, req, res, next)) return;
    if (deferred) leaveRouteState(req, { guard, info, deny, reportOnly });
    else req.pathgate = info;
    next();
  };
  return pathgate;
}
