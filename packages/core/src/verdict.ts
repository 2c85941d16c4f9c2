import type { CheckResult } from './check-fs.js';

/**
 * A decision once the candidate rules were tried, in their order: allow by
 * the first that grants the mode, else `mode-not-permitted` by the first that
 * matched, else `path-not-in-allowlist`. Both matchers end here, so their
 * results have one shape.
 */
export function verdict(
  path: string,
  granted: string | undefined,
  matched: string | undefined,
): CheckResult {
  if (granted !== undefined) return { outcome: 'allow', path, rule: granted };
  if (matched !== undefined)
    return { outcome: 'deny', reason: 'mode-not-permitted', path, rule: matched };
  return { outcome: 'deny', reason: 'path-not-in-allowlist', path };
}
