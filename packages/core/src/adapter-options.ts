import { DEFAULT_LINGER_BYTES, DEFAULT_LINGER_MS } from './linger.js';
import { inheritedOption, readOwn } from './own-key.js';
import {
  notAPolicy,
  PermissionPolicy,
  type PermissionPolicyOptions,
  POLICY_ERROR_PREFIX,
} from './policy.js';

/**
 * The options both adapters take besides the policy: deny handling and the
 * lingering close. `Handler` is the adapter's own `onDeny` signature.
 */
interface SharedOptions<Handler> {
  /** Called on every deny: log, add headers, or return the 403 body. Default: none. */
  onDeny?: Handler | undefined;
  /** Log what would be denied and let the request through. Default `false`. */
  reportOnly?: boolean | undefined;
  /** After a 403 that refuses a body mid-upload: longest time to read and drop the rest, in ms. Default 2000. */
  lingerMs?: number | undefined;
  /** After such a 403: most bytes to read and drop before closing. Default 64 MiB. */
  lingerBytes?: number | undefined;
}

/** A ready policy, shared with other code: its parts cannot be given too (`undefined` counts as absent). */
export interface AdapterPolicyOptions<Handler> extends SharedOptions<Handler> {
  /** The compiled policy: its root, rules, `dot` and `resolve` are its own. */
  policy: PermissionPolicy;
  root?: undefined;
  fs?: undefined;
  dot?: undefined;
  resolve?: undefined;
}

/** The policy's parts: the adapter builds the `PermissionPolicy`. */
export interface AdapterRuleOptions<Handler> extends SharedOptions<Handler> {
  policy?: undefined;
  /** The sandbox root, an absolute path. Default `'/'`. */
  root?: string | undefined;
  /** The allowlist: `[r:|rw:]<glob>` rules; `[]` denies everything. Required. */
  fs: readonly string[];
  /** Let wildcards match dotfiles. Default `false`. */
  dot?: boolean | undefined;
  /** Resolver for canonical paths, e.g. `resolveSymlinks`. Default: none. */
  resolve?: PermissionPolicyOptions['resolve'];
}

/**
 * The options both adapters take, validated once here so they cannot drift
 * apart: a ready policy or its parts, never both, with the shared ones.
 */
export type AdapterOptions<Handler> = AdapterPolicyOptions<Handler> | AdapterRuleOptions<Handler>;

/** The validated shared options. */
export interface AdapterSettings<Handler> {
  readonly policy: PermissionPolicy;
  readonly onDeny: Handler | undefined;
  readonly reportOnly: boolean;
  readonly linger: { readonly lingerMs: number; readonly lingerBytes: number };
}

/** Reads one of the adapter's own options (an own key; `undefined` is absent, `null` an error). */
export type OptionReader = (key: string) => unknown;

const SHARED = ['policy', 'root', 'fs', 'dot', 'resolve', 'onDeny', 'reportOnly'] as const;
const LINGER = ['lingerMs', 'lingerBytes'] as const;
const POLICY_PARTS = ['root', 'fs', 'dot', 'resolve'] as const;

/** The options every adapter takes for all its routes, never per route. */
export const ADAPTER_OPTIONS: ReadonlySet<string> = new Set([...SHARED, ...LINGER]);

/** The adapters' build-time TypeError: `pathgate: option fs must be …`. */
export function optionError(message: string): never {
  throw new TypeError(`pathgate: ${message}`);
}

function readerOf(options: object): OptionReader {
  return (key) => {
    if (inheritedOption(options, key)) {
      optionError(`option ${key} is inherited from a prototype: give it as an own property`);
    }
    const value = readOwn(options, key);
    if (value === null) optionError(`option ${key} must not be null`);
    return value;
  };
}

function readPolicy(read: OptionReader): PermissionPolicy {
  const policy = read('policy');
  const given = POLICY_PARTS.filter((key) => read(key) !== undefined);
  if (policy !== undefined) {
    if (!(policy instanceof PermissionPolicy)) optionError(`option ${notAPolicy(policy)}`);
    if (given.length > 0) optionError(`option ${given[0]} cannot be combined with policy`);
    return policy;
  }
  const fs = read('fs');
  if (!Array.isArray(fs))
    optionError('option fs must be an array of rule strings (or give policy)');
  try {
    return new PermissionPolicy({
      root: read('root') as string | undefined,
      permissions: { fs },
      dot: read('dot') as boolean | undefined,
      resolve: read('resolve') as PermissionPolicyOptions['resolve'],
    });
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    // The policy names root, dot and resolve as these options do; a rule error names the rule.
    const { message } = error;
    optionError(
      message.startsWith(POLICY_ERROR_PREFIX)
        ? `option ${message.slice(POLICY_ERROR_PREFIX.length)}`
        : message,
    );
  }
}

function readCount(read: OptionReader, key: string, fallback: number): number {
  const value = read(key);
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    optionError(`option ${key} must be a non-negative integer`);
  }
  return value;
}

/** A function option, or undefined when absent. */
export function readFunction<T>(read: OptionReader, key: string): T | undefined {
  const value = read(key);
  if (value !== undefined && typeof value !== 'function')
    optionError(`option ${key} must be a function`);
  return value as T | undefined;
}

function readReportOnly(read: OptionReader): boolean {
  const value = read('reportOnly');
  if (value !== undefined && typeof value !== 'boolean') {
    optionError('option reportOnly must be a boolean');
  }
  return value === true;
}

/**
 * Validates an adapter's options once, at build time: the shared ones here,
 * while `ownKeys` names the adapter's own, which it reads with the returned
 * reader. An unknown key is an error, never ignored.
 */
export function readAdapterOptions<Handler>(
  options: unknown,
  ownKeys: readonly string[],
): { settings: AdapterSettings<Handler>; read: OptionReader } {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    optionError('options must be an object');
  }
  const known = new Set<string>([...ADAPTER_OPTIONS, ...ownKeys]);
  const read = readerOf(options);
  // A key holding undefined counts as absent, known or not (as in PermissionPolicy).
  for (const key of Object.keys(options))
    if (!known.has(key) && read(key) !== undefined) optionError(`unknown option "${key}"`);
  const settings = Object.freeze({
    policy: readPolicy(read),
    onDeny: readFunction<Handler>(read, 'onDeny'),
    reportOnly: readReportOnly(read),
    linger: Object.freeze({
      lingerMs: readCount(read, 'lingerMs', DEFAULT_LINGER_MS),
      lingerBytes: readCount(read, 'lingerBytes', DEFAULT_LINGER_BYTES),
    }),
  });
  return { settings, read };
}
