// The file API on Express: the same routes, statuses and bodies as the Fastify
// example. Each route puts the gate's middleware before its handler; a deny is
// a 403 and the handler never runs, and the handlers use only the canonical
// paths the gate checked (req.pathgate, file.pathgatePath).
import { createServer, type RequestListener } from 'node:http';
import { join } from 'node:path';
import { finished, type Readable, type Writable } from 'node:stream';
import { resolveSymlinks } from '@pathgate/core';
import { type PathgateMulterOptions, PathgateStorageError, pathgate } from '@pathgate/express';
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import { checkedPath } from '../shared/checked.js';
import {
  FileApiError,
  listDir,
  moveFile,
  openFile,
  refuseTooDeep,
  removeFile,
  sandboxFault,
} from '../shared/files.js';
import { BODYLESS, mediaType, undecodedJson } from '../shared/json-coding.js';
import { RealRoot } from '../shared/real-root.js';
import {
  answerClientError,
  downloadHeaders,
  errorBody,
  indexPage,
  NOT_FOUND,
  shownPath,
} from '../shared/replies.js';
import { badTarget } from '../shared/request-target.js';
import {
  IDLE_TIMEOUT_MS,
  type ListenOptions,
  listenHttp,
  REQUEST_TIMEOUT_MS,
  type Started,
} from '../shared/run.js';
import { RULES, UPLOAD_FOLDER, UPLOAD_LIMITS } from '../shared/sandbox.js';

/**
 * Express 5 names every wildcard. Naming it `*` gives the 403s the label
 * Fastify's `/files/*` gives them (`params.*`); `{…}` makes it optional, so
 * `/files/` reaches the gate (a missing path) as it does in Fastify.
 */
const FILES = '/files/{*"*"}';

/**
 * Whether `body` holds a key Fastify's JSON parser refuses (`onProtoPoisoning`,
 * `onConstructorPoisoning`: 'error'): `__proto__`, or a `constructor` holding
 * a `prototype`, at any depth. Walked with a stack, not recursion (nor a
 * reviver, which JSON.parse recurses into): a body nested 200,000 deep is
 * judged, as in Fastify, not a stack overflow's 400.
 */
function poisoned(body: unknown): boolean {
  const pending = [body];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value !== 'object' || value === null) continue;
    for (const [key, child] of Object.entries(value)) {
      if (key === '__proto__') return true;
      const holdsPrototype =
        typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype');
      if (key === 'constructor' && holdsPrototype) return true;
      pending.push(child);
    }
  }
  return false;
}

/**
 * JSON bodies read as Fastify reads them: any JSON value is accepted (pathgate
 * judges it), up to its 1 MiB `bodyLimit`; an empty body, or one with a
 * poisoned key, is a 400.
 */
const jsonBody = express.json({
  strict: false,
  limit: 1024 * 1024,
  verify: (_req, _res, body) => {
    if (body.length === 0) throw new FileApiError(400, 'bad request');
  },
});

/**
 * Bodies are read as Fastify reads them, on every route: none on a GET, HEAD
 * or TRACE; on other methods a content type means a body to parse (an absent
 * one is empty: a 400 for JSON), and only JSON and multipart have parsers,
 * another media type is a 415, as is JSON compressed or in another charset
 * than UTF-8 (`undecodedJson`). Multipart is left to the upload's multer.
 */
const readBody: RequestHandler = (req, res, next) => {
  if (BODYLESS.has(req.method)) return next();
  const { 'content-type': type, 'content-length': length } = req.headers;
  const framed = length !== undefined || req.headers['transfer-encoding'] !== undefined;
  if (type === undefined) {
    const empty = !framed || length === '0';
    return next(empty ? undefined : new FileApiError(415, 'unsupported media type'));
  }
  const media = mediaType(type);
  if (media === 'multipart/form-data') return next();
  if (media !== 'application/json') return next(new FileApiError(415, 'unsupported media type'));
  const undecoded = undecodedJson(req);
  if (undecoded) return next(undecoded);
  // Express's parser skips a request with no body at all; Fastify's finds it empty.
  if (!framed) return next(new FileApiError(400, 'bad request'));
  jsonBody(req, res, (error?: unknown) => {
    if (error !== undefined) return next(error);
    next(poisoned(req.body) ? new FileApiError(400, 'bad request') : undefined);
  });
};

/**
 * Feeds multer's busboy the request, refusing as @fastify/multipart does
 * (FST_PROTO_VIOLATION) a field named after a key of Object.prototype
 * (`__proto__`, `constructor`, `toString`): a 400, and multer takes back
 * what it stored. A file part so named is the gate's `unexpected-file`
 * (403) first, where Fastify answers 400.
 */
function refusingPrototypeNames(req: Readable, busboy: unknown): void {
  const parser = busboy as Writable;
  parser.on('field', (name: string) => {
    if (name in Object.prototype) parser.destroy(new FileApiError(400, 'bad request'));
  });
  req.pipe(parser);
}

/** The upload's multer options: `streamHandler` needs multer 2.4 (this package.json's floor). */
export const UPLOAD_OPTIONS = { limits: UPLOAD_LIMITS, streamHandler: refusingPrototypeNames };

/**
 * The upload's `fileFilter`, which gate.multer() runs after its own, on the
 * file's checked path: a target too deep (`refuseTooDeep`) is refused
 * before the storage makes or looks at a folder, as in the Fastify example.
 * Thrown: gate.multer() takes a throw as calling back with it.
 */
function refusingTooDeep(root: RealRoot): PathgateMulterOptions['fileFilter'] {
  return (_req, file, accept) => {
    if (file.pathgatePath !== undefined) refuseTooDeep(file.pathgatePath, root);
    accept(null, true);
  };
}

export function buildApp(root: string): Express {
  // One policy for every route: public/ read-only, uploads/ read-write, links resolved.
  const gate = pathgate({ root, fs: RULES, resolve: resolveSymlinks });
  const realRoot = new RealRoot(root);
  // gate.multer() sets preservePath (busboy would strip `../../x` to `x`), and its
  // storage writes each file to its checked path, never over an existing file.
  const upload = gate.multer({ ...UPLOAD_OPTIONS, fileFilter: refusingTooDeep(realRoot) });
  const page = indexPage();
  // The checked paths lie under the resolved root, whatever link `root` is reached by.
  const shown = (path: string) => shownPath(realRoot.path, path);
  // The storage's refusals of a target, answered as the server's fault where
  // the sandbox is broken (`sandboxFault`), as the Fastify example's upload.
  const uploads = [join(realRoot.path, UPLOAD_FOLDER)];
  const blameSandbox: ErrorRequestHandler = (error, _req, _res, next) => {
    if (!(error instanceof PathgateStorageError)) return next(error);
    sandboxFault(error, uploads, realRoot).then(next);
  };

  const app = express();
  app.disable('x-powered-by');
  // Fastify routes by exact case and slash: `/FILES/…`, `/api/move/` and `//`
  // are 404s there, never a delete, a move or the page under another name.
  app.enable('case sensitive routing');
  app.enable('strict routing');
  // Fastify sends no ETag and answers every GET whole; Express would answer a
  // listing or the page 304 to a matching ETag, or to `If-None-Match: *` even
  // with ETags off, as its freshness check runs in res.send.
  app.disable('etag');
  Object.defineProperty(app.request, 'fresh', { get: () => false });
  app.use(readBody);

  app.get('/', (_req, res) => {
    res.type('text/html; charset=utf-8').send(page);
  });

  app.get('/api/list', gate.read({ query: 'dir' }), async (req, res) => {
    res.json({ entries: await listDir(checkedPath(req.pathgate, 'query', 'dir'), realRoot) });
  });

  app.get(FILES, gate.read({ params: '*' }), async (req, res, next) => {
    const download = await openFile(checkedPath(req.pathgate, 'params', '*'), realRoot);
    res.set(downloadHeaders(download));
    // The file closes with the answer, however it ends (the client may be gone already).
    finished(res, () => download.stream.destroy());
    // pipe, not pipeline: a file failing before its first byte is the error
    // handler's to answer; once the bytes flow, it can only cut them short.
    download.stream.once('error', (error) => (res.headersSent ? res.destroy() : next(error)));
    download.stream.pipe(res);
  });

  app.delete(FILES, gate.write({ params: '*' }), async (req, res) => {
    const path = checkedPath(req.pathgate, 'params', '*');
    await removeFile(path, realRoot);
    res.json({ deleted: shown(path) });
  });

  app.post('/api/move', gate.write({ body: 'from' }, { body: 'to' }), async (req, res) => {
    const from = checkedPath(req.pathgate, 'body', 'from');
    const to = checkedPath(req.pathgate, 'body', 'to');
    await moveFile(from, to, realRoot);
    res.json({ moved: shown(from), to: shown(to) });
  });

  // The gate first, then its multer middleware: each filename is checked before
  // a byte is stored. any() lets pathgate, not multer, judge a file in another
  // field (unexpected-file, as in Fastify).
  app.post(
    '/api/upload',
    gate.write({ file: 'file', under: UPLOAD_FOLDER }),
    upload.any(),
    (req: Request, res: Response) => {
      const file = Array.isArray(req.files) ? req.files[0] : undefined;
      if (file?.pathgatePath === undefined) throw new FileApiError(400, 'no file');
      res.status(201).json({ uploaded: shown(file.pathgatePath), size: file.size });
    },
    blameSandbox,
  );

  app.use((_req, res) => {
    res.status(404).json(NOT_FOUND);
  });

  const onError: ErrorRequestHandler = (error, req, res, next) => {
    if (res.headersSent) return next(error);
    const body = errorBody(error);
    // A client that hung up mid-request (multer's "Request aborted") is no
    // fault of the server's (`readableAborted`, as in the Fastify example).
    if (body.statusCode === 500 && !req.readableAborted) console.error(error);
    // JSON, also where a download set its own type before its file failed.
    res.status(body.statusCode).type('json').json(body);
  };
  app.use(onError);

  return app;
}

/**
 * The app behind the check of the request targets both examples refuse
 * (`badTarget`), made before Express: its router answers a target it finds
 * no path in (`http://?x`) itself, before any middleware, with an HTML 404
 * that echoes it.
 */
function refusingBadTargets(app: Express): RequestListener {
  return (req, res) => {
    const refused = badTarget(req.method, req.url);
    if (refused === undefined) return app(req, res);
    const body = JSON.stringify(errorBody(refused));
    res.writeHead(refused.statusCode, { 'content-type': 'application/json; charset=utf-8' });
    res.end(body);
  };
}

/** Builds the app and listens on 127.0.0.1 (`port` 0: any free port). */
export function listen(
  root: string,
  port: number,
  { idleTimeoutMs = IDLE_TIMEOUT_MS }: ListenOptions = {},
): Promise<Started> {
  const app = refusingBadTargets(buildApp(root));
  const server = createServer({ requestTimeout: REQUEST_TIMEOUT_MS }, app);
  // No 'timeout' listener: a socket idle this long is destroyed.
  server.setTimeout(idleTimeoutMs);
  // A request Node cannot parse: the same JSON as the Fastify example, not an empty 400.
  server.on('clientError', answerClientError);
  return listenHttp(server, port);
}
