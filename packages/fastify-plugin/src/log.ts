import { callCatching, loggedPath, type PathDenial } from '@pathgate/core';
import type { FastifyRequest } from 'fastify';

const loggerFailed = (error: unknown) => console.error('pathgate: the logger failed', error);

/**
 * Writes a line to the request's logger, the app's own with a custom
 * `loggerInstance`: a throw there must not turn a deny into a 500, a
 * report-only request into a failed one, nor, inside an async `onDeny`'s
 * rejection handler, into an unhandled rejection that ends the process;
 * nor may an async logger's rejection (its methods' type, returning `void`,
 * takes an async function), which would end it too. Either goes to stderr.
 */
export function log(
  request: FastifyRequest,
  level: 'info' | 'warn' | 'error',
  fields: object,
  message: string,
): void {
  callCatching(() => request.log[level](fields, message), loggerFailed);
}

/** A deny's line: the canonical path is for operators, never for the client. */
export function logDenial(
  request: FastifyRequest,
  level: 'info' | 'warn',
  denial: PathDenial,
  message: string,
): void {
  const route = `${request.method} ${request.routeOptions.url}`;
  const { label, reason } = denial;
  const path = denial.result?.path;
  const fields = { route, label, reason, path: path === undefined ? path : loggedPath(path) };
  log(request, level, { pathgate: fields }, message);
}
