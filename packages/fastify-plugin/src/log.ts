import type { FastifyRequest } from 'fastify';

/**
 * Writes a line to the request's logger, the app's own with a custom
 * `loggerInstance`: a throw there must not turn a deny into a 500, a
 * report-only request into a failed one, nor, inside an async `onDeny`'s
 * rejection handler, into an unhandled rejection that ends the process.
 * It goes to stderr instead.
 */
export function log(
  request: FastifyRequest,
  level: 'info' | 'warn' | 'error',
  fields: object,
  message: string,
): void {
  try {
    request.log[level](fields, message);
  } catch (error) {
    console.error('pathgate: the logger failed', error);
  }
}
