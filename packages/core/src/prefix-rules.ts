import type { CanonicalPath } from './canonicalize.js';
import type { CheckResult } from './check-fs.js';
import type { GlobShape } from './glob-compile.js';
import { byRuleText, type CompiledRule } from './rule.js';
import { verdict } from './verdict.js';

/** One brace alternative of a rule, as a prefix of plain text relative to the policy root. */
interface PrefixRule {
  /** The literal root below the policy root, segments joined by `/`; `''` for the root itself. */
  readonly prefix: string;
  readonly shape: GlobShape;
  readonly write: boolean;
  readonly text: string;
}

/** Whether `rule` matches plain `text`, whose part below the policy root starts at `start`. */
function matches(rule: PrefixRule, text: string, start: number): boolean {
  const { prefix, shape } = rule;
  let below = start;
  if (prefix !== '') {
    if (!text.startsWith(prefix, start)) return false;
    const end = start + prefix.length;
    if (end === text.length) return shape !== 'star';
    if (text.charCodeAt(end) !== 47) return false;
    below = end + 1;
  }
  if (shape === 'globstar') return true;
  // What is left is non-empty: `exact` names the rule's root alone, `star` one name below it.
  return shape === 'star' && text.indexOf('/', below) === -1;
}

/**
 * The check of the commonest policies, on the text itself. When every rule
 * is a directory with everything below it (`./public/**`), a directory's
 * entries (`./uploads/*`) or one literal path, and a value is plain (below
 * the root, relative or absolute, no empty, `.`, `..` or dot-led segment),
 * the value is its own canonical path and a rule matches exactly when its
 * literal root is a prefix of the text ending at a `/`. Deciding there, with
 * no split into segments and no walk of the rule index, touches a few
 * objects per check, which is what a check costs in a loaded server. The
 * answer, rule included, is the general matcher's (prefix-rules.test.ts
 * compares the two on random policies and paths); other values go to it.
 */
export class PrefixRules {
  /** Deepest literal root first, then rule text: the rule index's candidate order. */
  private readonly rules: readonly PrefixRule[];
  /** The policy root's canonical path with a `/` after it (`/` for the root of everything). */
  private readonly rootSlash: string;

  private constructor(rules: PrefixRule[], root: string) {
    this.rules = rules;
    this.rootSlash = root === '/' ? root : `${root}/`;
  }

  /** The prefix form of a policy's rules, or undefined when some rule has another shape. */
  static of(rules: readonly CompiledRule[], root: CanonicalPath): PrefixRules | undefined {
    const list: (PrefixRule & { depth: number })[] = [];
    for (const rule of rules) {
      for (const { literalRoot, shape } of rule.globs) {
        if (shape === undefined) return undefined;
        const prefix = literalRoot.slice(root.segments.length).join('/');
        list.push({ prefix, shape, write: rule.write, text: rule.text, depth: literalRoot.length });
      }
    }
    list.sort((a, b) => b.depth - a.depth || byRuleText(a, b));
    return new PrefixRules(
      list.map(({ prefix, shape, write, text }) => ({ prefix, shape, write, text })),
      root.path,
    );
  }

  /** Where plain `text` goes below the root; -1 when it is not plain. */
  private plainStart(text: string): number {
    const start = text.charCodeAt(0) === 47 ? this.rootSlash.length : 0;
    if (start > 0 && !text.startsWith(this.rootSlash)) return -1;
    const first = text.charCodeAt(start);
    // Not empty below the root, no leading `.` or `/`, no `//`, `/.` or trailing `/`.
    if (Number.isNaN(first) || first === 46 || first === 47) return -1;
    if (text.indexOf('/.', start) !== -1 || text.indexOf('//', start) !== -1) return -1;
    return text.charCodeAt(text.length - 1) === 47 ? -1 : start;
  }

  /** `checkFs` on a checked text (steps 1–4 passed), or undefined when it is not plain. */
  decide(text: string, write: boolean): CheckResult | undefined {
    const start = this.plainStart(text);
    if (start === -1) return undefined;
    let matched: string | undefined;
    for (const rule of this.rules) {
      if (!matches(rule, text, start)) continue;
      if (!write || rule.write) return verdict(this.pathOf(text, start), rule.text, undefined);
      matched ??= rule.text;
    }
    return verdict(this.pathOf(text, start), undefined, matched);
  }

  private pathOf(text: string, start: number): string {
    return start === 0 ? `${this.rootSlash}${text}` : text;
  }
}
