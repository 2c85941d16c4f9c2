import {
  compileRouteGuard,
  type PermissionPolicy,
  type RouteGuard,
  type RouteGuardOptions,
  requiredParams,
} from '@pathgate/core';
import type { FastifyRequest, RouteOptions } from 'fastify';

/** `POST /move`, `GET,HEAD /files/*`: how build errors name a route. */
function routeLabel(method: unknown, url: unknown): string {
  return `${Array.isArray(method) ? method.join(',') : String(method)} ${String(url)}`;
}

/**
 * Set in the `config` of a route the `onRoute` hook guarded (by its
 * route-level hooks or its guarded handler), when the app-wide hooks are
 * installed too: they leave such a route alone. Fastify copies a route's
 * `config` (own enumerable keys, symbols included) after the `onRoute`
 * hooks ran, so `request.routeOptions.config` carries it.
 */
const kRouteGuarded: unique symbol = Symbol('pathgate.routeGuarded');

type MarkedConfig = { [kRouteGuarded]?: true; pathgate?: RouteGuardOptions };

/**
 * The parameter names of a route URL, read as find-my-way reads them:
 * `:name`, `:name?` (last), `:from-:to`, `:file.:ext` and `*`; `::` is a
 * literal colon. A name ends only at `-`, `.` or `/`, so a colon inside it
 * is its own: `/mail/:user@:host` has one parameter, `user@:host`.
 * Undefined for a URL with a regex parameter, which this does not parse.
 */
function urlParams(url: string): ReadonlySet<string> | undefined {
  if (url.includes('(')) return undefined;
  const names = new Set<string>();
  const optionalLast = /\?(\/?)$/;
  for (const [token, name] of url.replace(optionalLast, '$1').matchAll(/::|:([^/.-]*)|\*/g)) {
    if (name !== undefined) names.add(name);
    else if (token === '*') names.add('*');
  }
  return names;
}

/**
 * A `params` spec must name a parameter of the route's URL: one that names
 * none (a typo, or Express's `path` for Fastify's `*`) would deny every
 * request with `missing-path`, which looks like an attack, not a mistake.
 */
function checkParamNames(route: RouteOptions, declaration: RouteGuardOptions): void {
  const names = urlParams(String(route.url));
  if (names === undefined) return;
  const unknown = requiredParams(declaration.paths).find((name) => !names.has(name));
  if (unknown === undefined) return;
  const has = names.size === 0 ? 'none' : [...names].join(', ');
  throw new TypeError(
    `pathgate: route ${routeLabel(route.method, route.url)}: params "${unknown}" is not a parameter of this route (its parameters: ${has})`,
  );
}

function isGetter(object: unknown, key: string): boolean {
  if (typeof object !== 'object' || object === null) return false;
  return Object.getOwnPropertyDescriptor(object, key)?.get !== undefined;
}

/**
 * Each route's compiled guard, keyed by its declaration (the `config.pathgate`
 * object): Fastify copies a route's `config` but not the values in it, so the
 * `onRoute` hook and the request see the same object. Read once: changing a
 * declaration after its route was compiled has no effect.
 */
export class RouteGuards {
  private readonly compiled = new WeakMap<object, RouteGuard | Error>();
  /** The configs of routes declared before the plugin whose URL has every param their specs name. */
  private readonly paramsFound = new WeakSet<object>();
  /** Each route the `onRoute` hook saw, with the declaration it had then; until `onReady`. */
  private seen: [RouteOptions, RouteGuardOptions | undefined][] = [];

  constructor(private readonly policy: PermissionPolicy) {}

  /**
   * `onRoute`: the route's guard, compiled now, so a bad declaration stops
   * startup with a TypeError naming the route; undefined without a declaration.
   */
  compileRoute(route: RouteOptions): RouteGuard | undefined {
    const declaration = route.config?.pathgate;
    this.seen.push([route, declaration]);
    if (declaration === undefined) return undefined;
    const guard = this.compile(declaration, () => routeLabel(route.method, route.url));
    if (guard instanceof Error) throw guard;
    checkParamNames(route, declaration);
    return guard;
  }

  /**
   * `onReady`: throws if an `onRoute` hook that ran after pathgate's (a
   * plugin registered later) set or replaced a route's `config.pathgate`.
   * Fastify builds the route from its options right after those hooks, so
   * the route would run unguarded, or guarded by the declaration it had
   * before: the app must not start.
   */
  assertDeclarationsKept(): void {
    const seen = this.seen;
    this.seen = [];
    const changed = seen.find(([route, declaration]) => route.config?.pathgate !== declaration);
    if (changed === undefined) return;
    const [route, declaration] = changed;
    const label = routeLabel(route.method, route.url);
    if (isGetter(route.config, 'pathgate'))
      throw new TypeError(
        `pathgate: route ${label}: config.pathgate is a getter that returned another declaration when read again; declare the object itself (Fastify reads a route's config more than once)`,
      );
    throw new TypeError(
      `pathgate: route ${label}: config.pathgate was ${declaration === undefined ? 'set' : 'replaced'} by an onRoute hook that runs after pathgate's, so the route would not be guarded as declared; add that hook before registering pathgate`,
    );
  }

  /** `onRoute`, with the app-wide hooks installed: they must skip this route. */
  static markGuarded(route: RouteOptions): void {
    const config = { ...route.config, [kRouteGuarded]: true };
    route.config = config as NonNullable<RouteOptions['config']>;
  }

  /**
   * The app-wide hooks: the guard of a route the `onRoute` hook never saw
   * (declared before the plugin was registered), compiled here, once; a bad
   * declaration throws its TypeError, as does a `params` spec that names no
   * parameter of the route's URL (a not-found handler's context has no URL).
   * Undefined for a route without a declaration, and for one the `onRoute`
   * hook guarded (`markGuarded`).
   */
  forRequest(request: FastifyRequest): RouteGuard | undefined {
    const { config, method, url } = request.routeOptions;
    const marked = config as MarkedConfig | undefined;
    const declaration = marked?.pathgate;
    if (declaration === undefined || marked?.[kRouteGuarded] === true) return undefined;
    const guard = this.compile(declaration, () => routeLabel(method, url));
    if (guard instanceof Error) throw guard;
    if (typeof url === 'string' && !this.paramsFound.has(config)) {
      checkParamNames({ method, url } as RouteOptions, declaration);
      this.paramsFound.add(config);
    }
    return guard;
  }

  /** The declaration's guard, compiled once; `label` names the route, only for a compile. */
  private compile(declaration: RouteGuardOptions, label: () => string): RouteGuard | Error {
    const known = typeof declaration === 'object' && declaration !== null;
    const cached = known ? this.compiled.get(declaration) : undefined;
    if (cached !== undefined) return cached;
    let guard: RouteGuard | Error;
    try {
      // `{ headers: 'host' }` checks what `request.host` reads: HTTP/2's `:authority` too.
      guard = compileRouteGuard(this.policy, declaration, label(), { authorityHost: true });
    } catch (error) {
      guard = error as Error;
    }
    // A declaration that is not an object cannot be a key; it fails again each time.
    if (known) this.compiled.set(declaration, guard);
    return guard;
  }
}
