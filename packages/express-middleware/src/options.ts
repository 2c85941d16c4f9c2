import {
  type AdapterPolicyOptions,
  type AdapterRuleOptions,
  type AdapterSettings,
  callCatching,
  type GuardDenyReason,
  optionError,
  type PathDenial,
  readAdapterOptions,
  readFunction,
} from '@pathgate/core';
import type { Request, Response } from 'express';

/** How an enforced deny is answered. */
export type DenyHandling = 'respond' | 'next';

/** What every log entry holds: what happened, and the request it happened to. */
interface LogEntryBase {
  readonly message: string;
  readonly method: string;
  readonly url: string;
}

/** A deny that was let through (`reportOnly`). */
interface ReportOnlyLogEntry extends LogEntryBase {
  readonly event: 'report-only';
  /** The spec that denied (`body.from`, `file avatar`). */
  readonly label: string;
  readonly reason: GuardDenyReason;
  /**
   * The canonical path, when there is one: for logs only, never for a client.
   * Its first 1,024 characters and a count of the rest when longer (`loggedPath`).
   */
  readonly path?: string | undefined;
  readonly error?: undefined;
}

/** A wiring mistake, logged on the first request that shows it (`misconfiguredOnce`). */
interface MisconfiguredLogEntry extends LogEntryBase {
  readonly event: 'misconfigured';
  readonly label?: undefined;
  readonly reason?: undefined;
  readonly path?: undefined;
  readonly error?: undefined;
}

/** `onDeny` threw, or rejected (after the reply), or a multer `fileFilter` or storage engine failed after calling back. */
interface HookFailedLogEntry extends LogEntryBase {
  readonly event: 'hook-failed';
  readonly label?: undefined;
  readonly reason?: undefined;
  readonly path?: undefined;
  /** What the hook threw or rejected with. */
  readonly error: unknown;
}

/**
 * What pathgate logs, server-side only, told apart by `event`: each kind
 * has the fields it always carries, and declares the others' as absent, so
 * `entry.label` reads on any entry.
 */
export type PathgateLogEntry = ReportOnlyLogEntry | MisconfiguredLogEntry | HookFailedLogEntry;

/**
 * The `onDeny` hook: called with every deny before pathgate answers. It may
 * log, set headers, return an object to send as the 403 body instead of the
 * default one (it must not reveal paths either), or answer itself. In
 * report-only mode, and with `errors: 'next'`, its return value is ignored;
 * a promise is never a body. A throw or a rejection is logged as
 * `'hook-failed'`, and the deny goes on as if it had returned nothing.
 */
export type DenyHandler = (denial: PathDenial, req: Request, res: Response) => unknown;

/** Express's own options, beside the shared ones. */
interface ExpressOptions {
  /**
   * Receives report-only denies, wiring warnings, and `onDeny` failures, and
   * `fileFilter` or storage engine ones after they called back. Default: `console.warn`.
   */
  log?: ((entry: PathgateLogEntry) => void) | undefined;
  /**
   * `'respond'` sends the 403 JSON body; `'next'` calls `next(err)` with a
   * `PathgateDeniedError` (status 403, `expose: true`) for the app's error
   * handler to render. Default `'respond'`.
   */
  errors?: DenyHandling | undefined;
}

/** A ready policy, shared with other code. */
export interface PathgatePolicyOptions extends AdapterPolicyOptions<DenyHandler>, ExpressOptions {}

/** The policy's parts: the gate builds the `PermissionPolicy`. */
export interface PathgateRuleOptions extends AdapterRuleOptions<DenyHandler>, ExpressOptions {}

/** The gate's options (see the README's options table). */
export type PathgateOptions = PathgatePolicyOptions | PathgateRuleOptions;

/** The validated options, read once by the factory. */
export interface Settings extends AdapterSettings<DenyHandler> {
  readonly log: (entry: PathgateLogEntry) => void;
  readonly errors: DenyHandling;
}

const warn = (entry: PathgateLogEntry): void => console.warn(`pathgate: ${entry.message}`, entry);

/**
 * The app's `log`, made safe to call from anywhere: it also runs inside
 * multer's and busboy's event handlers, where a throw would crash the
 * process, as would the rejection of an async one's promise (its type,
 * returning `void`, takes an async function).
 */
function safeLog(log: Settings['log']): Settings['log'] {
  return (entry) =>
    callCatching(
      () => log(entry),
      (error) => console.error('pathgate: the log option failed', error),
    );
}

/**
 * A wiring mistake's log entry, made once: the first request that shows the
 * mistake is logged, later ones are not (a misconfigured route would
 * otherwise log on every request).
 */
export function misconfiguredOnce(settings: Settings): (req: Request, message: string) => void {
  let logged = false;
  return (req, message) => {
    if (logged) return;
    logged = true;
    settings.log({ event: 'misconfigured', message, method: req.method, url: req.originalUrl });
  };
}

/** Validates the factory's options once: every problem is a TypeError naming the option. */
export function readOptions(options: unknown): Settings {
  const { settings, read } = readAdapterOptions<DenyHandler>(options, ['log', 'errors']);
  const errors = read('errors') ?? 'respond';
  if (errors !== 'respond' && errors !== 'next') {
    optionError('option errors must be "respond" or "next"');
  }
  return {
    ...settings,
    log: safeLog(readFunction<Settings['log']>(read, 'log') ?? warn),
    errors,
  };
}
