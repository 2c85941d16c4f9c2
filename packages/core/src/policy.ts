import {
  type CanonicalizeOptions,
  type CanonicalRoot,
  canonicalizeRoot,
  rootFailure,
} from './canonicalize.js';
import { fencedResolver } from './fenced-resolve.js';
import { inheritedOption, readOwn } from './own-key.js';
import { PrefixRules } from './prefix-rules.js';
import { type CompiledRule, compileRule } from './rule.js';
import { RuleIndex } from './rule-index.js';

export interface PermissionPolicyOptions {
  /** The sandbox root, an absolute path; literal text (`[`, `*` are ordinary). Default `'/'`. */
  root?: string | undefined;
  /** The allowlist: `fs` rules `[r:|rw:]<glob>`. `fs: []` denies everything. Required. */
  permissions: { fs: readonly string[] };
  /** Let wildcards match dotfiles. Default `false`. */
  dot?: boolean | undefined;
  /** Resolver for canonical paths (and the root), e.g. `resolveSymlinks`. Default: none. */
  resolve?: CanonicalizeOptions['resolve'];
}

/** What `checkFs` reads: prepared once, never per check. */
export interface CompiledPolicy {
  readonly root: CanonicalRoot;
  readonly resolve: CanonicalizeOptions['resolve'];
  /** What the route guard resolves a client's value with (fenced-resolve.ts). */
  readonly fencedResolve: CanonicalizeOptions['resolve'];
  readonly index: RuleIndex;
  /** The text-only check, when every rule has a shape it decides and nothing is resolved. */
  readonly prefixRules: PrefixRules | undefined;
}

/** Not exported from the package: how `checkFs` reaches a policy's compiled form. */
export const kCompiled: unique symbol = Symbol('pathgate.compiledPolicy');

const KNOWN = new Set(['root', 'permissions', 'dot', 'resolve']);

/** How the policy's option errors begin; an adapter restates them as its own options. */
export const POLICY_ERROR_PREFIX = 'PermissionPolicy: ';

function fail(message: string): never {
  throw new TypeError(`${POLICY_ERROR_PREFIX}${message}`);
}

/** An option as an own key; one a prototype of the caller's supplies is an error (`inheritedOption`). */
function readOption(source: object, key: string, name = key): unknown {
  if (inheritedOption(source, key)) {
    fail(`${name} is inherited from a prototype: give it as an own property`);
  }
  return readOwn(source, key);
}

function readRules(options: object): readonly unknown[] {
  const permissions = readOption(options, 'permissions');
  if (typeof permissions !== 'object' || permissions === null) {
    fail('permissions must be an object with an fs array');
  }
  for (const key of Object.keys(permissions)) {
    // Only fs is checked: a `net` or `env` list quietly ignored would read as enforced.
    if (key !== 'fs' && readOwn(permissions, key) !== undefined)
      fail(`unknown permission "permissions.${key}": only permissions.fs is checked`);
  }
  const fs = readOption(permissions, 'fs', 'permissions.fs');
  if (!Array.isArray(fs)) fail('permissions.fs must be an array of rule strings');
  // Array.from reads a hole as undefined, so it is named as a rule that is not a string.
  return Array.from(fs as unknown[]);
}

function readRoot(options: object, resolve: CompiledPolicy['resolve']): CanonicalRoot {
  const root = readOption(options, 'root');
  const text = root === undefined ? '/' : root;
  if (typeof text !== 'string')
    fail(`root must be a string, got ${text === null ? 'null' : typeof text}`);
  const result = canonicalizeRoot(text, resolve);
  if (!result.ok) fail(rootFailure(result.reason));
  return result.value;
}

function readOptions(options: unknown): {
  compiled: CompiledPolicy;
  rules: readonly string[];
  dot: boolean;
} {
  if (typeof options !== 'object' || options === null) fail('options must be an object');
  for (const key of Object.keys(options)) {
    // A key holding undefined counts as absent (DESIGN.md), known or not.
    if (!KNOWN.has(key) && readOwn(options, key) !== undefined) fail(`unknown option "${key}"`);
  }
  const dotOption = readOption(options, 'dot');
  if (dotOption !== undefined && typeof dotOption !== 'boolean') fail('dot must be a boolean');
  const dot = dotOption === true;
  const resolve = readOption(options, 'resolve');
  if (resolve !== undefined && typeof resolve !== 'function') fail('resolve must be a function');
  const typedResolve = resolve as CompiledPolicy['resolve'];
  const root = readRoot(options, typedResolve);
  const texts = readRules(options);
  const rules: CompiledRule[] = texts.map((t, i) => compileRule(t, i, root.segments, dot));
  const index = new RuleIndex(rules, root.segments);
  // A resolver may move any path: only the general matcher checks what it answers.
  const prefixRules = typedResolve ? undefined : PrefixRules.of(rules, root);
  return {
    compiled: {
      root,
      resolve: typedResolve,
      fencedResolve: fencedResolver(typedResolve, root),
      index,
      prefixRules,
    },
    rules: rules.map((r) => r.text),
    dot,
  };
}

/**
 * Why `value` is not a policy this copy can use. A `PermissionPolicy` of
 * another copy of this package (the ES module build beside the CommonJS
 * one, or a second version) holds its compiled rules under that copy's own
 * key: it is refused, with a message that says how to load one copy.
 */
export function notAPolicy(value: unknown): string {
  const proto = typeof value === 'object' && value !== null ? Object.getPrototypeOf(value) : null;
  return proto?.constructor?.name === 'PermissionPolicy'
    ? 'policy was built by another copy of @pathgate/core (its ES module and CommonJS builds are two copies): load @pathgate/core and the pathgate adapters the same way, all by import or all by require'
    : 'policy must be a PermissionPolicy';
}

/**
 * A compiled allowlist: the root is canonicalized and every rule parsed and
 * indexed once, here; bad configuration is a TypeError naming the option or
 * the rule. Immutable: build a new policy to change it.
 */
export class PermissionPolicy {
  /** The canonical (and, with `resolve`, resolved) sandbox root. */
  readonly root: string;
  /** The rules as given. */
  readonly rules: readonly string[];
  readonly dot: boolean;
  /** @internal */
  readonly [kCompiled]: CompiledPolicy;

  constructor(options: PermissionPolicyOptions) {
    const { compiled, rules, dot } = readOptions(options);
    this[kCompiled] = compiled;
    this.root = compiled.root.path;
    this.rules = Object.freeze([...rules]);
    this.dot = dot;
    Object.freeze(this);
  }
}
