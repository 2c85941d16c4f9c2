import {
  type GuardDenyReason,
  type PathDenial,
  PermissionPolicy,
  type PermissionPolicyOptions,
} from '@pathgate/core';
import { DEFAULT_LINGER_BYTES, DEFAULT_LINGER_MS, type LingerOptions } from '@pathgate/core/http';
import type { Request, Response } from 'express';

/** How an enforced deny is answered. */
export type DenyHandling = 'respond' | 'next';

/** What pathgate logs: report-only denies and wiring mistakes. Server-side only. */
export interface PathgateLogEntry {
  /** `'report-only'`: a deny that was let through; `'misconfigured'`: a wiring mistake. */
  readonly event: 'report-only' | 'misconfigured';
  readonly message: string;
  readonly method: string;
  readonly url: string;
  /** The spec that denied (`body.from`, `file avatar`). */
  readonly label?: string;
  readonly reason?: GuardDenyReason;
  /** The canonical path, when there is one: for logs only, never for a client. */
  readonly path?: string;
}

/**
 * The `onDeny` hook (see `PathgateOptions.onDeny`). An object it returns is
 * sent as the 403 body; any other return value (none included) is ignored.
 */
export type DenyHandler = (denial: PathDenial, req: Request, res: Response) => unknown;

export interface PathgateOptions {
  /** A ready policy. Give either this or `fs` (with `root`, `dot`, `resolve`). */
  policy?: PermissionPolicy;
  /** The sandbox root, an absolute path. Default `'/'`. Not with `policy`. */
  root?: string;
  /** The allowlist: `[r:|rw:]<glob>` rules. Required unless `policy` is given; `[]` denies everything. */
  fs?: readonly string[];
  /** Let wildcards match dotfiles. Default `false`. Not with `policy`. */
  dot?: boolean;
  /** Resolver for canonical paths, e.g. core's `resolveSymlinks`. Default: none. Not with `policy`. */
  resolve?: PermissionPolicyOptions['resolve'];
  /**
   * Called with every deny before pathgate answers: it may log, set headers,
   * return an object to send as the 403 body instead of the default one (it
   * must not reveal paths either), or answer itself. In report-only mode it
   * is called for what would have been denied and its return value is
   * ignored; with `errors: 'next'` too. Default: none.
   */
  onDeny?: DenyHandler;
  /** Log denies and let the request through instead of refusing it. Default `false`. */
  reportOnly?: boolean;
  /** Receives report-only denies and wiring warnings. Default: `console.warn`. */
  log?: (entry: PathgateLogEntry) => void;
  /**
   * `'respond'` sends the 403 JSON body; `'next'` calls `next(err)` with a
   * `PathgateDeniedError` (status 403, `expose: true`) for the app's error
   * handler to render. Default `'respond'`.
   */
  errors?: DenyHandling;
  /** After a 403 sent while the body is still arriving: how long to keep reading it, in ms. Default 2000. */
  lingerMs?: number;
  /** ...and at most how many bytes. Default 64 MiB. */
  lingerBytes?: number;
}

/** The validated options, read once by the factory. */
export interface Settings {
  readonly policy: PermissionPolicy;
  readonly onDeny: DenyHandler | undefined;
  readonly reportOnly: boolean;
  readonly log: (entry: PathgateLogEntry) => void;
  readonly errors: DenyHandling;
  readonly linger: Required<LingerOptions>;
}

const KNOWN = new Set([
  'policy',
  'root',
  'fs',
  'dot',
  'resolve',
  'onDeny',
  'reportOnly',
  'log',
  'errors',
  'lingerMs',
  'lingerBytes',
]);
const POLICY_KEYS = ['root', 'fs', 'dot', 'resolve'] as const;
const hasOwn = Object.prototype.hasOwnProperty;

function fail(message: string): never {
  throw new TypeError(`pathgate: ${message}`);
}

/** An own key holding `undefined` counts as absent; `null` is an error (as in the core). */
function read(options: object, key: string): unknown {
  const value = hasOwn.call(options, key) ? (options as Record<string, unknown>)[key] : undefined;
  if (value === null) fail(`option ${key} must not be null`);
  return value;
}

function readPolicy(options: object): PermissionPolicy {
  const policy = read(options, 'policy');
  const given = POLICY_KEYS.filter((key) => read(options, key) !== undefined);
  if (policy !== undefined) {
    if (!(policy instanceof PermissionPolicy)) fail('option policy must be a PermissionPolicy');
    if (given.length > 0) fail(`option ${given[0]} cannot be combined with policy`);
    return policy;
  }
  const fs = read(options, 'fs');
  if (!Array.isArray(fs)) fail('option fs must be an array of rule strings (or give policy)');
  // The core's TypeErrors name the rule, root, dot or resolve: the same names as here.
  return new PermissionPolicy({
    root: read(options, 'root') as string | undefined,
    permissions: { fs },
    dot: read(options, 'dot') as boolean | undefined,
    resolve: read(options, 'resolve') as PermissionPolicyOptions['resolve'],
  });
}

function readFunction<T>(options: object, key: string): T | undefined {
  const value = read(options, key);
  if (value !== undefined && typeof value !== 'function') fail(`option ${key} must be a function`);
  return value as T | undefined;
}

function readCount(options: object, key: string, fallback: number): number {
  const value = read(options, key);
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    fail(`option ${key} must be a non-negative integer`);
  }
  return value;
}

function readErrors(options: object): DenyHandling {
  const value = read(options, 'errors') ?? 'respond';
  if (value !== 'respond' && value !== 'next') fail('option errors must be "respond" or "next"');
  return value;
}

function readReportOnly(options: object): boolean {
  const value = read(options, 'reportOnly') ?? false;
  if (typeof value !== 'boolean') fail('option reportOnly must be a boolean');
  return value;
}

const warn = (entry: PathgateLogEntry): void => console.warn(`pathgate: ${entry.message}`, entry);

/** Validates the factory's options once: every problem is a TypeError naming the option. */
export function readOptions(options: unknown): Settings {
  if (typeof options !== 'object' || options === null) fail('options must be an object');
  for (const key of Object.keys(options)) if (!KNOWN.has(key)) fail(`unknown option "${key}"`);
  return {
    policy: readPolicy(options),
    onDeny: readFunction<DenyHandler>(options, 'onDeny'),
    reportOnly: readReportOnly(options),
    log: readFunction<Settings['log']>(options, 'log') ?? warn,
    errors: readErrors(options),
    linger: {
      lingerMs: readCount(options, 'lingerMs', DEFAULT_LINGER_MS),
      lingerBytes: readCount(options, 'lingerBytes', DEFAULT_LINGER_BYTES),
    },
  };
}
