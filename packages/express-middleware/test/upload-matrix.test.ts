import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import http from 'node:http';
import { basename, join } from 'node:path';
import express, { type RequestHandler } from 'express';
import multer, { type Options, type StorageEngine } from 'multer';
import { describe, expect, it } from 'vitest';
import { drainedOrClosed } from '../../../test/fault-clients.js';
import { exchangeRaw, rawRequest } from '../../../test/raw-http.js';
import { type PathgateOptions, pathgate } from '../src/index.js';
import { uploadOf } from '../src/upload.js';
import {
  BOUNDARY,
  entriesUnder,
  fieldPart,
  filePart,
  MULTIPART,
  multipart,
  multipartPost,
  type RawPart,
  type Served,
  serve,
  sleep,
  tempRoot,
  until,
} from './helpers.js';

// The upload matrix: each row is one multipart request against one route
// (multer method × storage × user fileFilter × limits × deny mode × gates),
// sent over real HTTP. Every row must get exactly one answer with its
// status (never none: a timeout fails it; never two), find nothing left
// below uploads/ when that answer arrives (files, temp files, folders),
// leak no descriptor, and leave the server answering.

type Method = 'single' | 'array' | 'fields' | 'any' | 'none';
type StorageKind = 'disk' | 'overwrite' | 'memory' | 'slow' | 'failing' | 'silent';
type FilterKind = 'rejects' | 'throws' | 'errors';
type Mode = 'respond' | 'next' | 'report' | 'report-answers' | 'respond-answers';

interface Row {
  readonly name: string;
  readonly method?: Method;
  readonly storage?: StorageKind;
  readonly filter?: FilterKind;
  readonly limits?: Options['limits'];
  readonly mode?: Mode;
  /** A second gate on the route: enforcing, or report-only. */
  readonly second?: 'enforcing' | 'report';
  readonly parts: readonly RawPart[];
  /** The body ends inside a last file part of this name (no closing boundary). */
  readonly cutInside?: string;
  /** The answer's status; a list when either refusal is right (which comes first depends on how the body is chunked). */
  readonly status: number | readonly number[];
  /** What is below uploads/ when the answer arrives (folders end in `/`). Default: nothing. */
  readonly disk?: readonly string[];
  /**
   * Report-only, onDeny answering itself: it answers at once, before the
   * files stored so far are removed (gone soon after, not at the answer).
   */
  readonly removedAfterAnswer?: boolean;
}

const KB = 1024;
const MB = 1024 * KB;
const good = (name: string, size = 4 * KB) => filePart('docs', name, randomBytes(size));
const DENIED = filePart('docs', '../denied.bin', 'no');
/** A denied part the client is still sending when the deny goes out. */
const deniedBig = (size: number) => filePart('docs', '../denied.bin', Buffer.alloc(size, 0x61));
/** The user's fileFilter acts on these names only. */
const SKIPPED = 'skip-me.bin';
const BOOM = 'boom.bin';

const gone = (path: string) => unlink(path).catch(() => {});

/** A custom engine writing below uploads/ by its own rules: slow, failing, or silent on a stream error. */
function customStorage(root: string, kind: 'slow' | 'failing' | 'silent'): StorageEngine {
  return {
    _handleFile(_req, file, callback) {
      const path = join(root, 'uploads', basename(file.originalname));
      file.path = path; // as multer's diskStorage: a removal finds it while written
      const out = createWriteStream(path);
      out.on('error', () => {}); // a write in flight when the part fails: the part's error decides
      file.stream.on('error', () => {
        // Its half-written file removed first, once closed: a stream destroyed
        // while opening still creates it. 'silent' never calls back, as some engines do.
        out.once('close', () => {
          void gone(path).then(() => {
            if (kind !== 'silent') callback(new Error('stream failed'));
          });
        });
        out.destroy();
      });
      file.stream.pipe(out);
      out.on('finish', () => {
        if (kind === 'failing') {
          void gone(path).then(() => callback(new Error('engine refused')));
          return;
        }
        const size = out.bytesWritten;
        setTimeout(() => callback(null, { path, size }), kind === 'slow' ? 150 : 0);
      });
    },
    _removeFile(_req, file, callback) {
      // A slow removal: the answer must wait for it.
      setTimeout(() => gone(file.path).then(() => callback(null)), 100);
    },
  };
}

function storageFor(gate: ReturnType<typeof pathgate>, root: string, kind: StorageKind) {
  if (kind === 'disk') return gate.diskStorage();
  if (kind === 'overwrite') return gate.diskStorage({ overwrite: true });
  if (kind === 'memory') return multer.memoryStorage();
  return customStorage(root, kind);
}

function userFilter(kind: FilterKind | undefined): Options['fileFilter'] {
  if (kind === undefined) return undefined;
  return (_req, file, cb) => {
    if (kind === 'rejects') return cb(null, file.originalname !== SKIPPED);
    if (file.originalname !== BOOM) return cb(null, true);
    if (kind === 'throws') throw new Error('filter threw');
    cb(new Error('filter says no'));
  };
}

function gateOptions(root: string, mode: Mode): PathgateOptions {
  const answers = (_d: unknown, _req: unknown, res: express.Response) => {
    res.status(451).json({ answered: 'by onDeny' });
  };
  return {
    root,
    fs: ['rw:uploads/**'],
    log: () => {},
    ...(mode === 'next' ? { errors: 'next' as const } : {}),
    ...(mode.startsWith('report') ? { reportOnly: true } : {}),
    ...(mode.endsWith('answers') ? { onDeny: answers } : {}),
  };
}

function multerMiddleware(up: ReturnType<ReturnType<typeof pathgate>['multer']>, method: Method) {
  if (method === 'single') return up.single('docs');
  if (method === 'array') return up.array('docs');
  if (method === 'fields') return up.fields([{ name: 'docs' }, { name: 'other' }]);
  if (method === 'any') return up.any();
  return up.none();
}

interface Observed {
  /** Calls of `res.writeHead`: one per answer. */
  heads: number;
  /**
   * Calls of `res.end`: one per answer, written or not (to a client gone,
   * Node writes no head). The gate ends a request only once its stores
   * settled and its files are removed: the server is done with it.
   */
  ends: number;
  handler: number;
  errorHandler: number;
  /** Every request that reached the app, in order. */
  requests: express.Request[];
}

/** Calls `count` on each call of `res[method]`, which then goes on as before. */
function counting(res: express.Response, method: 'writeHead' | 'end', count: () => void): void {
  const original = res[method] as (...args: unknown[]) => unknown;
  Object.assign(res, {
    [method](this: express.Response, ...args: unknown[]) {
      count();
      return original.apply(this, args);
    },
  });
}

function buildApp(root: string, row: Row, seen: Observed) {
  const mode = row.mode ?? 'respond';
  const gate = pathgate(gateOptions(root, mode));
  const storage = storageFor(gate, root, row.storage ?? 'disk');
  const up = gate.multer({
    storage,
    ...(row.limits ? { limits: row.limits } : {}),
    ...(row.filter ? { fileFilter: userFilter(row.filter) } : {}),
  });
  const app = express();
  app.use((req, res, next) => {
    seen.requests.push(req);
    counting(res, 'writeHead', () => seen.heads++);
    counting(res, 'end', () => seen.ends++);
    next();
  });
  app.get('/ping', (_req, res) => {
    res.send('pong');
  });
  const specs =
    row.method === 'fields'
      ? [
          { file: 'docs', under: 'uploads' },
          { file: 'other', under: 'uploads', optional: true },
        ]
      : [{ file: 'docs', under: 'uploads', optional: true }];
  const gates: RequestHandler[] = [gate.write(...specs)];
  if (row.second) {
    const other = pathgate(gateOptions(root, row.second === 'report' ? 'report' : 'respond'));
    gates.push(other.write({ file: 'docs', under: 'uploads/second', optional: true }));
  }
  const handler: RequestHandler = (req, res) => {
    seen.handler += 1;
    const files = req.file ? [req.file] : Object.values(req.files ?? {}).flat();
    res.status(201).json({ stored: files.length });
  };
  app.post('/up', ...gates, multerMiddleware(up, row.method ?? 'array'), handler);
  app.use(((error, _req, res, _next) => {
    seen.errorHandler += 1;
    const status = typeof error?.status === 'number' ? error.status : 500;
    res.status(status).json({ code: error?.code, message: error?.message });
  }) as express.ErrorRequestHandler);
  return app;
}

/** Every entry below uploads/ (folders end in `/`), sorted. */
const disk = (root: string) => entriesUnder(join(root, 'uploads'));

const openDescriptors = () => readdirSync('/proc/self/fd').length;

interface Answered {
  status: number;
  disk: string[];
}

const ANSWER_WITHIN = 10_000;

/**
 * Posts the body (its chunks written as the socket takes them); reads the
 * disk in the 'response' event. A request with no answer fails.
 */
function post(
  port: number,
  root: string,
  chunks: Iterable<Buffer>,
  length?: number,
): Promise<Answered> {
  const whole = length === undefined ? Buffer.concat([...chunks]) : undefined;
  return new Promise((resolve, reject) => {
    const req = multipartPost(port, '/up', length ?? (whole as Buffer).length);
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${ANSWER_WITHIN} ms`));
    }, ANSWER_WITHIN);
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      const got = { status: res.statusCode ?? 0, disk: disk(root) };
      res.resume();
      res.on('end', () => {
        clearTimeout(timer);
        req.destroy(); // stop sending the rest of a refused body
        resolve(got);
      });
    });
    // The server may close while the client still writes (a lingering close ends in EPIPE/RST).
    req.on('error', (error) => {
      if (!answered) {
        clearTimeout(timer);
        reject(error);
      }
    });
    if (whole) return void req.end(whole);
    void (async () => {
      for (const chunk of chunks) {
        if (req.destroyed) return;
        if (!req.write(chunk)) await drainedOrClosed(req);
      }
      if (!req.destroyed) req.end();
    })();
  });
}

function ping(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/ping', agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

/** Serves the row's app on a fresh root for `run`, then checks the server and the descriptors. */
async function onRow(
  row: Row,
  run: (served: Served, root: string, seen: Observed) => Promise<void>,
) {
  const dir = tempRoot();
  mkdirSync(join(dir.root, 'uploads'));
  const seen: Observed = { heads: 0, ends: 0, handler: 0, errorHandler: 0, requests: [] };
  const served = await serve(buildApp(dir.root, row, seen));
  const before = openDescriptors();
  try {
    await run(served, dir.root, seen);
    expect(await until(async () => (await served.connections()) === 0)).toBe(true);
    expect(await ping(served.port)).toBe(200);
    seen.heads -= 1; // the ping's
    // Connections and files closed: no descriptor held past the answer.
    expect(await until(() => openDescriptors() <= before)).toBe(true);
  } finally {
    await served.close();
    dir.remove();
  }
}

/** The row's parts, then (`cutInside`) a file part the body ends inside. */
function bodyOf(row: Row): Buffer {
  const body = multipart(row.parts);
  if (row.cutInside === undefined) return body;
  const cut = filePart('docs', row.cutInside, 'part of it');
  const open = Buffer.from(`--${BOUNDARY}\r\n${cut.headers}\r\n\r\n${cut.body}`);
  // Drop the closing boundary: the body ends inside the cut part.
  return Buffer.concat([body.subarray(0, body.length - `--${BOUNDARY}--\r\n`.length), open]);
}

async function runRow(row: Row): Promise<void> {
  await onRow(row, async (served, root, seen) => {
    const got = await post(served.port, root, [bodyOf(row)]);
    const statuses = typeof row.status === 'number' ? [row.status] : row.status;
    expect(statuses).toContain(got.status);
    if (row.removedAfterAnswer) expect(await until(() => disk(root).length === 0)).toBe(true);
    else expect(got.disk).toEqual(row.disk ?? []);
    await sleep(50); // a late second answer would show here
    expect(seen.heads).toBe(1);
    expect(seen.handler + seen.errorHandler).toBeLessThanOrEqual(1);
  });
}

const enforced: Row[] = [
  { name: 'array: denied first', parts: [DENIED, good('a.bin')], status: 403 },
  {
    name: 'array: denied in the middle',
    parts: [good('a.bin', 256 * KB), DENIED, good('b.bin')],
    status: 403,
  },
  {
    name: 'array: denied last, behind two stored files',
    parts: [good('a.bin'), good('b.bin', 512 * KB), DENIED],
    status: 403,
  },
  {
    name: 'array: denied last, into new folders',
    parts: [good('n/a/a.bin'), good('n/b/b.bin'), DENIED],
    status: 403,
  },
  {
    name: 'array: all allowed',
    parts: [good('a.bin'), good('b.bin')],
    status: 201,
    disk: ['a.bin', 'b.bin'],
  },
  { name: 'single: denied', method: 'single', parts: [DENIED], status: 403 },
  {
    name: "single: a second file (multer's LIMIT_UNEXPECTED_FILE)",
    method: 'single',
    parts: [good('a.bin'), good('b.bin')],
    status: 400,
  },
  {
    name: 'single: a second file that is denied',
    method: 'single',
    parts: [good('a.bin'), DENIED],
    status: 400,
  },
  {
    name: 'fields: denied in the second field',
    method: 'fields',
    parts: [good('a.bin'), filePart('other', '../x.bin')],
    status: 403,
  },
  {
    name: 'fields: an undeclared field',
    method: 'fields',
    parts: [good('a.bin'), filePart('stray', 'x.bin')],
    status: 400,
  },
  { name: 'any: denied last', method: 'any', parts: [good('a.bin'), DENIED], status: 403 },
  {
    name: 'any: a field no gate declares',
    method: 'any',
    parts: [good('a.bin'), filePart('stray', 'x.bin')],
    status: 403,
  },
  { name: 'none: a file part', method: 'none', parts: [fieldPart('x', 'y'), DENIED], status: 400 },
  { name: 'none: fields only', method: 'none', parts: [fieldPart('x', 'y')], status: 201 },
  {
    name: 'none: a nameless file part',
    method: 'none',
    parts: [fieldPart('x', 'y'), filePart('docs', '')],
    status: 201,
  },
  {
    name: 'fields: a nameless part of the required field, behind a stored file',
    method: 'fields',
    parts: [filePart('other', 'o.bin', randomBytes(256 * KB)), filePart('docs', '')],
    status: 403,
  },
  {
    name: 'a nameless file part (busboy watcher) after a stored file',
    parts: [good('a.bin', 256 * KB), filePart('stray', '')],
    status: 403,
  },
];

const storages: Row[] = (['overwrite', 'memory', 'slow', 'failing', 'silent'] as const).flatMap(
  (storage) => [
    {
      name: `${storage}: denied last, behind a stored file`,
      storage,
      parts: [good('a.bin', 256 * KB), DENIED],
      status: 403,
    },
    {
      name: `${storage}: denied in the middle`,
      storage,
      parts: [good('a.bin'), DENIED, good('b.bin')],
      status: 403,
    },
    {
      name: `${storage}: a nameless part of an undeclared field (busboy watcher), behind a stored file`,
      storage,
      parts: [good('a.bin', 256 * KB), filePart('stray', '')],
      status: 403,
    },
    {
      name: `${storage}: a body cut inside a file`,
      storage,
      parts: [good('a.bin')],
      cutInside: 'cut.bin',
      // The failing engine's refusal of a.bin (500) races the end of the body (400).
      status: storage === 'failing' ? [400, 500] : 400,
    },
  ],
);

const filters: Row[] = (['rejects', 'throws', 'errors'] as const).flatMap((filter) => [
  {
    name: `user filter ${filter}: its part first, then an allowed one`,
    filter,
    parts: [good(filter === 'rejects' ? SKIPPED : BOOM), good('a.bin')],
    status: filter === 'rejects' ? 201 : 500,
    disk: filter === 'rejects' ? ['a.bin'] : [],
  },
  {
    name: `user filter ${filter}: a denied part first, then its part`,
    filter,
    parts: [DENIED, good(filter === 'rejects' ? SKIPPED : BOOM)],
    status: 403,
  },
  {
    name: `user filter ${filter}: a stored file, then its part`,
    filter,
    parts: [good('a.bin', 256 * KB), good(filter === 'rejects' ? SKIPPED : BOOM)],
    status: filter === 'rejects' ? 201 : 500,
    disk: filter === 'rejects' ? ['a.bin'] : [],
  },
]);

const limits: Row[] = [
  {
    name: 'fileSize trips before the denied part',
    limits: { fileSize: 1 * KB },
    parts: [good('a.bin', 64 * KB), DENIED],
    status: [413, 403],
  },
  {
    name: 'fileSize: the denied part itself is too large',
    limits: { fileSize: 1 * KB },
    parts: [good('a.bin', 512), deniedBig(64 * KB)],
    status: 403,
  },
  {
    name: 'fileSize trips after the deny',
    limits: { fileSize: 1 * KB },
    parts: [DENIED, good('a.bin', 64 * KB)],
    status: 403,
  },
  {
    name: 'files: the denied part is one too many',
    limits: { files: 1 },
    parts: [good('a.bin'), DENIED],
    status: 413,
  },
  {
    name: 'files: trips after the deny',
    limits: { files: 1 },
    parts: [DENIED, good('a.bin')],
    status: 403,
  },
  {
    name: 'parts: the denied part is one too many',
    limits: { parts: 1 },
    parts: [good('a.bin'), DENIED],
    status: [413, 403],
  },
  {
    name: 'parts: trips after the deny',
    limits: { parts: 1 },
    parts: [DENIED, fieldPart('x', 'y')],
    status: 403,
  },
  {
    name: 'fieldSize trips before the deny',
    limits: { fieldSize: 2 },
    parts: [good('a.bin'), fieldPart('x', 'long'), DENIED],
    status: [413, 403],
  },
  {
    name: 'fieldSize trips after the deny',
    limits: { fieldSize: 2 },
    parts: [good('a.bin'), DENIED, fieldPart('x', 'long')],
    status: 403,
  },
];

const modes: Row[] = [
  {
    name: "errors: 'next': denied last",
    mode: 'next',
    parts: [good('a.bin', 256 * KB), DENIED],
    status: 403,
  },
  {
    name: "errors: 'next': denied first",
    mode: 'next',
    parts: [DENIED, good('a.bin')],
    status: 403,
  },
  {
    name: "errors: 'next': files limit trips before the deny",
    mode: 'next',
    limits: { files: 1 },
    parts: [good('a.bin'), DENIED],
    status: [413, 403],
  },
  {
    name: "errors: 'next': a required file missing (after multer)",
    mode: 'next',
    method: 'fields',
    parts: [filePart('other', 'o.bin')],
    status: 403,
  },
  {
    name: "errors: 'next': the user's filter rejects a required file",
    mode: 'next',
    method: 'fields',
    filter: 'rejects',
    parts: [filePart('docs', SKIPPED), filePart('other', 'o.bin')],
    status: 403,
  },
  {
    name: 'report-only: denied last goes on, unstored',
    mode: 'report',
    parts: [good('a.bin'), DENIED],
    status: 201,
    disk: ['a.bin'],
  },
  {
    name: 'report-only, onDeny answers: denied last',
    mode: 'report-answers',
    parts: [good('a.bin', 256 * KB), DENIED],
    status: 451,
    removedAfterAnswer: true,
  },
  {
    name: 'report-only, onDeny answers: a required file missing (after multer)',
    mode: 'report-answers',
    method: 'fields',
    parts: [filePart('other', 'o.bin')],
    status: 451,
    removedAfterAnswer: true,
  },
  {
    name: 'report-only, onDeny answers: denied first',
    mode: 'report-answers',
    parts: [DENIED, good('a.bin')],
    status: 451,
  },
  {
    name: 'onDeny answers (enforced): denied last',
    mode: 'respond-answers',
    parts: [good('a.bin', 256 * KB), DENIED],
    status: 451,
  },
  {
    name: 'two enforcing gates: the second denies',
    second: 'enforcing',
    parts: [good('a.bin'), filePart('docs', '../second.bin')],
    status: 403,
  },
  {
    name: 'two enforcing gates: both allow, stored where the last one checked',
    second: 'enforcing',
    parts: [good('a.bin')],
    status: 201,
    disk: ['second/', 'second/a.bin'],
  },
  {
    name: 'an enforcing and a report-only gate: denied last',
    second: 'report',
    parts: [good('a.bin', 256 * KB), DENIED],
    status: 403,
  },
];

describe.each([
  ['enforced, by multer method', enforced],
  ['storage engines', storages],
  ["the user's fileFilter", filters],
  ["multer's limits", limits],
  ['deny modes and gates', modes],
])('upload matrix: %s', (_, rows) => {
  it.each(rows.map((row) => [row.name, row] as const))('%s', (_, row) => runRow(row));
});

const BIG_MB = 50;
const CHUNK = Buffer.alloc(64 * KB, 0x61);

/** Allowed files, then a denied part of BIG_MB the client streams: chunks and length. */
function bigDenied(allowed: readonly RawPart[]) {
  const head = multipart([...allowed, deniedBig(0)]);
  // Cut before the denied part's (empty) body: its bytes follow, then the closing boundary.
  const prefix = head.subarray(0, head.length - `\r\n--${BOUNDARY}--\r\n`.length);
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  const count = (BIG_MB * MB) / CHUNK.length;
  function* chunks() {
    yield prefix;
    for (let i = 0; i < count; i++) yield CHUNK;
    yield tail;
  }
  return { chunks: chunks(), length: prefix.length + BIG_MB * MB + tail.length };
}

describe(`upload matrix: a denied ${BIG_MB} MB part behind allowed files still being written`, () => {
  it.each(['disk', 'overwrite', 'memory', 'slow', 'silent'] as const)('%s', async (storage) => {
    const row: Row = { name: storage, storage, parts: [], status: 403 };
    await onRow(row, async (served, root, seen) => {
      const { chunks, length } = bigDenied([good('a.bin', 4 * MB), good('b.bin', 4 * MB)]);
      const got = await post(served.port, root, chunks, length);
      expect(got).toEqual({ status: 403, disk: [] });
      await sleep(50);
      expect([seen.heads, seen.handler]).toEqual([1, 0]);
    });
  });
});

interface AbortRow {
  readonly name: string;
  readonly storage?: StorageKind;
  readonly parts: readonly RawPart[];
  /** The client sends the body up to this text's first occurrence (plus `more` bytes), then aborts. */
  readonly at: string;
  readonly more?: number;
}

/** The client aborts mid-body: nothing reaches the handler, and nothing stays on disk. */
async function runAbort(row: AbortRow): Promise<void> {
  await onRow({ ...row, status: 0 }, async (served, root, seen) => {
    const body = multipart(row.parts);
    const cut = body.indexOf(row.at) + row.at.length + (row.more ?? 0);
    const req = multipartPost(served.port, '/up', body.length);
    req.on('error', () => {});
    req.write(body.subarray(0, cut));
    await sleep(150); // the server reads what was sent, and stores or denies
    req.destroy();
    // An empty disk before the server is done with the cut request proves
    // nothing, and what it stores later would outlive the test's root.
    expect(await until(() => seen.ends === 1)).toBe(true);
    // And multer called back: until then the request's folders stay held, for good were it never.
    const [request] = seen.requests;
    expect(await until(() => request !== undefined && uploadOf(request)?.finished === true)).toBe(
      true,
    );
    expect(disk(root)).toEqual([]);
    expect(seen.handler).toBe(0);
    expect(seen.heads).toBeLessThanOrEqual(1);
  });
}

const big = (name: string) => good(name, 2 * MB);
const aborts: AbortRow[] = (['disk', 'overwrite', 'memory', 'slow', 'silent'] as const).flatMap(
  (storage) => [
    { name: `${storage}: after the headers`, storage, parts: [big('a.bin')], at: '', more: 10 },
    {
      name: `${storage}: inside the first file`,
      storage,
      parts: [big('a.bin'), big('b.bin')],
      at: 'a.bin',
      more: MB,
    },
    {
      name: `${storage}: inside a second file, the first stored`,
      storage,
      parts: [good('n/a.bin'), big('n/b.bin')],
      at: 'n/b.bin',
      more: MB,
    },
    {
      name: `${storage}: right after a denied part's header, a file being stored`,
      storage,
      parts: [good('a.bin', 256 * KB), deniedBig(2 * MB)],
      at: '../denied.bin',
      more: 100,
    },
  ],
);

describe('upload matrix: the client aborts', () => {
  it.each(aborts.map((row) => [row.name, row] as const))('%s', (_, row) => runAbort(row));
});

describe('upload matrix: a request pipelined behind a file part denied after a stored one', () => {
  it.each(['disk', 'slow'] as const)('%s: reaches no handler, gets no answer', async (storage) => {
    const row: Row = { name: storage, storage, parts: [], status: 403 };
    await onRow(row, async (served, _root, seen) => {
      const body = multipart([good('a.bin', 256 * KB), deniedBig(512 * KB)]);
      const refused = rawRequest(
        'POST /up HTTP/1.1',
        [`content-type: ${MULTIPART}`, `content-length: ${body.length}`],
        body,
      );
      const behind = rawRequest('GET /ping HTTP/1.1');
      const result = await exchangeRaw(served.port, [Buffer.concat([refused, behind])], {
        timeoutMs: 5000,
      });
      expect(result.responses.map((r) => [r.status, r.headers.connection])).toEqual([
        [403, 'close'],
      ]);
      expect(result.closed).toBe(true);
      expect(seen.heads).toBe(1); // the ping behind it was dropped, never answered
    });
  });
});
