export type {
  CanonicalizeFailure,
  CanonicalizeOptions,
  CanonicalizeResult,
} from './canonicalize.js';
export { canonicalize } from './canonicalize.js';
export type { CheckResult, DenyReason, FsAccessMode } from './check-fs.js';
export { checkFs } from './check-fs.js';
export type { SandPermCode } from './errors.js';
export { SAND_PERM_CODES, SandboxPermissionError } from './errors.js';
export type { PermissionPolicyOptions } from './policy.js';
export { PermissionPolicy } from './policy.js';
export { escapes, inside, isInside } from './predicates.js';
export { resolveSymlinks } from './realpath.js';
export type { Selector } from './selector.js';
