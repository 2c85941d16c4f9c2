import type { GuardResult, PathgateInfo, RequestValues, RouteGuard } from '../src/index.js';

/** One request through a guard: its result, and the info record it filled. */
export const runGuard = (
  guard: RouteGuard,
  values: RequestValues,
): { result: GuardResult; info: PathgateInfo } => {
  const info = guard.newInfo();
  return { result: guard.checkRequest(values, info), info };
};
