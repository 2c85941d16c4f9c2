import { type PathDenial, PermissionPolicy } from '@pathgate/core';
import { DEFAULT_LINGER_BYTES, DEFAULT_LINGER_MS } from '@pathgate/core/http';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Called on every deny. It may log, add headers (`reply.header()`), or
 * return an object to send as the 403 body instead of the default one (it
 * must not reveal paths either). In report-only mode it is called for what
 * would have been denied, and its return value is ignored.
 */
export type DenyHandler = (
  denial: PathDenial,
  request: FastifyRequest,
  reply: FastifyReply,
) => DenyHandlerResult;

// biome-ignore lint/suspicious/noConfusingVoidType: a handler that only logs returns nothing
type DenyHandlerResult = object | undefined | void;

interface CommonOptions {
  /** Hook for every deny: log, add headers, or return the 403 body. Default: none. */
  onDeny?: DenyHandler | undefined;
  /** Log what would be denied (`request.log.warn`) and let the request through. Default `false`. */
  reportOnly?: boolean | undefined;
  /** After a 403 that refuses an upload mid-body: longest time to read and drop the rest, in ms. Default 2000. */
  lingerMs?: number | undefined;
  /** After such a 403: most bytes to read and drop before closing. Default 64 MiB. */
  lingerBytes?: number | undefined;
}

/** A ready policy, shared with other code. */
export interface PathgatePolicyOptions extends CommonOptions {
  policy: PermissionPolicy;
  root?: never;
  fs?: never;
  dot?: never;
  resolve?: never;
}

/** The policy's parts: the plugin builds the `PermissionPolicy`. */
export interface PathgateRuleOptions extends CommonOptions {
  policy?: never;
  /** The sandbox root, an absolute path. Default `'/'`. */
  root?: string | undefined;
  /** The allowlist, `[r:|rw:]<glob>` rules; `[]` denies everything. Required. */
  fs: readonly string[];
  /** Let wildcards match dotfiles. Default `false`. */
  dot?: boolean | undefined;
  /** Resolver for canonical paths, e.g. `resolveSymlinks`. Default: none. */
  resolve?: ((path: string) => string) | undefined;
}

export type PathgateOptions = PathgatePolicyOptions | PathgateRuleOptions;

/** The validated options: what the hooks read at request time. */
export interface PathgateSettings {
  readonly policy: PermissionPolicy;
  readonly onDeny: DenyHandler | undefined;
  readonly reportOnly: boolean;
  readonly linger: { readonly lingerMs: number; readonly lingerBytes: number };
}

const RULE_KEYS = ['root', 'fs', 'dot', 'resolve'] as const;
const KNOWN = new Set<string>([
  'policy',
  ...RULE_KEYS,
  'onDeny',
  'reportOnly',
  'lingerMs',
  'lingerBytes',
]);
const hasOwn = Object.prototype.hasOwnProperty;

function fail(message: string): never {
  throw new TypeError(`pathgate: ${message}`);
}

/** An own key holding `undefined` counts as absent, as in the core. */
function option(options: object, key: string): unknown {
  return hasOwn.call(options, key) ? (options as Record<string, unknown>)[key] : undefined;
}

function readPolicy(options: object): PermissionPolicy {
  const policy = option(options, 'policy');
  const given = RULE_KEYS.filter((key) => option(options, key) !== undefined);
  if (policy !== undefined) {
    if (!(policy instanceof PermissionPolicy)) fail('policy must be a PermissionPolicy');
    if (given.length > 0) fail(`give either policy or ${given.join(', ')}, not both`);
    return policy;
  }
  const fs = option(options, 'fs');
  if (!Array.isArray(fs)) fail('fs must be an array of rules (or give a policy)');
  // The core names the bad root, rule or option in its own TypeError.
  return new PermissionPolicy({
    root: option(options, 'root') as string | undefined,
    permissions: { fs },
    dot: option(options, 'dot') as boolean | undefined,
    resolve: option(options, 'resolve') as PathgateRuleOptions['resolve'],
  });
}

function readCount(options: object, key: string, fallback: number): number {
  const value = option(options, key);
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    fail(`${key} must be a non-negative integer`);
  }
  return value;
}

function readOnDeny(options: object): DenyHandler | undefined {
  const onDeny = option(options, 'onDeny');
  if (onDeny !== undefined && typeof onDeny !== 'function') fail('onDeny must be a function');
  return onDeny as DenyHandler | undefined;
}

function readReportOnly(options: object): boolean {
  const reportOnly = option(options, 'reportOnly');
  if (reportOnly !== undefined && typeof reportOnly !== 'boolean') {
    fail('reportOnly must be a boolean');
  }
  return reportOnly === true;
}

/** Validates the plugin options once, at registration; every problem is a TypeError naming the option. */
export function readOptions(options: unknown): PathgateSettings {
  if (typeof options !== 'object' || options === null) fail('options must be an object');
  for (const key of Object.keys(options)) if (!KNOWN.has(key)) fail(`unknown option "${key}"`);
  return Object.freeze({
    policy: readPolicy(options),
    onDeny: readOnDeny(options),
    reportOnly: readReportOnly(options),
    linger: Object.freeze({
      lingerMs: readCount(options, 'lingerMs', DEFAULT_LINGER_MS),
      lingerBytes: readCount(options, 'lingerBytes', DEFAULT_LINGER_BYTES),
    }),
  });
}
