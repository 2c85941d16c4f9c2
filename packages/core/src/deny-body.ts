import { SAND_PERM_CODES } from './errors.js';
import type { GuardDenyReason, PathDenial } from './route-guard.js';

/**
 * The JSON both adapters send with a 403: Fastify's error shape plus the
 * reason. It names the spec that denied (`body.from`), never the value, the
 * canonical path or the root.
 */
export interface DenyBody {
  statusCode: 403;
  code: typeof SAND_PERM_CODES.DENIED;
  error: 'Forbidden';
  message: string;
  reason: GuardDenyReason;
}

export function denyBody(denial: PathDenial): DenyBody {
  return {
    statusCode: 403,
    code: SAND_PERM_CODES.DENIED,
    error: 'Forbidden',
    message: `${denial.label}: path denied (${denial.reason})`,
    reason: denial.reason,
  };
}

/**
 * The 403 body an `onDeny` hook chose: the object it returned, or undefined
 * for the default body. A promise is no body: an async hook settles after
 * the reply is decided. Its rejection goes to `onRejected`, so a failing
 * async hook cannot crash the process with an unhandled rejection.
 */
export function hookBody(
  returned: unknown,
  onRejected: (error: unknown) => void,
): object | undefined {
  if (typeof returned !== 'object' || returned === null) return undefined;
  const { then } = returned as { then?: unknown };
  if (typeof then !== 'function') return returned;
  (then as PromiseLike<unknown>['then']).call(returned, undefined, onRejected);
  return undefined;
}
