import type {
  CheckedFile,
  GuardResult,
  PathDenial,
  PathgateInfo,
  PathSource,
  RouteGuard,
} from '@pathgate/core';
import { framesNoBody } from '@pathgate/core/http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { misconfiguredOnce, type Settings } from './options.js';
import type { Deny } from './reply.js';
import { setPathgateInfo } from './request-info.js';
import { gateRoutePath, leaveRouteState, uploadFollows } from './route-state.js';
import type { ValuesReader } from './route-values.js';
import { storedFiles, unreadBodyDenial, uploadOf } from './upload.js';

/** Checked before a multipart body is read; its fields and files are checked after multer. */
const BEFORE_BODY: readonly PathSource[] = ['params', 'query', 'headers'];
const NO_FILES: readonly CheckedFile[] = [];

type UnreadBody = 'multipart' | 'other';

/** A `multipart/*` request, as multer reads one (`req.is()` is null without a body). */
const isMultipart = (req: Request): boolean => typeof req.is('multipart') === 'string';

/** Whether a parser set `req.body`: a lazy one's getter that throws did (the guard denies its specs). */
function bodySet(req: Request): boolean {
  try {
    return req.body !== undefined;
  } catch {
    return true;
  }
}

/**
 * A body no parser has read yet: `multipart` (any `multipart/*`, as multer
 * reads), or `other` (not empty: a length of zeros, `00` too, is none, as
 * Node reads it). `req.is()` answers null for a request
 * without a body (no transfer-encoding, no content-length), so a GET skips
 * it: the same answer, without parsing the content type. The headers come
 * first: a GET has no `req.body`, and looking one up misses along the whole
 * prototype chain (about 0.5 µs per request here). A parser reads the body
 * to its end; a `req.body` set while the stream has not ended (body-parser
 * 1.x sets `{}` on a body it skips) is no parsed body.
 */
function unreadBody(req: Request): UnreadBody | undefined {
  const { headers } = req;
  const length = headers['content-length'];
  if (headers['transfer-encoding'] === undefined && length === undefined) return undefined;
  if (bodySet(req) && req.readableEnded) return undefined;
  if (isMultipart(req)) return 'multipart';
  return framesNoBody(headers) ? undefined : 'other';
}

/**
 * A gate middleware: it works on any route's request, so it is generic over
 * the route's types, and Express infers them from the route's path (and the
 * handlers), as after `express.json()`. A plain `RequestHandler` would set
 * the route's params to `ParamsDictionary`.
 */
export type PathgateHandler = <P, ResBody, ReqBody, ReqQuery>(
  req: Request<P, ResBody, ReqBody, ReqQuery>,
  res: Response<ResBody>,
  next: NextFunction,
) => void;

interface RouteMiddlewareParts {
  readonly guard: RouteGuard;
  /** Reads the request parts the route's specs check (worked out when the route was built). */
  readonly values: ValuesReader;
  readonly deny: Deny;
  readonly settings: Settings;
  /** The route parameters the required specs name (see `requiredParams`). */
  readonly params: readonly string[];
}

/**
 * Logs once, on a deny, that a required spec names a parameter the request
 * does not have: a typo, a gate outside the route (Express gives a gate in
 * `app.use()` only the params of its mount path), or a parameter of an
 * optional segment. Without this, nothing would say why every such
 * request is denied. Express does not list a route's params, so a typo and
 * an optional segment share one message.
 */
function unknownParamsWarner(settings: Settings, names: readonly string[]) {
  const warn = misconfiguredOnce(settings);
  return (req: Request, gate: object) => {
    const params: object = req.params ?? {};
    const unknown = names.find((name) => !Object.hasOwn(params, name));
    if (unknown === undefined) return;
    const route = gateRoutePath(req, gate);
    warn(
      req,
      route === undefined
        ? `params "${unknown}" is missing: a gate outside a route (in app.use() or router.use()) gets only the params of its mount path; use it in the route`
        : `params "${unknown}" is missing on route ${route}: a parameter the route does not have denies every request; one in an optional segment, the requests without it (mark its spec optional)`,
    );
  };
}

/**
 * The route-level middleware of `gate.read()` / `gate.write()` (route-level:
 * there Express fills `req.params` with the route's params). It checks
 * every declared value, then hands the canonical paths to the handler on
 * `req.pathgate`.
 * On an unread multipart body, the gate's multer middleware that follows
 * on the route checks the fields and files and sets `req.pathgate`.
 */
export function routeMiddleware({
  guard,
  values,
  deny,
  settings,
  params,
}: RouteMiddlewareParts): PathgateHandler {
  const { reportOnly } = settings;
  const { expectsFiles, bodyLabel, fileLabel } = guard;
  // The deny when no parser or gate.multer() reads the body these specs need.
  const unreadDenial = unreadBodyDenial(guard);
  const warnUnknownParams = unknownParamsWarner(settings, params);
  const warn = misconfiguredOnce(settings);
  /** The unread body these specs cannot check: none that a gate.multer() after us will read. */
  const uncheckable = (body: UnreadBody | undefined, deferred: boolean) => {
    if (body === 'multipart') return deferred || unreadDenial === undefined ? undefined : body;
    return bodyLabel === undefined ? undefined : body;
  };
  const warnUnparsed = (req: Request, body: UnreadBody) =>
    warn(
      req,
      body === 'multipart'
        ? 'a multipart request reached a gate with no gate.multer() middleware after it on its route: its fields and files cannot be checked; add gate.multer().single(...) (or array, fields, any, none) after the gate, as a middleware of the route itself (one called from a function of yours is not seen: handle its errors in an error handler)'
        : 'a request body no parser had read reached a gate with body specs: its values cannot be checked; put the body parser before the gate (express.json(), express.urlencoded()); a body of a type no parser before the gate reads is denied',
    );
  const warnForeign = (req: Request) =>
    warn(
      req,
      'a multipart body another parser read reached a gate with file specs: its files cannot be checked, so they are denied; read it with gate.multer() after the gate instead',
    );
  /** The route's checks; `denials` (report-only) collects every deny, and none stops the rest. */
  const check = (
    req: Request,
    info: PathgateInfo,
    deferred: boolean,
    unread: boolean,
    denials: PathDenial[] | undefined,
  ): GuardResult => {
    const sources = deferred || unread ? BEFORE_BODY : undefined;
    const result = guard.checkRequest(values(req), info, sources, denials);
    if (!result.ok) return result;
    if (unread) return { ok: false, denial: unreadDenial as PathDenial };
    if (deferred || !expectsFiles) return result;
    // Files a parser before us stored (another gate's multer, plain multer), or
    // a multipart body no gate.multer() read, whose files sit where we cannot
    // look: never checked by these specs, optional ones too.
    const foreign = uploadOf(req) === undefined && isMultipart(req);
    if (foreign) warnForeign(req);
    if (foreign || storedFiles(req).length > 0)
      return { ok: false, denial: { reason: 'missing-path', label: fileLabel as string } };
    // Nothing will read files after us: a required one is missing (fail closed).
    return guard.checkMissingFiles(NO_FILES);
  };
  const pathgate: RequestHandler = (req, res, next) => {
    const info = guard.newInfo();
    const body = unreadBody(req);
    const deferred = body === 'multipart' && uploadFollows(req, pathgate);
    // Its specs, even optional ones, deny: skipped, they would let unchecked values through.
    const unread = uncheckable(body, deferred);
    const denials: PathDenial[] | undefined = reportOnly ? [] : undefined;
    const result = check(req, info, deferred, unread !== undefined, denials);
    const refused = result.ok ? denials : [...(denials ?? []), result.denial];
    if (refused !== undefined && refused.length > 0) {
      if (unread !== undefined) warnUnparsed(req, unread);
      warnUnknownParams(req, pathgate);
      // A gate after gate.multer(): what it stored goes before the 403, as its own denies do.
      const stored = uploadOf(req);
      if (stored !== undefined && !reportOnly) {
        stored.refuseStored(refused, (denial) => deny(denial, req, res, next));
        return;
      }
      for (const denial of refused) {
        if (deny(denial, req, res, next)) continue;
        stored?.dropStored(); // report-only, answered by onDeny: no handler takes the files
        return;
      }
    }
    if (deferred) leaveRouteState(req, { guard, info, deny, reportOnly });
    else setPathgateInfo(req, res, info, reportOnly);
    next();
  };
  return pathgate as PathgateHandler;
}
