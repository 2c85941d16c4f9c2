import { createRequire } from 'node:module';
import type { Writable } from 'node:stream';
import { callCatching } from '@pathgate/core';
import type { Request, RequestHandler } from 'express';
import type { Multer, StorageEngine } from 'multer';
import { type FileFilter, pathgateFileFilter } from './file-filter.js';
import { foldersHeldBy, hold } from './folders.js';
import type { PathgateHandler } from './middleware.js';
import { closeWithConnection } from './multer-abort.js';
import {
  failMulter,
  multerLimits,
  readMulterOptions,
  type StreamHandler,
} from './multer-options.js';
import { misconfiguredOnce, type Settings } from './options.js';
import { catchPipe, watchParts } from './parts.js';
import { type Deny, logFailed } from './reply.js';
import { markUploadHandler, takeRouteStates } from './route-state.js';
import { Upload, uploadOf } from './upload.js';

/** multer's instance, each middleware maker returning a `PathgateHandler` (the route's params stay typed). */
export type PathgateMulter = {
  [Method in keyof Multer]: (...args: Parameters<Multer[Method]>) => PathgateHandler;
};

const METHODS = ['single', 'array', 'fields', 'any', 'none'] as const;

interface MulterPackage {
  readonly multer: (options: object) => Multer;
  readonly version: string;
}

/** multer is an optional peer dependency: loaded on first use, with a clear error if absent. */
function loadMulter(): MulterPackage {
  const require = createRequire(import.meta.url);
  try {
    return { multer: require('multer'), version: require('multer/package.json').version };
  } catch {
    return failMulter('needs the multer package (npm install multer@^2.2)');
  }
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
    // later removal before the hold ends. A connection closed before the body
    // ended destroys the request, so that multer calls back at all.
    // Watched first: a socket that cannot be watched then holds nothing.
    const unwatch = closeWithConnection(req);
    const held = hold(foldersHeldBy(req));
    const parsed = () => {
      unwatch();
      held();
    };
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

/** `_handleFile`'s callback; `_removeFile`'s takes the error alone. */
type StoredCallback = Parameters<StorageEngine['_handleFile']>[2];

/**
 * The app's storage engine, each method called through `callCatching`: multer
 * calls `_handleFile` inside busboy's events, where a throw would end the
 * process and a rejection go unhandled, the request waiting on a callback
 * that never comes; `_removeFile` too, and the gate waits on it. Either is
 * the callback's error now. The first call decides (multer counts each
 * file's callback); an error after it is logged.
 */
function catchingStorage(storage: StorageEngine, settings: Settings): StorageEngine {
  const guarded =
    (name: keyof StorageEngine) =>
    (req: Request, file: Express.Multer.File, callback: StoredCallback) => {
      let called = false;
      const done: StoredCallback = (error, info) => {
        if (!called) {
          called = true;
          callback(error, info);
        } else if (error) logFailed(settings, req, `storage ${name} (after it called back)`)(error);
      };
      callCatching(() => storage[name](req, file, done), done);
    };
  return { _handleFile: guarded('_handleFile'), _removeFile: guarded('_removeFile') };
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
  const { multer, version } = loadMulter();
  const { fileFilter, streamHandler, ...rest } = readMulterOptions(options, version);
  const storage = rest.storage ? catchingStorage(rest.storage, settings) : defaultStorage();
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
    limits: multerLimits(rest.limits, version),
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
