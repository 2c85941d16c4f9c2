import createError, { type FastifyErrorConstructor } from '@fastify/error';
import { denyBody, type GuardDenyReason, type PathDenial, SAND_PERM_CODES } from '@pathgate/core';

type DeniedFields = { code: typeof SAND_PERM_CODES.DENIED; statusCode: 403 };

/** A thrown deny: the error plus why (`reason`) and which spec said so (`label`). */
export type PathgateDenied = InstanceType<FastifyErrorConstructor<DeniedFields, [string]>> & {
  readonly reason: GuardDenyReason;
  readonly label: string;
};

/**
 * A path was denied: 403, code `PATHGATE_DENIED`. Thrown out of a multipart
 * iteration (`request.file()`, `files()`, `parts()`, `saveRequestFiles()`,
 * `attachFieldsToBody`), so a custom error handler sees `statusCode`, `code`
 * and `reason`. Its message names the spec and the reason, never a path.
 * Typed by the named `FastifyErrorConstructor` (a default-import namespace
 * is lost to CommonJS and bundler consumers), and `instanceof` narrows to
 * `PathgateDenied`: every instance pathgate throws (`deniedError`) has
 * `reason` and `label`.
 */
export const PathgateDeniedError = createError(
  SAND_PERM_CODES.DENIED,
  '%s',
  403,
) as FastifyErrorConstructor<DeniedFields, [string]> & { readonly prototype: PathgateDenied };

/**
 * 500, code `PATHGATE_ROUTE_CONFIG`: a route declared before the plugin was
 * registered (so not compiled at startup) has an invalid declaration. The
 * request fails closed; the details go to the server log, not to the client.
 */
export const PathgateRouteConfigError: FastifyErrorConstructor<{
  code: 'PATHGATE_ROUTE_CONFIG';
  statusCode: 500;
}> = createError(
  'PATHGATE_ROUTE_CONFIG',
  'pathgate: this route has an invalid path declaration (see the server log)',
  500,
);

export function deniedError(denial: PathDenial): PathgateDenied {
  const error = new PathgateDeniedError(denyBody(denial).message);
  return Object.assign(error, { reason: denial.reason, label: denial.label });
}
