import type {} from '@fastify/multipart';
import type { PathgateInfo, RouteGuardOptions } from '@pathgate/core';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * This route's paths: the mode they are used in, and where each comes
     * from. `undefined`, like an absent key, declares none.
     */
    pathgate?: RouteGuardOptions | undefined;
  }

  interface FastifyRequest {
    /**
     * The canonical paths pathgate checked, by source and selector, and the
     * allowed files; read-only. `null` on routes without a declaration, and
     * `undefined` where pathgate is not registered (an app or a sibling
     * context without it: importing this package types every request), so
     * a handler that relies on it fails closed if the guard did not run.
     */
    readonly pathgate: PathgateInfo | null | undefined;
  }
}

declare module '@fastify/multipart' {
  interface MultipartFile {
    /** Set by pathgate on an allowed file part: the canonical path to write it to (read-only). */
    readonly pathgatePath?: string;
  }
}

/** The per-route declaration, as written in `config.pathgate`. */
export type PathgateRouteConfig = RouteGuardOptions;
