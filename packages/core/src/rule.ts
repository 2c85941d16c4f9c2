import { type CompiledGlob, compileGlob } from './glob-compile.js';
import { GlobSyntaxError } from './glob-parse.js';
import { toNfc } from './nfc.js';

/** A rule of `permissions.fs`, compiled: `[r:|rw:]<glob>` → mode, literal roots, matchers. */
export interface CompiledRule {
  /** The rule as written, for explanations. */
  readonly text: string;
  readonly write: boolean;
  /** One per brace alternative. */
  readonly globs: readonly CompiledGlob[];
}

const PREFIX = /^([A-Za-z]+):/;

/**
 * The order of rules that share a literal root: by their text (code units),
 * so which rule explains a decision never depends on the order of `fs`. Both
 * matchers (rule-index.ts, prefix-rules.ts) must try rules in this order.
 */
export function byRuleText(a: { readonly text: string }, b: { readonly text: string }): number {
  return a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
}

/** Splits the mode prefix: letters before the first `:` are a prefix and must be `r` or `rw`. */
function splitPrefix(rule: string): { write: boolean; glob: string } {
  const match = PREFIX.exec(rule);
  if (!match) return { write: false, glob: rule };
  const prefix = match[1] as string;
  if (prefix !== 'r' && prefix !== 'rw') {
    throw new GlobSyntaxError(`unknown prefix "${prefix}" (use "r:" or "rw:")`);
  }
  return { write: prefix === 'rw', glob: rule.slice(match[0].length) };
}

/** The text checks that come before parsing; returns the NFC glob. */
function checkGlobText(glob: string): string {
  if (glob === '') throw new GlobSyntaxError('empty glob');
  if (glob.includes('\0')) throw new GlobSyntaxError('NUL in glob');
  if (!glob.isWellFormed()) throw new GlobSyntaxError('lone surrogate in glob');
  if (glob.startsWith('!')) {
    throw new GlobSyntaxError('a leading "!" is not supported: the allowlist has no negation');
  }
  return toNfc(glob);
}

function isPrefixOf(root: readonly string[], segments: readonly string[]): boolean {
  return root.length <= segments.length && root.every((s, i) => segments[i] === s);
}

function compile(text: string, root: readonly string[], dot: boolean): CompiledRule {
  const { write, glob } = splitPrefix(text);
  const globs = compileGlob(checkGlobText(glob), root, dot);
  if (!globs.every((g) => isPrefixOf(root, g.literalRoot))) {
    throw new GlobSyntaxError('lies outside the root');
  }
  return { text, write, globs };
}

/**
 * Compiles rule `index` (0-based) of `permissions.fs`. Every problem is a
 * TypeError naming the rule: `rule 3 "wr:./x": unknown prefix "wr" …`
 * (rules are numbered from 1 in messages).
 */
export function compileRule(
  text: unknown,
  index: number,
  root: readonly string[],
  dot: boolean,
): CompiledRule {
  const name = `rule ${index + 1}`;
  if (typeof text !== 'string') {
    throw new TypeError(`${name}: must be a string, got ${typeof text}`);
  }
  try {
    return compile(text, root, dot);
  } catch (error) {
    if (!(error instanceof GlobSyntaxError)) throw error;
    throw new TypeError(`${name} ${JSON.stringify(text)}: ${error.message}`);
  }
}
