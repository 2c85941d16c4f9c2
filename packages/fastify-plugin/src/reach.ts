import type { FastifyInstance, RouteOptions } from 'fastify';
import type { RouteHooks } from './hook.js';

/** What `printRoutes()` answers for a router without routes (find-my-way's text). */
const EMPTY_ROUTER = '(empty tree)';

/**
 * Fastify's own list of a context's child contexts: internal (the symbol is
 * not exported), so it is looked up by its description, and
 * `test/route-config.test.ts` fails should it move. Undefined if it is not
 * found: the caller then assumes children exist.
 */
function childContexts(fastify: FastifyInstance): readonly unknown[] | undefined {
  const key = Object.getOwnPropertySymbols(fastify).find(
    (symbol) => symbol.description === 'fastify.children',
  );
  const children =
    key === undefined ? undefined : (fastify as unknown as Record<symbol, unknown>)[key];
  return Array.isArray(children) ? children : undefined;
}

/**
 * Whether a route with a declaration could escape the plugin's `onRoute`
 * hook, which sees the routes declared from now on in this context and in
 * the contexts created from it afterwards. Two kinds could:
 *
 * - a route already declared (at the root before the plugin, in a context
 *   registered earlier, or right after a `register()` that was not awaited):
 *   the router holds a route (any route: it cannot tell which declare one);
 * - a route declared later in a context that already exists: that context
 *   copied its `onRoute` hooks when it was made.
 *
 * Either way the plugin also installs its app-wide hooks. A wrong "yes"
 * costs time on every request, a wrong "no" would leave routes unguarded:
 * whatever cannot be told is a "yes".
 */
export function routesMayEscape(fastify: FastifyInstance): boolean {
  if (fastify.printRoutes() !== EMPTY_ROUTER) return true;
  const children = childContexts(fastify);
  return children === undefined || children.length > 0;
}

/** Every hook function pathgate attached to a route. */
const attached = new WeakSet<object>();

const HOOK_NAMES = ['onRequest', 'preHandler', 'onSend'] as const;

/**
 * `onRoute`: the route-level hooks of a guarded route, each the route's first
 * of its kind. Fastify runs the hooks of the application and its plugins
 * before any route-level hook; the route's own hooks run after pathgate's,
 * and see checked values. The lists are copies (a list shared by several
 * routes is left alone), and pathgate hooks already in them (copied from
 * another route's options) are dropped: each route runs its own guard, once.
 */
export function attachRouteHooks(route: RouteOptions, hooks: RouteHooks): void {
  const options = route as unknown as Record<string, unknown>;
  for (const name of HOOK_NAMES) {
    const hook = hooks[name];
    const current = options[name];
    if (current === undefined && hook === undefined) continue;
    const list = (Array.isArray(current) ? current : current === undefined ? [] : [current]).filter(
      (fn) => !attached.has(fn),
    );
    if (hook !== undefined) {
      attached.add(hook);
      list.unshift(hook);
    }
    options[name] = list;
  }
}
