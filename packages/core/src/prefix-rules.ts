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

/**
 * The most brace alternatives the text check takes. It tests them one by
 * one, so a miss costs one prefix test per alternative, where the rule
 * index walks the path's depth: at 64 a miss cost twice the index's walk,
 * at 10,000 a hundred times (28 µs a check). Policies past it go to the index.
 */
export const MAX_PREFIX_RULES = 16;

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
 * The check of the commonest policies, on the text itself. When the rules
 * are few (MAX_PREFIX_RULES) and each is a directory with everything below
 * it (`./public/**`), a directory's entries (`./uploads/*`) or one literal
 * path, and a value is plain (below the root, relative or absolute, ASCII
 * without NUL, no empty, `.`, `..` or dot-led segment), the value is its
 * own canonical path and a rule matches exactly when its literal root is a
 * prefix of the text ending at a `/`. Deciding there, with no split into
 * segments and no walk of the rule index, touches a few objects per check,
 * which is what a check costs in a loaded server. The answer, rule included, is the general matcher's
 * (prefix-rules.test.ts compares the two on random policies and paths);
 * other values go to it.
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

  /** The prefix form of a policy's rules, or undefined when some rule has another shape or they are many. */
  static of(rules: readonly CompiledRule[], root: CanonicalPath): PrefixRules | undefined {
    const list: (PrefixRule & { depth: number })[] = [];
    for (const rule of rules) {
      for (const { literalRoot, shape } of rule.globs) {
        if (shape === undefined || list.length === MAX_PREFIX_RULES) return undefined;
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

  /**
   * Where plain `text` goes below the root; -1 when it is not plain. One
   * pass over the characters, with no builtin calls: in a loaded server
   * each string search, regular expression or normalization runs cold.
   * Only ASCII without NUL is plain below the root: such text passes steps
   * 1–4 as it is, and every other value takes the general path, which
   * gives its reason or normalizes it.
   */
  private plainStart(text: string): number {
    const start = text.charCodeAt(0) === 47 ? this.rootSlash.length : 0;
    if (start > 0 && !text.startsWith(this.rootSlash)) return -1;
    // As if a `/` came before `start`: no segment may be empty or start with `.`.
    let previous = 47;
    for (let i = start; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code === 0 || code > 127) return -1;
      if (previous === 47 && (code === 46 || code === 47)) return -1;
      previous = code;
    }
    // Nothing below the root, or a trailing `/`.
    return previous === 47 ? -1 : start;
  }

  /** `checkFs` on a string value, or undefined when it is not plain. */
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
    return start === 0 ? this.rootSlash + text : text;
  }
}
