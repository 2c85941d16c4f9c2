import { pathgate } from './plugin.js';

export type {
  CheckedFile,
  GuardDenyReason,
  PathDenial,
  PathgateInfo,
  PathSpec,
  RouteGuardOptions,
} from '@pathgate/core';
export type { PathgateRouteConfig } from './augment.js';
export type { PathgateDenied } from './errors.js';
export {
  PathgateAnsweredError,
  PathgateDeniedError,
  PathgateFieldTooLongError,
  PathgateRouteConfigError,
} from './errors.js';
export type {
  DenyHandler,
  PathgateOptions,
  PathgatePolicyOptions,
  PathgateRuleOptions,
} from './options.js';
export { pathgate };
export default pathgate;
