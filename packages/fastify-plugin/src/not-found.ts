import type { FastifyInstance, RouteOptions } from 'fastify';

type SetNotFoundHandler = (this: FastifyInstance, options?: unknown, handler?: unknown) => unknown;

/** How build errors name a not-found handler: `not-found /v1/*`. */
const NOT_FOUND = 'not-found';

/**
 * Fastify passes a not-found handler's `config` to its context (its types
 * leave it out), but runs no `onRoute` hook for it. `setNotFoundHandler` is
 * wrapped on the context where pathgate is registered, which every context
 * inside it inherits: a handler that declares paths is handed to `guard`
 * as a route (`not-found <prefix>/*`), then set with what `guard` made of
 * its hooks and handler. One set before the plugin is left to the app-wide
 * hooks (see `routesMayEscape`).
 */
export function guardNotFoundHandlers(
  fastify: FastifyInstance,
  guard: (route: RouteOptions, context: FastifyInstance) => void,
): void {
  const set = fastify.setNotFoundHandler as SetNotFoundHandler;
  const guarded: SetNotFoundHandler = function pathgateSetNotFoundHandler(options, handler) {
    const declared = (options as Partial<RouteOptions> | null | undefined)?.config?.pathgate;
    if (declared === undefined) return set.call(this, options, handler);
    const url = `${this.prefix}/*`;
    // Options alone (or a null handler) set Fastify's own handler, which
    // pathgate cannot wrap: refused, not unchecked; so is any non-function.
    if (typeof handler !== 'function') {
      throw new TypeError(
        `pathgate: route ${NOT_FOUND} ${url}: config.pathgate needs the handler it guards; pass the handler, or leave config.pathgate out`,
      );
    }
    const route = { ...(options as object), method: NOT_FOUND, url, handler } as RouteOptions;
    guard(route, this);
    // Fastify reads the options it knows (hooks, config) and leaves the rest.
    return set.call(this, route, route.handler);
  };
  fastify.setNotFoundHandler = guarded as FastifyInstance['setNotFoundHandler'];
}
