import {
  compileRouteGuard,
  type PermissionPolicy,
  type RouteGuard,
  type RouteGuardOptions,
} from '@pathgate/core';
import type { FastifyRequest, RouteOptions } from 'fastify';

/** `POST /move`, `GET,HEAD /files/*`: how build errors name a route. */
export function routeLabel(method: unknown, url: unknown): string {
  return `${Array.isArray(method) ? method.join(',') : String(method)} ${String(url)}`;
}

/**
 * Each route's compiled guard, keyed by its declaration (the `config.pathgate`
 * object): Fastify copies a route's `config` but not the values in it, so the
 * `onRoute` hook and the request see the same object. Read once: changing a
 * declaration after its route was compiled has no effect.
 */
export class RouteGuards {
  private readonly compiled = new WeakMap<object, RouteGuard | Error>();

  constructor(private readonly policy: PermissionPolicy) {}

  /** `onRoute`: compile now, so a bad declaration stops startup with a TypeError naming the route. */
  compileRoute(route: RouteOptions): void {
    const declaration = route.config?.pathgate;
    if (declaration === undefined) return;
    const guard = this.compile(declaration, routeLabel(route.method, route.url));
    if (guard instanceof Error) throw guard;
  }

  /**
   * The request's route guard, or undefined for a route without a declaration.
   * A route the `onRoute` hook never saw (declared before the plugin was
   * registered) is compiled here, once; a bad declaration throws its TypeError.
   */
  forRequest(request: FastifyRequest): RouteGuard | undefined {
    const { config, method, url } = request.routeOptions;
    const declaration = config?.pathgate;
    if (declaration === undefined) return undefined;
    const guard =
      this.compiled.get(declaration) ?? this.compile(declaration, routeLabel(method, url));
    if (guard instanceof Error) throw guard;
    return guard;
  }

  private compile(declaration: RouteGuardOptions, label: string): RouteGuard | Error {
    let guard: RouteGuard | Error;
    try {
      guard = compileRouteGuard(this.policy, declaration, label);
    } catch (error) {
      guard = error as Error;
    }
    // A declaration that is not an object cannot be a key; it fails again each time.
    if (typeof declaration === 'object' && declaration !== null) {
      this.compiled.set(declaration, guard);
    }
    return guard;
  }
}
