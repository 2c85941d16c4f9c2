export type {
  AdapterOptions,
  AdapterPolicyOptions,
  AdapterRuleOptions,
  AdapterSettings,
  OptionReader,
} from './adapter-options.js';
export { optionError, readAdapterOptions, readFunction } from './adapter-options.js';
export { callCatching } from './call-catching.js';
export type {
  CanonicalizeFailure,
  CanonicalizeOptions,
  CanonicalizeResult,
} from './canonicalize.js';
export { canonicalize } from './canonicalize.js';
export type { CheckResult, DenyReason, FsAccessMode } from './check-fs.js';
export { checkFs } from './check-fs.js';
export type { DenyBody } from './deny-body.js';
export { callWatching, denyBody, hookBody } from './deny-body.js';
export type { SandPermCode } from './errors.js';
export { SAND_PERM_CODES, SandboxPermissionError } from './errors.js';
export { loggedPath } from './log-path.js';
export { readOwn, setOwn } from './own-key.js';
export type { PermissionPolicyOptions } from './policy.js';
export { PermissionPolicy } from './policy.js';
export { escapes, inside, isInside } from './predicates.js';
export { resolveSymlinks } from './realpath.js';
export { recordView, UNREADABLE_PART } from './record-view.js';
// The adapters' shared request guard: one decision for Fastify and Express.
export type {
  CheckedFile,
  CheckedPaths,
  FileResult,
  GuardDenyReason,
  GuardResult,
  GuardSettings,
  PathDenial,
  PathgateInfo,
  RecordingInfo,
  RequestValues,
} from './route-guard.js';
export { compileRouteGuard, RouteGuard, UNEXPECTED_FILE } from './route-guard.js';
export type { PathSource, PathSpec, RouteGuardOptions } from './route-spec.js';
export { requiredParams } from './route-spec.js';
export type { Selector } from './selector.js';
