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
