import {
  type GuardResult,
  type PathDenial,
  type PathSource,
  type RequestValues,
  type RouteGuard,
  recordView,
  UNEXPECTED_FILE,
  UNREADABLE_PART,
} from '@pathgate/core';
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  onSendHookHandler,
  preHandlerHookHandler,
  RouteHandlerMethod,
} from 'fastify';
import { PathgateDeniedError, PathgateRouteConfigError } from './errors.js';
import { log } from './log.js';
import { guardFields, guardMultipart, holdsFileBuffer, holdsUncheckedFile } from './multipart.js';
import type { PathgateSettings } from './options.js';
import { createOnSend, sendDenial } from './reply.js';
import { type RequestState, startState, stateOf } from './request-state.js';
import type { RouteGuards } from './route-config.js';

/** What is final before the body is read. */
const BEFORE_BODY: readonly PathSource[] = ['params', 'query', 'headers'];

function isMultipart(request: FastifyRequest): boolean {
  const { isMultipart } = request as { isMultipart?: () => boolean };
  return typeof isMultipart === 'function' && isMultipart.call(request) === true;
}

/** A `multipart/*` content type, whichever parser read it. */
const MULTIPART_TYPE = /^\s*multipart\//i;

/**
 * The request's query or body, or `UNREADABLE_PART` when its read throws (a
 * getter an app's hook defined): the guard denies that part's specs, and the
 * steps after it go on to report-only's answer, not a 500.
 */
function partOf(request: FastifyRequest, part: 'query' | 'body'): unknown {
  try {
    return request[part];
  } catch {
    return UNREADABLE_PART;
  }
}

/**
 * On routes that declare files: a request that is not multipart carries no
 * file, so a required one is missing (and a JSON body cannot pose as a file
 * part). A multipart body @fastify/multipart did not parse (the app's own
 * parser) holds files pathgate never sees: every file spec, optional ones
 * too, is missing, as under the Express adapter for a multipart body no
 * `gate.multer()` read. A body holding a file part the guard never saw
 * fails closed, as does one that cannot be read.
 */
function checkFiles(request: FastifyRequest, state: RequestState): GuardResult {
  if (!isMultipart(request)) {
    const { guard } = state;
    if (!MULTIPART_TYPE.test(request.headers['content-type'] ?? '')) {
      return guard.checkMissingFiles(state.info.files);
    }
    return { ok: false, denial: { reason: 'missing-path', label: guard.fileLabel as string } };
  }
  const body = partOf(request, 'body');
  if (body === UNREADABLE_PART || holdsUncheckedFile(body)) {
    return { ok: false, denial: UNEXPECTED_FILE };
  }
  return { ok: true };
}

/**
 * What the guard reads: the request itself (it reads `params`, `query`,
 * `body` and `headers`, only those declared), unless a parser made a
 * declared query or body a container (a `querystringParser` or a
 * content-type parser's `URLSearchParams` or `Map`): then the parts, with
 * its record view, so every spec, optional ones too, checks what the
 * handler's `.get()` reads. A part whose read throws (a getter an app's
 * hook defined) goes in as `UNREADABLE_PART`, whose specs all deny, as on
 * Express: read once, not again by the guard.
 */
function valuesOf(request: FastifyRequest, guard: RouteGuard): RequestValues {
  const { declares } = guard;
  if (!declares.query && !declares.body) return request;
  // Only the parts declared: a throwing one the route never reads leaves the other viewed.
  const query = declares.query ? partOf(request, 'query') : undefined;
  const body = declares.body ? partOf(request, 'body') : undefined;
  const queryView = recordView(query);
  const bodyView = recordView(body);
  const unreadable = query === UNREADABLE_PART || body === UNREADABLE_PART;
  if (queryView === query && bodyView === body && !unreadable) return request;
  return { params: request.params, query: queryView, body: bodyView, headers: request.headers };
}

/**
 * Every declared value, where it is final: after parsing and validation, as
 * the handler will see it (`valuesOf`). With `denials` (report-only), every
 * deny goes there and none stops the rest.
 */
function checkValues(
  request: FastifyRequest,
  state: RequestState,
  denials: PathDenial[] | undefined,
): GuardResult {
  const { guard } = state;
  const result = guard.checkRequest(valuesOf(request, guard), state.info, undefined, denials);
  if (!result.ok) return result;
  const unread = unreadBody(request, guard);
  if (unread !== undefined) {
    if (denials === undefined) return { ok: false, denial: unread };
    // A required body spec was already reported missing: one report per spec.
    if (!denials.some((d) => d.label === unread.label)) denials.push(unread);
  }
  // Then the files, as the core's order and the Express adapter have it.
  const files = guard.expectsFiles ? checkFiles(request, state) : result;
  if (files.ok || denials === undefined) return files;
  denials.push(files.denial);
  return result;
}

/**
 * A multipart body that no `attachFieldsToBody` parsed, on a route with
 * body specs: they cannot be checked, optional ones neither, so they deny.
 */
function unreadBody(request: FastifyRequest, guard: RouteGuard): PathDenial | undefined {
  const label = guard.bodyLabel;
  if (label === undefined || partOf(request, 'body') !== undefined || !isMultipart(request))
    return undefined;
  return { reason: 'missing-path', label };
}

/**
 * Checks every declared value and answers a deny: false when the 403 went
 * out. In report-only mode every deny is reported (none stops the others
 * from being checked and recorded) and the request goes on, unless
 * `onDeny` answered it.
 */
function checkAndAnswer(
  request: FastifyRequest,
  reply: FastifyReply,
  state: RequestState,
  settings: PathgateSettings,
): boolean {
  if (settings.reportOnly) return reportAll(request, reply, state, settings);
  const result = checkValues(request, state, undefined);
  if (!result.ok && sendDenial(request, reply, result.denial, settings)) return false;
  state.checked = true;
  return true;
}

/**
 * Report-only: every deny is reported, none stops the others from being
 * checked and recorded. False when the app's onDeny answered one itself:
 * the request ends there, as after an enforced deny (no later onDeny call,
 * no handler).
 */
function reportAll(
  request: FastifyRequest,
  reply: FastifyReply,
  state: RequestState,
  settings: PathgateSettings,
): boolean {
  const denials: PathDenial[] = [];
  checkValues(request, state, denials); // with `denials`, never a deny of its own
  for (const denial of denials) if (sendDenial(request, reply, denial, settings)) return false;
  state.checked = true;
  return true;
}

/**
 * The first params, query or headers value that is there before the body
 * is read, and denied. A missing one is left to the full check: a schema
 * default or a `preValidation` hook may still fill it.
 */
function earlyDenial(request: FastifyRequest, guard: RouteGuard): PathDenial | undefined {
  const denials: PathDenial[] = [];
  guard.checkRequest(valuesOf(request, guard), guard.newInfo(), BEFORE_BODY, denials);
  return denials.find((denial) => denial.reason !== 'missing-path');
}

/**
 * On routes that declare files, in `onRequest` (or late, in `checkRoute`):
 * params, query and headers are checked at once (with attachFieldsToBody,
 * multipart reads the whole upload in preValidation), and the multipart
 * methods are wrapped. Returns true when the 403 went out.
 */
function startFiles(
  request: FastifyRequest,
  reply: FastifyReply,
  state: RequestState,
  settings: PathgateSettings,
): boolean {
  if (!settings.reportOnly) {
    const early = earlyDenial(request, state.guard);
    if (early !== undefined && sendDenial(request, reply, early, settings)) return true;
  }
  guardMultipart(request, reply, state, settings);
  return false;
}

/**
 * On a route without a file spec: starts the request's state and checks
 * every value. False when the 403 went out (report-only mode goes on,
 * unless `onDeny` answered the request).
 */
function passes(
  request: FastifyRequest,
  reply: FastifyReply,
  guard: RouteGuard,
  settings: PathgateSettings,
  appWide: boolean,
): boolean {
  const state = startState(request, guard, appWide);
  if (settings.reportOnly) return reportAll(request, reply, state, settings);
  // The hot path of most routes: checkValues' steps, minus the file checks.
  const result = guard.checkRequest(valuesOf(request, guard), state.info);
  const denial = result.ok ? unreadBody(request, guard) : result.denial;
  if (denial !== undefined && sendDenial(request, reply, denial, settings)) return false;
  state.checked = true;
  return true;
}

/**
 * After a late start: a multipart body already parsed (attachFieldsToBody)
 * went past the wrappers, and past their last step, the required files'
 * check, made here. A body holding file parts was denied already
 * (`checkFiles`); one holding keyValues' Buffers is denied here.
 */
function parsedFilesMet(
  request: FastifyRequest,
  reply: FastifyReply,
  state: RequestState,
  settings: PathgateSettings,
): boolean {
  const body = partOf(request, 'body');
  if (body === undefined || !isMultipart(request) || holdsUncheckedFile(body)) return true;
  if (holdsFileBuffer(body)) return !sendDenial(request, reply, UNEXPECTED_FILE, settings);
  const result = state.guard.checkMissingFiles(state.info.files);
  return result.ok || !sendDenial(request, reply, result.denial, settings);
}

/**
 * The whole check of a route, from its `preHandler` hook or its guarded
 * handler (`appWide`: from the app-wide `preHandler`, for a route the
 * `onRoute` hook never saw). False when the 403 went out. On
 * a route with a file spec, pathgate's `onRequest` hook started the state;
 * should another plugin have taken that hook away, it starts here, late:
 * multipart is wrapped now, and a body it already parsed holds files no
 * one checked, which deny.
 */
function checkRoute(
  request: FastifyRequest,
  reply: FastifyReply,
  guard: RouteGuard,
  settings: PathgateSettings,
  appWide = false,
): boolean {
  if (!guard.expectsFiles) return passes(request, reply, guard, settings, appWide);
  const started = stateOf(request);
  const late = started === null || started.guard !== guard;
  const state = late ? startState(request, guard, appWide) : started;
  if (late && startFiles(request, reply, state, settings)) return false;
  if (!checkAndAnswer(request, reply, state, settings)) return false;
  return !late || parsedFilesMet(request, reply, state, settings);
}

/** This route's check already passed for this request (in pathgate's `preHandler`). */
function checkedFor(request: FastifyRequest, guard: RouteGuard): boolean {
  const state = stateOf(request);
  return state?.checked === true && state.guard === guard;
}

/**
 * A deny thrown out of a multipart call after the request was answered (an
 * `onDeny` that answered it itself): the throw only stopped the handler, and
 * the deny was logged already. Fastify logs any rejection after `reply.sent`
 * at `error`, and knows no error that says "answered": the handler's promise
 * resolves to nothing instead, which Fastify leaves alone once the reply is sent.
 */
function settleAnswered(result: unknown, request: FastifyRequest, reply: FastifyReply): unknown {
  // A sync handler's value, or the reply itself (a thenable Fastify waits on as it is).
  if (result === reply || typeof (result as PromiseLike<unknown> | null)?.then !== 'function') {
    return result;
  }
  // Any thenable, as Fastify takes one: a query builder's or Bluebird's too.
  return Promise.resolve(result).catch((error: unknown) => {
    const refused = stateOf(request)?.refused !== undefined;
    if (refused && reply.sent && error instanceof PathgateDeniedError) return undefined;
    throw error;
  });
}

/**
 * The handler of every route the `onRoute` hook guarded. On a route with
 * neither a file spec nor a `preHandler` hook of its own, the check runs
 * here, where the route's first `preHandler` would run (after every app and
 * plugin hook), with no hook at all: Fastify then skips its hook runner on
 * routes that have no other `preHandler`, up to 3% of a small route's
 * throughput (bench/README.md). On the others, pathgate's hooks checked
 * already; should another plugin's `onRoute` hook have taken them away, the
 * check runs here all the same: the handler never runs unchecked.
 */
export function guardedHandler(
  handler: RouteHandlerMethod,
  guard: RouteGuard,
  settings: PathgateSettings,
): RouteHandlerMethod {
  const guarded: RouteHandlerMethod = function pathgateHandler(this, request, reply) {
    if (!checkedFor(request, guard) && !checkRoute(request, reply, guard, settings)) return;
    return handler.call(this, request, reply);
  };
  // Only a route with a file spec has multipart calls that throw a deny; the
  // others keep a handler with no extra step (bench/README.md, hook-cost).
  if (!guard.expectsFiles) return guarded;
  return function pathgateFileHandler(this: FastifyInstance, request, reply) {
    return settleAnswered(guarded.call(this, request, reply), request, reply);
  };
}

/** The hooks one guarded route gets, closing over its compiled guard. */
export interface RouteHooks {
  onRequest?: onRequestHookHandler;
  preHandler?: preHandlerHookHandler;
  onSend?: onSendHookHandler;
}

/** A route with body specs and no file spec: `parts()` refuses a cut field (`guardFields`). */
function createFieldsOnRequest(settings: PathgateSettings): onRequestHookHandler {
  return function pathgateFieldsOnRequest(request, reply, done) {
    guardFields(request, reply, settings);
    done();
  };
}

/**
 * Route-level hooks for a route the `onRoute` hook saw. A route with file
 * specs gets `onRequest` (starts the state, checks early, wraps multipart),
 * `preHandler` and `onSend` (see `createOnSend`); the guarded handler then
 * only tests that the check passed. Any other route gets a `preHandler`
 * that starts the request's state and checks every value unless the check
 * runs in its guarded handler (`inHandler`), and, with body specs where
 * multipart is registered (`multipart`), an `onRequest` that wraps its
 * `parts()` before `attachFieldsToBody` reads a field (`guardFields`).
 */
export function createRouteHooks(
  guard: RouteGuard,
  settings: PathgateSettings,
  { inHandler, multipart }: { inHandler: boolean; multipart: boolean },
): RouteHooks {
  const preHandler: preHandlerHookHandler = function pathgatePreHandler(request, reply, done) {
    if (checkRoute(request, reply, guard, settings)) done();
  };
  if (!guard.expectsFiles) {
    return {
      ...(multipart && guard.bodyLabel !== undefined
        ? { onRequest: createFieldsOnRequest(settings) }
        : {}),
      ...(inHandler ? {} : { preHandler }),
    };
  }
  return {
    onRequest: function pathgateOnRequest(request, reply, done) {
      const state = startState(request, guard, false);
      if (!startFiles(request, reply, state, settings)) done();
    },
    preHandler,
    onSend: createOnSend(settings, false),
  };
}

/**
 * The guard the app-wide hooks apply to the request's route: undefined for
 * a route without a declaration, or one the `onRoute` hook guarded; a bad
 * declaration is logged, and is the error to answer with.
 */
function appWideGuard(
  guards: RouteGuards,
  request: FastifyRequest,
): RouteGuard | FastifyError | undefined {
  try {
    return guards.forRequest(request);
  } catch (error) {
    log(request, 'error', { err: error }, 'pathgate: invalid route declaration');
    return new PathgateRouteConfigError();
  }
}

/**
 * App-wide hooks, installed only when some route may escape the `onRoute`
 * hook (see `routesMayEscape`). They guard those routes as the route-level
 * hooks would, compiling each declaration on first use, and leave every
 * other route alone: at once for a route declared in a context created
 * after the plugin (`covered`: `this` is the route's own instance), else
 * after one look at `request.routeOptions`. The `preHandler` looks again,
 * and checks the route it runs for: `reply.callNotFound()` runs the
 * not-found handler's `preHandler` hooks and handler, not its `onRequest`.
 */
export function createAppWideHooks(
  settings: PathgateSettings,
  guards: RouteGuards,
  covered: WeakSet<FastifyInstance>,
): Required<RouteHooks> {
  return {
    onRequest: function pathgateAppWideOnRequest(this: FastifyInstance, request, reply, done) {
      if (covered.has(this)) return done();
      const guard = appWideGuard(guards, request);
      if (guard === undefined || guard instanceof Error) return done(guard);
      if (!guard.expectsFiles) {
        if (guard.bodyLabel !== undefined) guardFields(request, reply, settings);
        return done();
      }
      const state = startState(request, guard, true);
      if (!startFiles(request, reply, state, settings)) done();
    },
    preHandler: function pathgateAppWidePreHandler(this: FastifyInstance, request, reply, done) {
      if (covered.has(this)) return done();
      const guard = appWideGuard(guards, request);
      if (guard === undefined || guard instanceof Error) return done(guard);
      if (checkRoute(request, reply, guard, settings, true)) done();
    },
    onSend: createOnSend(settings, true),
  };
}
