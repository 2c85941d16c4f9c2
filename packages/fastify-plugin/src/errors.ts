import createError, { type FastifyErrorConstructor } from '@fastify/error';
import { denyBody, type GuardDenyReason, type PathDenial, SAND_PERM_CODES } from '@pathgate/core';

type DeniedFields = { code: typeof SAND_PERM_CODES.DENIED; statusCode: 403 };

/** The @fastify/error base: code `PATHGATE_DENIED`, status 403, the message as given. */
const DeniedBase: FastifyErrorConstructor<DeniedFields, [string]> = createError(
  SAND_PERM_CODES.DENIED,
  '%s',
  403,
);

/**
 * A path was denied: 403, code `PATHGATE_DENIED`. Thrown out of a multipart
 * iteration (`request.file()`, `files()`, `parts()`, `saveRequestFiles()`,
 * `attachFieldsToBody`), so a custom error handler sees `statusCode`, `code`,
 * `reason` and `label`. Made from a denial, as the Express adapter's is, so
 * an app's own check (`checkFs`) can throw the same error; its message names
 * the spec and the reason, never a path. Typed by the named
 * `FastifyErrorConstructor` (a default-import namespace is lost to CommonJS
 * and bundler consumers).
 */
export class PathgateDeniedError extends DeniedBase {
  readonly reason: GuardDenyReason;
  /** The spec that denied: `body.from`, `params.*`, `file avatar`. */
  readonly label: string;

  constructor(denial: PathDenial) {
    super(denyBody(denial).message);
    this.reason = denial.reason;
    this.label = denial.label;
  }
}

/** A thrown deny: the error plus why (`reason`) and which spec said so (`label`). */
export type PathgateDenied = PathgateDeniedError;

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

/**
 * 413, code `PATHGATE_FIELD_TOO_LONG`: on a route with body specs, a
 * multipart field was longer than @fastify/multipart's `limits.fieldSize`.
 * busboy cut it and multipart only flags the part, so a body spec would check
 * (and the handler get) a value the client never sent. Thrown out of
 * `request.parts()` (which `attachFieldsToBody` reads through), as multer's
 * `LIMIT_FIELD_VALUE` is a 413 under the Express adapter. Names no field: the
 * name is the client's.
 */
export const PathgateFieldTooLongError: FastifyErrorConstructor<{
  code: 'PATHGATE_FIELD_TOO_LONG';
  statusCode: 413;
}> = createError(
  'PATHGATE_FIELD_TOO_LONG',
  'a multipart field is longer than limits.fieldSize: its value was cut',
  413,
);

/**
 * Code `PATHGATE_ANSWERED`: a multipart read (`request.file()`, `files()`,
 * `parts()`, `saveRequestFiles()`) started after the request was answered
 * while its body was still arriving. That answer ended the upload: the rest
 * of the body is dropped, so the read fails at once instead of waiting for
 * it. The reply is out: its 500 is for the log only.
 */
export const PathgateAnsweredError: FastifyErrorConstructor<{
  code: 'PATHGATE_ANSWERED';
  statusCode: 500;
}> = createError(
  'PATHGATE_ANSWERED',
  'pathgate: the reply was already sent while the upload was arriving; its body was dropped',
  500,
);
