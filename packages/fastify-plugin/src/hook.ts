import type { GuardResult, PathSource, RequestValues } from '@pathgate/core';
import type { FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from 'fastify';
import { PathgateRouteConfigError } from './errors.js';
import { guardMultipart, holdsUncheckedFile, UNVETTED } from './multipart.js';
import type { PathgateSettings } from './options.js';
import { sendDenial } from './reply.js';
import { type RequestState, startState, stateOf } from './request-state.js';
import type { RouteGuards } from './route-config.js';

/** What is final before the body is read. */
const BEFORE_BODY: readonly PathSource[] = ['params', 'query', 'headers'];

function valuesOf(request: FastifyRequest): RequestValues {
  const { params, query, body, headers } = request;
  return { params, query, body, headers };
}

function isMultipart(request: FastifyRequest): boolean {
  const { isMultipart } = request as { isMultipart?: () => boolean };
  return typeof isMultipart === 'function' && isMultipart.call(request) === true;
}

/**
 * On routes that declare files: a request that is not multipart carries no
 * file, so a required one is missing (and a JSON body cannot pose as a file
 * part). A body holding a file part the guard never saw fails closed.
 */
function checkFiles(request: FastifyRequest, state: RequestState): GuardResult {
  if (!isMultipart(request)) return state.guard.checkMissingFiles(state.info.files);
  if (holdsUncheckedFile(request.body)) return { ok: false, denial: UNVETTED };
  return { ok: true };
}

function checkValues(request: FastifyRequest, state: RequestState): GuardResult {
  if (state.guard.expectsFiles) {
    const files = checkFiles(request, state);
    if (!files.ok) return files;
  }
  return state.guard.checkRequest(valuesOf(request), state.info);
}

/**
 * `onRequest` starts the request's state on guarded routes. On routes that
 * declare files it also checks params, query and headers at once (with
 * attachFieldsToBody, multipart reads the whole upload in preValidation) and
 * wraps the multipart methods. `preHandler` checks every value where it is
 * final: after parsing and validation, as the handler will see it.
 */
export function createRequestHooks(
  settings: PathgateSettings,
  guards: RouteGuards,
): { onRequest: onRequestHookHandler; preHandler: preHandlerHookHandler } {
  return {
    onRequest: function pathgateOnRequest(request, reply, done) {
      let guard: ReturnType<RouteGuards['forRequest']>;
      try {
        guard = guards.forRequest(request);
      } catch (error) {
        request.log.error({ err: error }, 'pathgate: invalid route declaration');
        return done(new PathgateRouteConfigError());
      }
      if (guard === undefined) return done();
      const state = startState(request, guard);
      if (!guard.expectsFiles) return done();
      if (!settings.reportOnly) {
        const early = guard.checkRequest(valuesOf(request), guard.newInfo(), BEFORE_BODY);
        if (!early.ok && sendDenial(request, reply, early.denial, settings)) return;
      }
      guardMultipart(request, reply, state, settings);
      done();
    },
    preHandler: function pathgatePreHandler(request, reply, done) {
      const state = stateOf(request);
      if (state === null) return done();
      const result = checkValues(request, state);
      if (!result.ok && sendDenial(request, reply, result.denial, settings)) return;
      done();
    },
  };
}
