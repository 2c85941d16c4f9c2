import { createRequire } from 'node:module';
import type { Writable } from 'node:stream';
import type { Request, RequestHandler } from 'express';
import type { Multer, Options, StorageEngine } from 'multer';
import { callCatching } from './app-call.js';
import { type FileFilter, pathgateFileFilter } from './file-filter.js';
import { foldersHeldBy, hold } from './folders.js';
import type { PathgateHandler } from './middleware.js';
import { misconfiguredOnce, type Settings } from './options.js';
import { catchPipe, watchParts } from './parts.js';
import type { Deny } from './reply.js';
import { markUploadHandler, takeRouteStates } from './route-state.js';
import { Upload, uploadOf } from './upload.js';

/** multer ≥ 2.4 feeds busboy through this when given (e.g. from `req.rawBody`). */
type StreamHandler = (req: Request, parser: unknown) => void;

/**
 * multer's options, minus the three pathgate sets itself: `preservePath`
 * (`true`: the policy must see `../x`, which busboy would strip to `x`),
 * `defParamCharset` (`'utf8'`: multer's default is latin1) and `dest`
 * (files go to `file.pathgatePath`; give `storage` to store elsewhere).
 */
export interface PathgateMulterOptions
  extends Omit<Options, 'preservePath' | 'defParamCharset' | 'dest'> {
  /** multer ≥ 2.4: feeds busboy instead of `req.pipe`. Default: none. */
  streamHandler?: StreamHandler | undefined;
}

/** multer's instance, each middleware maker returning a `PathgateHandler` (the route's params stay typed). */
export type PathgateMulter = {
  [Method in keyof Multer]: (...args: Parameters<Multer[Method]>) => PathgateHandler;
};

const RESERVED = ['preservePath', 'defParamCharset', 'dest'] as const;
const METHODS = ['single', 'array', 'fields', 'any', 'none'] as const;

function fail(message: string): never {
  throw new TypeError(`pathgate: gate.multer(): ${message}`);
}

/** multer is an optional peer dependency: loaded on first use, with a clear error if absent. */
function loadMulter(): (options: object) => Multer {
  try {
    return createRequire(import.meta.url)('multer');
  } catch {
    return fail('needs the multer package (npm install multer@^2.1)');
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

function readMulterOptions(options: unknown): PathgateMulterOptions {
  if (typeof options !== 'object' || options === null) fail('options must be an object');
  for (const key of RESERVED) {
    if ((options as Record<string, unknown>)[key] !== undefined) {
      fail(`option ${key} is set by pathgate`);
    }
  }
  const { fileFilter, streamHandler, storage } = options as PathgateMulterOptions;
  if (storage !== undefined && !isStorageEngine(storage)) {
    fail('option storage must be a multer storage engine (with _handleFile and _removeFile)');
  }
  if (fileFilter !== undefined && typeof fileFilter !== 'function') {
    fail('option fileFilter must be a function');
  }
  if (streamHandler !== undefined && typeof streamHandler !== 'function') {
    fail('option streamHandler must be a function');
  }
  return options as PathgateMulterOptions;
}

/** The gate's side of an upload: what every wrapped multer middleware shares. */
interface UploadGate {
  readonly settings: Settings;
  readonly deny: Deny;
  readonly storage: StorageEngine;
}

/** Wraps one multer middleware so the gate's fileFilter can answer early, once. */
function guardUpload(multerMiddleware: RequestHandler, gate: UploadGate): PathgateHandler {
  const warn = misconfiguredOnce(gate.settings);
  const onOrphan = (req: Request) =>
    warn(
      req,
      'a file reached gate.multer() on a route without a gate middleware: every file is denied; put gate.write({ file: ... }) before the multer middleware',
    );
  return markUploadHandler(function pathgateUpload(req, res, next) {
    // A second gate.multer() on the route: parsing the spent body again would
    // be a 400 that leaves the first one's files stored. Skipped, as body
    // parsers skip a parsed body; never for another route's upload (after
    // next('route')), whose files this route's gates did not decide.
    const earlier = uploadOf(req);
    if (earlier !== undefined && earlier.route === req.route) return next();
    const routes = takeRouteStates(req);
    const upload = new Upload({ req, res, next, routes, onOrphan, ...gate });
    // Held until multer calls back: its abort removes stored files after a
    // cut connection ended the response (see `Held`). `finish` starts any
    // later removal before the hold ends.
    const parsed = hold(foldersHeldBy(req));
    const restore = catchPipe(req);
    try {
      multerMiddleware(req, res, (error?: unknown) => {
        upload.finish(error);
        parsed();
      });
    } catch (error) {
      parsed();
      throw error;
    } finally {
      restore();
    }
  } as RequestHandler) as PathgateHandler;
}

/**
 * A multer instance for the gate: UTF-8 filenames, the client's full name
 * for the policy, pathgate's fileFilter before the user's, and by default
 * the safe disk storage. Its `single`, `array`, `fields`, `any` and `none`
 * return middleware that answers a denied file at once.
 */
export function createMulter(
  settings: Settings,
  deny: Deny,
  defaultStorage: () => StorageEngine,
  options: unknown = {},
): PathgateMulter {
  const { fileFilter, streamHandler, ...rest } = readMulterOptions(options);
  const multer = loadMulter();
  const storage = rest.storage ?? defaultStorage();
  const watched: StreamHandler | undefined =
    streamHandler &&
    ((req, parser) => {
      watchParts(req, parser);
      // busboy's error aborts multer, which calls back with it.
      callCatching(
        () => streamHandler(req, parser),
        (error) => (parser as Writable).destroy(error),
      );
    });
  const instance = multer({
    ...rest,
    storage,
    defParamCharset: 'utf8',
    preservePath: true,
    fileFilter: pathgateFileFilter(fileFilter as FileFilter | undefined),
    ...(watched ? { streamHandler: watched } : {}),
  });
  const gate: UploadGate = { settings, deny, storage };
  for (const method of METHODS) {
    const original = instance[method] as (...args: unknown[]) => RequestHandler;
    instance[method] = ((...args: unknown[]) =>
      guardUpload(original.apply(instance, args), gate)) as never;
  }
  return instance as PathgateMulter;
}
