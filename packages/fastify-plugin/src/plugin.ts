import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { createAppWideHooks } from './hook.js';
import { guardNotFoundHandlers } from './not-found.js';
import { type PathgateOptions, readOptions } from './options.js';
import { guardRoute, registeredBelow, routesMayEscape } from './reach.js';
import { kState, stateOf } from './request-state.js';
import { RouteGuards } from './route-config.js';

/** What a second registration in one tree is told. */
const ONCE_PER_TREE =
  'register it once per tree, at the root (a second policy needs a sibling context)';

/**
 * Throws if the tree holds a pathgate already: above (this copy, another,
 * or the app's own `request.pathgate`), or below.
 */
function refuseSecondRegistration(fastify: FastifyInstance): void {
  // Fastify's own duplicate-decorator error names only the internal symbol.
  if (fastify.hasRequestDecorator(kState)) {
    throw new Error(
      `pathgate: registered already in this context or one above it; ${ONCE_PER_TREE}`,
    );
  }
  // The same, by the other build (kState is each build's own symbol): both
  // would wrap each route's handler, and Fastify fail on the second.
  if (fastify.hasRequestDecorator('pathgate')) {
    throw new Error(
      `pathgate: request.pathgate is decorated already in this context or one above it: by another copy of @pathgate/fastify (its ES module and CommonJS builds are two copies: load it the same way everywhere, all by import or all by require), or by the app; ${ONCE_PER_TREE}`,
    );
  }
  if (registeredBelow(fastify)) {
    throw new Error(
      `pathgate: a context inside this one registered pathgate already; ${ONCE_PER_TREE}`,
    );
  }
}

async function pathgatePlugin(fastify: FastifyInstance, options: PathgateOptions): Promise<void> {
  const settings = readOptions(options);
  refuseSecondRegistration(fastify);
  const guards = new RouteGuards(settings.policy);
  fastify.decorateRequest(kState, null);
  // A getter on the prototype: also null in contexts made before this
  // registration (which miss per-instance initial values), and read-only.
  fastify.decorateRequest('pathgate', {
    getter(this: FastifyRequest) {
      return stateOf(this)?.info ?? null;
    },
  });
  // Decided before the onRoute hook exists: what is in the router now escaped it.
  const appWide = routesMayEscape(fastify);
  /** Contexts created after this registration: every route of theirs passed the onRoute hook. */
  const covered = new WeakSet<FastifyInstance>();
  /** Guards a route that declares paths, seen by `context`'s `onRoute` hook or `setNotFoundHandler`. */
  const guardDeclared = (route: RouteOptions, context: FastifyInstance) => {
    const guard = guards.compileRoute(route);
    if (guard === undefined) return;
    // Only a route that multipart may parse pays for the hook that guards its fields.
    guardRoute(route, guard, settings, context.hasRequestDecorator('parts'));
    if (appWide) RouteGuards.markGuarded(route);
  };
  // Routes declared from here on compile now (a bad declaration stops
  // startup) and get a guarded handler, plus route-level hooks where they
  // need them, closing over their guard: routes without a declaration get
  // neither, and pay nothing.
  fastify.addHook('onRoute', function pathgateOnRoute(this: FastifyInstance, route) {
    if (appWide && this !== fastify) covered.add(this);
    guardDeclared(route, this);
  });
  guardNotFoundHandlers(fastify, guardDeclared);
  // A later plugin's onRoute hook can still change a declaration pathgate read.
  fastify.addHook('onReady', async () => guards.assertDeclarationsKept());
  // Routes declared earlier, or in contexts made earlier, are still guarded:
  // app-wide hooks reach every context, and compile their guards on first use.
  if (appWide) {
    const hooks = createAppWideHooks(settings, guards, covered);
    fastify.addHook('onRequest', hooks.onRequest);
    fastify.addHook('preHandler', hooks.preHandler);
    fastify.addHook('onSend', hooks.onSend);
  }
}

/** The pathgate plugin: register it once, at the root, then declare `config.pathgate` per route. */
export const pathgate = fp(pathgatePlugin, { fastify: '5.x', name: '@pathgate/fastify' });
