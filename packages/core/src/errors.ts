import type { DenyReason } from './check-fs.js';

/** Stable error codes; the README's `SandboxPermissionError` section names the same. */
export const SAND_PERM_CODES = Object.freeze({
  /** A path was denied by the policy; `context.reason` says why. */
  DENIED: 'PATHGATE_DENIED',
} as const);

export type SandPermCode = (typeof SAND_PERM_CODES)[keyof typeof SAND_PERM_CODES];

/**
 * The error for hosts that prefer to throw on a deny. Its message names the
 * reason only: never the path or the root, so it is safe to show a client.
 */
export class SandboxPermissionError extends Error {
  readonly code: SandPermCode;
  readonly context: { readonly capability: 'fs'; readonly reason: DenyReason };

  constructor(reason: DenyReason, code: SandPermCode = SAND_PERM_CODES.DENIED) {
    super(`path denied: ${reason}`);
    this.name = 'SandboxPermissionError';
    this.code = code;
    this.context = Object.freeze({ capability: 'fs' as const, reason });
  }
}
