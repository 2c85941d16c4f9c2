import type { RouteGuard } from '@pathgate/core';
import type { FastifyInstance, RouteHandlerMethod, RouteOptions } from 'fastify';
import { createRouteHooks, guardedHandler, type RouteHooks } from './hook.js';
import type { PathgateSettings } from './options.js';

/** What `printRoutes()` answers for a router without routes (find-my-way's text). */
const EMPTY_ROUTER = '(empty tree)';

/**
 * One of Fastify's internal values, looked up by its symbol's description
 * (the symbols are not exported) along the context's prototype chain, where
 * Fastify sets them: `test/route-config.test.ts` and `test/not-found.test.ts`
 * fail should one move. `found` false if the symbol is not found.
 */
function internal(
  fastify: FastifyInstance,
  description: string,
): { found: boolean; value?: unknown } {
  for (
    let object: object | null = fastify;
    object !== null;
    object = Object.getPrototypeOf(object)
  ) {
    const key = Object.getOwnPropertySymbols(object).find((s) => s.description === description);
    if (key !== undefined)
      return { found: true, value: (fastify as unknown as Record<symbol, unknown>)[key] };
  }
  return { found: false };
}

/**
 * Fastify's own list of a context's child contexts. Undefined if it is not
 * found: the caller then assumes children exist.
 */
function childContexts(fastify: FastifyInstance): readonly unknown[] | undefined {
  const { value } = internal(fastify, 'fastify.children');
  return Array.isArray(value) ? value : undefined;
}

/**
 * Whether a not-found handler was set in this context already (Fastify's
 * flag that refuses a second one; a context without a prefix shares its
 * parent's). A flag that cannot be found is taken as set.
 */
function notFoundHandlerSet(fastify: FastifyInstance): boolean {
  const flag = internal(fastify, 'fastify.canSetNotFoundHandler');
  return !flag.found || flag.value === false;
}

/**
 * Whether a route with a declaration could escape the plugin's `onRoute`
 * hook, which sees the routes declared from now on in this context and in
 * the contexts created from it afterwards. Three kinds could:
 *
 * - a route already declared (at the root before the plugin, in a context
 *   registered earlier, or right after a `register()` that was not awaited):
 *   the router holds a route (any route: it cannot tell which declare one);
 * - a route declared later in a context that already exists: that context
 *   copied its `onRoute` hooks when it was made;
 * - a not-found handler set already: `setNotFoundHandler` was not wrapped
 *   then (see `guardNotFoundHandlers`).
 *
 * Either way the plugin also installs its app-wide hooks. A wrong "yes"
 * costs time on every request, a wrong "no" would leave routes unguarded:
 * whatever cannot be told is a "yes".
 */
export function routesMayEscape(fastify: FastifyInstance): boolean {
  if (fastify.printRoutes() !== EMPTY_ROUTER) return true;
  const children = childContexts(fastify);
  return children === undefined || children.length > 0 || notFoundHandlerSet(fastify);
}

/**
 * Whether a context inside this one (made before this registration)
 * decorates `request.pathgate` already: another pathgate registration, which
 * Fastify's own check (it looks up the tree only) lets pass. Both would then
 * guard that context's routes, each some of their values only. A list that
 * cannot be found is taken as no context.
 */
export function registeredBelow(fastify: FastifyInstance): boolean {
  return (childContexts(fastify) ?? []).some((child) => {
    const context = child as FastifyInstance;
    return context.hasRequestDecorator('pathgate') || registeredBelow(context);
  });
}

/** Every hook function pathgate attached to a route. */
const attached = new WeakSet<object>();

/** The route's own handler behind each handler pathgate wrapped. */
const wrappedHandlers = new WeakMap<RouteHandlerMethod, RouteHandlerMethod>();

const HOOK_NAMES = ['onRequest', 'preHandler', 'onSend'] as const;

/**
 * The route's own hooks of one kind, as a fresh list (a list shared by
 * several routes is left alone), without pathgate hooks copied from another
 * route's options: each route runs its own guard, once.
 */
function ownHooks(current: unknown): unknown[] {
  const list = Array.isArray(current) ? current : current === undefined ? [] : [current];
  return list.filter((fn) => !attached.has(fn));
}

/**
 * The route's handler, guarded for good: `guardedHandler` around the
 * route's own, and around any handler another plugin's `onRoute` hook (run
 * after pathgate's) sets in its place, a stub or a wrapper of pathgate's.
 * One that deletes or redefines the property stops startup instead.
 * Fastify reads `route.handler` once, after the `onRoute` hooks.
 */
function guardHandler(route: RouteOptions, guard: RouteGuard, settings: PathgateSettings): void {
  const guarded = (handler: RouteHandlerMethod): RouteHandlerMethod => {
    // A handler copied from another guarded route's options: its own, unwrapped.
    const own = wrappedHandlers.get(handler) ?? handler;
    const wrapped = guardedHandler(own, guard, settings);
    wrappedHandlers.set(wrapped, own);
    return wrapped;
  };
  let current: unknown = guarded(route.handler);
  Object.defineProperty(route, 'handler', {
    // Else a hook could delete or redefine it, then set a handler that runs unchecked.
    configurable: false,
    enumerable: true,
    get: () => current,
    set(handler: unknown) {
      if (handler === current) return;
      // Not a function: Fastify refuses the route at startup.
      current = typeof handler === 'function' ? guarded(handler as RouteHandlerMethod) : handler;
    },
  });
}

/**
 * `onRoute`: guards a route that declares paths. Its handler is always
 * guarded (`guardHandler`). A route with a file spec or a `preHandler` of
 * its own also gets route-level hooks, each the route's first of its kind,
 * which check first; the guarded handler then only tests that they did.
 * A route with body specs, declared where @fastify/multipart is registered
 * (`multipart`), also gets an `onRequest` hook that refuses a multipart
 * field cut at `limits.fieldSize` (`guardFields`). Either way the check
 * runs where the route's first `preHandler` would: after the application's
 * and its plugins' `preHandler` hooks (Fastify runs those before a route's
 * own) and before the route's own, which see checked values. The route's
 * own hooks of earlier kinds (`preValidation`) run before it.
 */
export function guardRoute(
  route: RouteOptions,
  guard: RouteGuard,
  settings: PathgateSettings,
  multipart: boolean,
): void {
  const options = route as unknown as Record<string, unknown>;
  const inHandler = !guard.expectsFiles && ownHooks(options.preHandler).length === 0;
  const hooks: RouteHooks = createRouteHooks(guard, settings, { inHandler, multipart });
  for (const name of HOOK_NAMES) {
    const hook = hooks[name];
    if (options[name] === undefined && hook === undefined) continue;
    const list = ownHooks(options[name]);
    if (hook !== undefined) {
      attached.add(hook);
      list.unshift(hook);
    }
    options[name] = list;
  }
  guardHandler(route, guard, settings);
}
