import { callCatching, optionError } from '@pathgate/core';
import type { Request } from 'express';
import type { Options, StorageEngine } from 'multer';

/** multer ≥ 2.4 feeds busboy through this when given (e.g. from `req.rawBody`). */
export type StreamHandler = (req: Request, parser: unknown) => void;

/**
 * multer's options, minus the three pathgate sets itself: `preservePath`
 * (`true`: the policy must see `../x`, which busboy would strip to `x`),
 * `defParamCharset` (`'utf8'`: multer's default is latin1) and `dest`
 * (files go to `file.pathgatePath`; give `storage` to store elsewhere).
 */
export interface PathgateMulterOptions
  extends Omit<Options, 'preservePath' | 'defParamCharset' | 'dest' | 'limits' | 'fileFilter'> {
  /** Runs after pathgate's, on allowed files. @types/multer's method form refuses `undefined`. */
  fileFilter?: Options['fileFilter'] | undefined;
  /** multer's limits, or (multer ≥ 2.4) a function of the request giving them. Default: none. */
  limits?: Options['limits'] | ((req: Request) => Options['limits']);
  /** multer ≥ 2.4: the charset of text fields that declare none. Default `'utf8'`. */
  defCharset?: string | undefined;
  /** multer ≥ 2.4: busboy's `highWaterMark`. Default: busboy's. */
  highWaterMark?: number | undefined;
  /** multer ≥ 2.4: each file stream's `highWaterMark`. Default: busboy's. */
  fileHwm?: number | undefined;
  /** multer ≥ 2.4: feeds busboy instead of `req.pipe`. Default: none. */
  streamHandler?: StreamHandler | undefined;
}

const RESERVED = ['preservePath', 'defParamCharset', 'dest'] as const;
/** What multer 2.x reads besides `RESERVED`: any other key is a typo, never ignored. */
const PASSED_ON = [
  'storage',
  'fileFilter',
  'limits',
  'defCharset',
  'highWaterMark',
  'fileHwm',
  'streamHandler',
];
/** multer's documented limits: busboy ignores any other, so a misspelt one would limit nothing. */
const LIMITS = [
  'fieldNameSize',
  'fieldSize',
  'fields',
  'fileSize',
  'files',
  'parts',
  'headerPairs',
  'fieldNestingDepth',
  'fieldArrayIndexLimit',
];

/** The adapters' option TypeError, naming `gate.multer()`. */
export function failMulter(message: string): never {
  return optionError(`gate.multer(): ${message}`);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Fails on a key of `given` that is not in `known` (one holding `undefined` is absent), hinting at a near miss. */
function refuseUnknown(given: Record<string, unknown>, known: readonly string[], what: string) {
  const loose = (key: string) => key.toLowerCase().replace(/s$/, '');
  for (const key of Object.keys(given)) {
    if (known.includes(key) || given[key] === undefined) continue;
    const near = known.find((name) => loose(name) === loose(key));
    failMulter(`unknown ${what} "${key}"${near ? ` (did you mean ${near}?)` : ''}`);
  }
}

/**
 * A storage the gate can store with and take back a denied request's files
 * from. multer reads any other value (`null`, a path) as no storage and
 * keeps files in memory; pathgate would use its disk storage: neither is
 * what was asked for.
 */
const isStorageEngine = (storage: unknown): boolean =>
  typeof storage === 'object' &&
  storage !== null &&
  typeof (storage as StorageEngine)._handleFile === 'function' &&
  typeof (storage as StorageEngine)._removeFile === 'function';

/**
 * The oldest multer the gate works with (the peer range's floor): 2.1 leaves
 * the file it was writing when an upload fails, half-written. A peer range
 * only warns, so an older multer is refused here.
 */
const FLOOR = [2, 2] as const;

/**
 * The multer release that first reads an option or limit: an older multer
 * ignores it, so a limit would limit nothing and a `limits` function would
 * leave the upload with none.
 */
const SINCE: Readonly<Record<string, readonly [number, number]>> = {
  fieldArrayIndexLimit: [2, 3],
  'limits as a function': [2, 4],
  defCharset: [2, 4],
  highWaterMark: [2, 4],
  fileHwm: [2, 4],
  streamHandler: [2, 4],
};

/** Whether `version` (`major.minor.patch`) is `since` or later. */
function atLeast(version: string, since: readonly [number, number]): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > since[0] || (major === since[0] && minor >= since[1]);
}

/** Fails when the installed multer (`version`) is older than `name` needs. */
function needsRelease(name: string, version: string): void {
  const since = SINCE[name];
  if (since === undefined || atLeast(version, since)) return;
  failMulter(`${name} needs multer ${since.join('.')} or later (installed: ${version})`);
}

/**
 * multer hands busboy the inherited limits too (`for...in`), but checks some
 * only when own (`fieldNestingDepth`), and none of them from 2.5 on: an
 * inherited limit would go unchecked here and there. Limits must be own.
 */
function refuseInherited(limits: Record<string, unknown>): void {
  for (const key in limits) {
    if (!Object.hasOwn(limits, key)) failMulter(`limit ${key} must be an own property of limits`);
  }
}

/** multer reads limits of any other shape (a number, `null`, an array) as none. */
function readLimits(limits: unknown, version: string): void {
  if (limits === undefined) return;
  if (typeof limits === 'function') {
    needsRelease('limits as a function', version);
    return;
  }
  if (!isRecord(limits)) failMulter('option limits must be an object or a function');
  readLimitValues(limits, version);
}

/**
 * A limits function's answer, checked on each request as `limits` is once:
 * multer reads a misspelt limit, a number, or an async function's promise
 * as no limit. Thrown inside multer's call, the TypeError fails the request
 * (a 500, the server's). `callCatching` makes a falsy throw an Error (multer
 * would pass it to next() as success) and takes a promise's rejection.
 */
function checkedPerRequest(limits: (req: Request) => unknown, version: string) {
  return (req: Request): Options['limits'] => {
    let failed: Error | undefined;
    const given = callCatching(
      () => limits(req),
      (error) => {
        failed = error;
      },
    );
    if (failed) throw failed;
    if (typeof (given as { then?: unknown } | null | undefined)?.then === 'function')
      failMulter(
        'the limits function must answer synchronously (an async one answers a promise, which multer reads as no limits)',
      );
    if (given === undefined) return given;
    if (!isRecord(given)) failMulter('the limits function must return an object or undefined');
    readLimitValues(given, version);
    return given;
  };
}

/** Each limit: own, documented, and a value busboy compares as a number. */
function readLimitValues(limits: Record<string, unknown>, version: string): void {
  refuseInherited(limits);
  refuseUnknown(limits, LIMITS, 'limit');
  for (const key of Object.keys(limits)) {
    const value = limits[key];
    if (value === undefined || value === null) continue;
    // busboy compares most limits with ===: any other value never matches,
    // so it limits nothing (multer refuses it itself from 2.5 only).
    if (!((Number.isInteger(value) && (value as number) >= 0) || value === Infinity)) {
      failMulter(`limit ${key} must be a non-negative integer or Infinity`);
    }
    needsRelease(key, version);
  }
}

const HIGH_WATER_MARKS = ['highWaterMark', 'fileHwm'] as const;

/**
 * busboy ignores a highWaterMark that is not a number; one a stream cannot
 * take (`-1`) throws inside busboy's parser, on the first part, uncaught.
 */
function readHighWaterMark(value: unknown, key: string): void {
  if (value === undefined || value === null) return;
  if (!Number.isInteger(value) || (value as number) < 0) {
    failMulter(`option ${key} must be a non-negative integer`);
  }
}

/**
 * Validates `gate.multer(options)` once, against the installed multer's
 * `version`: every problem is a TypeError naming the option.
 */
export function readMulterOptions(options: unknown, version: string): PathgateMulterOptions {
  if (!atLeast(version, FLOOR)) {
    failMulter(`needs multer ${FLOOR.join('.')} or later (installed: ${version})`);
  }
  if (!isRecord(options)) failMulter('options must be an object');
  for (const key of RESERVED) {
    if (options[key] !== undefined) failMulter(`option ${key} is set by pathgate`);
  }
  refuseUnknown(options, PASSED_ON, 'option');
  const { fileFilter, streamHandler, storage, limits, defCharset } =
    options as PathgateMulterOptions;
  if (storage !== undefined && !isStorageEngine(storage)) {
    failMulter('option storage must be a multer storage engine (with _handleFile and _removeFile)');
  }
  if (fileFilter !== undefined && typeof fileFilter !== 'function') {
    failMulter('option fileFilter must be a function');
  }
  if (streamHandler !== undefined && typeof streamHandler !== 'function') {
    failMulter('option streamHandler must be a function');
  }
  // busboy lowercases it inside its parser, on the first text field: a throw there is uncaught.
  if (defCharset !== undefined && typeof defCharset !== 'string') {
    failMulter('option defCharset must be a string');
  }
  readLimits(limits, version);
  for (const key of HIGH_WATER_MARKS) readHighWaterMark(options[key], key);
  for (const key of Object.keys(options))
    if (options[key] !== undefined) needsRelease(key, version);
  return options as PathgateMulterOptions;
}

/** The limits to hand multer: a function's answer checked on each request (`checkedPerRequest`). */
export const multerLimits = (limits: PathgateMulterOptions['limits'], version: string) =>
  typeof limits === 'function' ? checkedPerRequest(limits, version) : limits;
