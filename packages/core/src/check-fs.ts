import {
  type CanonicalizeFailure,
  canonicalizeBelow,
  canonicalizeText,
  readText,
} from './canonicalize.js';
import { type CompiledPolicy, kCompiled, notAPolicy, type PermissionPolicy } from './policy.js';
import { verdict } from './verdict.js';

export type FsAccessMode = 'read' | 'write';

export type DenyReason = 'path-not-in-allowlist' | 'mode-not-permitted' | CanonicalizeFailure;

/**
 * A decision. `outcome` and `reason` are the contract; `path` (the canonical
 * path, when there is one) and `rule` (the rule that decided) explain it for
 * logs. Never send `path` or `rule` to a client.
 */
export type CheckResult =
  | { outcome: 'allow'; path: string; rule: string }
  | { outcome: 'deny'; reason: DenyReason; path?: string; rule?: string };

/** A policy's compiled form; `who` names the caller in the TypeError for anything else. */
export function compiledOf(policy: PermissionPolicy, who: string): CompiledPolicy {
  const compiled = (policy as { [kCompiled]?: CompiledPolicy } | null)?.[kCompiled];
  if (!compiled) throw new TypeError(`${who}: ${notAPolicy(policy)}`);
  return compiled;
}

/**
 * Decides whether `path` may be used in `mode`: canonicalize against the
 * policy root, then allow when any matching rule grants the mode, otherwise
 * `mode-not-permitted` when some rule matched, otherwise
 * `path-not-in-allowlist`. Synchronous, no I/O (unless `resolve` does).
 */
export function checkFs(policy: PermissionPolicy, path: unknown, mode: FsAccessMode): CheckResult {
  if (mode !== 'read' && mode !== 'write') {
    throw new TypeError(`checkFs: mode must be "read" or "write", got ${String(mode)}`);
  }
  return decide(compiledOf(policy, 'checkFs'), path, mode === 'write');
}

/**
 * `checkFs` on a policy compiled and a mode validated beforehand: what a
 * route guard calls for every value, without looking either up again. With
 * `fenced` (a client's value), a resolver is not asked about a value
 * lexically outside the root (`canonicalizeBelow`): it is denied as it is;
 * `resolveSymlinks` is bounded to the root (fenced-resolve.ts).
 */
export function decide(
  compiled: CompiledPolicy,
  path: unknown,
  write: boolean,
  fenced = false,
): CheckResult {
  // A plain value passes steps 1–4 as it is: the prefix check reads it first.
  const plain = typeof path === 'string' ? compiled.prefixRules?.decide(path, write) : undefined;
  if (plain !== undefined) return plain;
  const text = readText(path);
  if (typeof text !== 'string') return { outcome: 'deny', reason: text.reason };
  return decideText(compiled, text, write, fenced);
}

/** The general matcher, for a checked text: canonical segments, then the rule index's candidates. */
export function decideText(
  compiled: CompiledPolicy,
  text: string,
  write: boolean,
  fenced = false,
): CheckResult {
  const canonical = fenced
    ? canonicalizeBelow(text, compiled.root, compiled.fencedResolve)
    : canonicalizeText(text, compiled.root, compiled.resolve);
  if (!canonical.ok) return { outcome: 'deny', reason: canonical.reason };
  const { segments, path: canonicalPath } = canonical.value;
  let matched: string | undefined;
  for (const entries of compiled.index.candidates(segments)) {
    for (const { rule, glob } of entries) {
      if (!glob.match(segments)) continue;
      if (!write || rule.write) return verdict(canonicalPath, rule.text, undefined);
      matched ??= rule.text;
    }
  }
  return verdict(canonicalPath, undefined, matched);
}
