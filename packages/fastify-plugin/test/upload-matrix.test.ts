import { randomBytes } from 'node:crypto';
import { copyFile, rename } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import multipart, { type FastifyMultipartOptions, type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../../test/answer.js';
import { beforeDeadline } from '../../../test/deadline.js';
import { exchangeRaw, rawRequest } from '../../../test/raw-http.js';
import pathgate from '../src/index.js';
import {
  BOUNDARY,
  denied,
  filesIn,
  listen,
  multipartBody,
  newApp,
  type RawPart,
  sandbox,
} from './helpers.js';
import { RULES, store, storeBuffer } from './multipart-server.js';

// The upload matrix: each row is one multipart request to one route (how
// the handler consumes the upload × @fastify/multipart's limits × the
// route's file specs × the order of the parts × deny mode × where pathgate
// is registered), over real HTTP. Each row checks the status and body, how
// often the handler ran, what is below uploads/ and in the spool when the
// answer arrives, that the answer arrives at all, and that nothing more is
// written once the handler, or multipart's attachFieldsToBody hook, is done.

type Consume =
  | 'file'
  | 'files'
  | 'parts'
  | 'save'
  | 'attach'
  | 'keyValues'
  | 'onFile'
  | 'attach-save';
type Specs = 'any' | 'avatar' | 'avatar?' | 'two' | 'read';
/** `answer`: report-only, with an onDeny that answers the request itself. */
type Mode = 'enforce' | 'report' | 'onDeny' | 'answer';
const PLACEMENTS = ['root', 'encapsulated', 'late', 'late-plugin'] as const;

interface Row {
  readonly name: string;
  readonly consume: Consume;
  readonly specs?: Specs;
  readonly limits?: FastifyMultipartOptions['limits'];
  readonly throwFileSizeLimit?: boolean;
  readonly mode?: Mode;
  /**
   * Where pathgate is registered: at the root before the route (default),
   * inside a plugin with multipart and the route, or at the root after the
   * route was declared, at the root or in a plugin (guarded by the app-wide hooks).
   */
  readonly placement?: (typeof PLACEMENTS)[number];
  /** attachFieldsToBody: true with a body schema requiring `avatar`, via `sharedSchemaId`. */
  readonly schema?: boolean;
  readonly parts: readonly RawPart[];
  /** The answer's status; a list when either refusal is right (which comes first depends on how the body is chunked). */
  readonly status: number | readonly number[];
  /** The answer's JSON (a deny: `denied(label, reason)`), or the keys it must match. */
  readonly body?: object;
  /** onDeny calls. Default: 1 on a 403, else 0. */
  readonly denies?: number;
  /** Handler calls. Default: 1 when the status is 2xx or the handler consumes the upload itself, else 0. */
  readonly calls?: number;
  /** Below uploads/ when the answer arrives. Default: nothing. */
  readonly disk?: readonly string[];
  /** File parts handed to the handler or onFile, or returned by saveRequestFiles(). Default: not checked. */
  readonly handed?: number;
}

const KB = 1024;
const file = (field: string, filename: string, data: string | Buffer = randomBytes(KB)) => ({
  disposition: `name="${field}"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data,
});
const field = (name: string, value: string): RawPart => ({
  disposition: `name="${name}"`,
  data: value,
});
const good = (name: string, size = KB) => file('upload', name, randomBytes(size));
const DENIED = file('upload', '../x.bin', 'no');
const READONLY = file('upload', 'r.pdf', 'no');
const ANY_DENIED = denied('file *', 'path-not-in-allowlist');
const ONDENY_BODY = { refused: 'by onDeny' };
const ANSWER_BODY = { answered: 'by onDeny' };

const SPECS = {
  any: { mode: 'write', paths: [{ file: true, under: 'uploads' }] },
  avatar: { mode: 'write', paths: [{ file: 'avatar', under: 'uploads' }] },
  'avatar?': { mode: 'write', paths: [{ file: 'avatar', under: 'uploads', optional: true }] },
  two: {
    mode: 'write',
    paths: [
      { file: 'avatar', under: 'uploads' },
      { file: 'docs', under: 'uploads', optional: true },
    ],
  },
  read: { mode: 'read', paths: [{ file: true, under: 'public' }] },
} as const;

interface Seen {
  calls: number;
  pings: number;
  /** onDeny calls: one per refused request, one per would-be deny in report-only mode. */
  denies: number;
  /** The handler's work, and each multipart iteration's: settled when nothing more is written. */
  work: Promise<unknown>[];
  /** See `Row.handed`. */
  handed: number;
}

/** Stores what the handler was handed, each way: where pathgate checked, or nothing. */
async function consume(
  request: FastifyRequest,
  row: Row,
  spool: string,
  seen: Seen,
): Promise<object> {
  const stored: string[] = [];
  const keep = async (part: MultipartFile) => {
    seen.handed++;
    // Report-only: a would-be denied part carries no pathgatePath; read and drop it.
    if (part.pathgatePath === undefined) await part.toBuffer();
    else stored.push(await store(part));
  };
  if (row.consume === 'file') {
    const part = await request.file();
    if (part) await keep(part);
  } else if (row.consume === 'files') {
    for await (const part of request.files()) await keep(part);
  } else if (row.consume === 'parts') {
    for await (const part of request.parts()) if (part.type === 'file') await keep(part);
  } else if (row.consume === 'save' || row.consume === 'attach-save') {
    const { files } = await request.saveRequestFiles({ tmpdir: spool });
    seen.handed += files.length;
    for (const f of files) {
      if (f.pathgatePath === undefined) continue;
      await copyFile(f.filepath, `${f.pathgatePath}.partial`);
      await rename(`${f.pathgatePath}.partial`, f.pathgatePath);
      stored.push(f.pathgatePath);
    }
  } else if (row.consume === 'attach') {
    const values = Object.values(request.body as Record<string, unknown>).flat() as MultipartFile[];
    for (const part of values) {
      if (part.type === 'file' && part.pathgatePath !== undefined) {
        stored.push(await storeBuffer(part.pathgatePath, await part.toBuffer()));
      }
    }
  } else if (row.consume === 'keyValues') {
    const body = request.body as Record<string, Buffer | Buffer[]>;
    // Several files in one field: a list of Buffers, in the order pathgate checked them.
    const buffers = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, [v].flat()]));
    for (const f of request.pathgate?.files ?? []) {
      stored.push(await storeBuffer(f.path, buffers[f.field]?.shift() as Buffer));
    }
  }
  return { stored: stored.length, files: request.pathgate?.files.length };
}

function multipartOptions(row: Row, onFile: (part: MultipartFile) => Promise<void>) {
  const attach = ['attach', 'onFile', 'attach-save'].includes(row.consume) || row.schema;
  return {
    preservePath: true,
    ...(row.limits ? { limits: row.limits } : {}),
    ...(row.throwFileSizeLimit === undefined ? {} : { throwFileSizeLimit: row.throwFileSizeLimit }),
    ...(attach ? { attachFieldsToBody: true as const } : {}),
    ...(row.consume === 'keyValues' ? { attachFieldsToBody: 'keyValues' as const } : {}),
    ...(row.consume === 'onFile' ? { onFile } : {}),
    ...(row.schema ? { sharedSchemaId: '#upload' } : {}),
  };
}

/**
 * After pathgate's own onRequest hook (a route's first): each iteration of
 * `parts()`, which saveRequestFiles() and the attachFieldsToBody hook read
 * through, joins `seen.work` until it ends.
 */
function trackParts(seen: Seen): onRequestHookHandler {
  return (request, _reply, done) => {
    const parts = request.parts;
    request.parts = async function* tracked(options) {
      let ended = () => {};
      seen.work.push(new Promise<void>((resolve) => (ended = resolve)));
      try {
        yield* parts.call(request, options);
      } finally {
        ended();
      }
    };
    done();
  };
}

async function build(row: Row, root: string, spool: string, seen: Seen): Promise<number> {
  const app = newApp();
  const mode = row.mode ?? 'enforce';
  const options = {
    root,
    fs: RULES,
    // Past the deadline: a lingering close ends when the client's FIN is read, never on the timer.
    lingerMs: 60_000,
    ...(mode === 'report' || mode === 'answer' ? { reportOnly: true } : {}),
    onDeny: (_denial: unknown, _request: FastifyRequest, reply: FastifyReply) => {
      seen.denies++;
      if (mode === 'answer') reply.code(451).send(ANSWER_BODY);
      return mode === 'onDeny' ? ONDENY_BODY : undefined;
    },
  };
  const placement = row.placement ?? 'root';
  const routes = async (scope: FastifyInstance) => {
    if (!placement.startsWith('late')) await scope.register(pathgate, options);
    await scope.register(
      multipart,
      multipartOptions(row, async (part) => {
        seen.handed++;
        if (part.pathgatePath === undefined) await part.toBuffer();
        else await store(part);
      }),
    );
    const schema = row.schema
      ? {
          body: {
            type: 'object',
            required: ['avatar'],
            properties: { avatar: { $ref: '#upload' } },
          },
        }
      : {};
    scope.post(
      '/up',
      { schema, config: { pathgate: SPECS[row.specs ?? 'any'] }, onRequest: trackParts(seen) },
      (request) => {
        seen.calls++;
        const work = consume(request, row, spool, seen);
        seen.work.push(work.catch(() => {}));
        return work;
      },
    );
  };
  app.get('/ping', async () => {
    seen.pings++;
    return 'pong';
  });
  if (placement === 'encapsulated' || placement === 'late-plugin') {
    await app.register(routes);
  } else {
    await routes(app);
  }
  if (placement.startsWith('late')) await app.register(pathgate, options);
  return listen(app);
}

const DEADLINE = 5000;
const SETTLE_DEADLINE = 2000;

interface Answered {
  status: number;
  json: unknown;
  disk: string[];
  spool: string[];
}

/** Posts the body; the disk is read when the answer's head arrives. No answer within the deadline fails. */
function post(port: number, body: Buffer, root: string, spool: string): Promise<Answered> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/up',
      agent: false,
      headers: {
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        'content-length': body.length,
      },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${DEADLINE} ms`));
    }, DEADLINE);
    req.on('response', (res) => {
      const disk = filesIn(join(root, 'uploads'));
      const spooled = filesIn(spool);
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        clearTimeout(timer);
        const json = parseJson(Buffer.concat(chunks).toString('utf8'));
        resolve({ status: res.statusCode ?? 0, json, disk, spool: spooled });
      });
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

async function runRow(row: Row): Promise<void> {
  const root = sandbox();
  const spool = sandbox();
  const seen: Seen = { calls: 0, pings: 0, denies: 0, work: [], handed: 0 };
  const port = await build(row, root, spool, seen);
  const got = await post(port, multipartBody(row.parts), root, spool);
  await settled(seen.work);
  const statuses = [row.status].flat();
  const ok = statuses.every((status) => status < 300);
  expect({ status: got.status, calls: seen.calls, denies: seen.denies, disk: got.disk }).toEqual({
    denies: row.denies ?? (got.status === 403 ? 1 : 0),
    status: statuses.includes(got.status) ? got.status : statuses,
    calls: row.calls ?? (ok || STREAMING.includes(row.consume) ? 1 : 0),
    disk: row.disk ?? [],
  });
  if (row.body) expect(got.json).toMatchObject(row.body);
  if (row.handed !== undefined) expect(seen.handed).toBe(row.handed);
  // Nothing more once the handler and multipart are done: the answer did not stop them early.
  expect(filesIn(join(root, 'uploads'))).toEqual(row.disk ?? []);
  // saveRequestFiles: a refused upload leaves nothing in the spool: removed before
  // the answer, or, where onDeny answered a report-only deny itself, just after it.
  if (!ok) expect(filesIn(spool)).toEqual([]);
  if (!ok && row.mode !== 'answer') expect(got.spool).toEqual([]);
}

/** Waits for the work the request started; work still running after the deadline fails the row. */
async function settled(work: Promise<unknown>[]): Promise<void> {
  const message = `work still running ${SETTLE_DEADLINE} ms after the answer`;
  await beforeDeadline(Promise.all(work), SETTLE_DEADLINE, message);
}

const LARGE = (code: string) => ({ statusCode: 413, code });

const ALL: Consume[] = [
  'file',
  'files',
  'parts',
  'save',
  'attach',
  'keyValues',
  'onFile',
  'attach-save',
];
/** The handler consumes the upload itself: it runs before any file part is checked. */
const STREAMING: Consume[] = ['file', 'files', 'parts', 'save'];
/** Handed out one part at a time: a file stored before a later deny stays. */
const oneByOne = (c: Consume) => ['files', 'parts', 'onFile'].includes(c);

/** Each way of consuming, with pathgate registered each way. */
const orders: Row[] = PLACEMENTS.flatMap((placement) =>
  ALL.map((consume) => ({ consume, placement })),
).flatMap(({ consume, placement }): Row[] => {
  const at = placement === 'root' ? consume : `${consume}, ${placement}`;
  return ordered(consume).map((row) => ({ ...row, name: `${at}: ${row.name}`, placement }));
});

function ordered(consume: Consume): Row[] {
  return [
    {
      name: 'all allowed, a field first',
      consume,
      parts: [field('note', 'hi'), good('a.bin'), ...(consume === 'file' ? [] : [good('b.bin')])],
      status: 200,
      disk: consume === 'file' ? ['a.bin'] : ['a.bin', 'b.bin'],
    },
    {
      name: 'denied first',
      consume,
      parts: [DENIED, good('a.bin')],
      status: 403,
      body: ANY_DENIED,
    },
    {
      name: 'denied after a field',
      consume,
      parts: [field('note', 'hi'), DENIED],
      status: 403,
      body: ANY_DENIED,
    },
    {
      name: 'denied in the middle',
      consume,
      parts: [good('a.bin'), DENIED, good('b.bin')],
      status: consume === 'file' ? 200 : 403,
      ...(consume === 'file' ? {} : { body: ANY_DENIED }),
      disk: consume === 'file' || oneByOne(consume) ? ['a.bin'] : [],
    },
    {
      name: 'denied last, a field after it',
      consume,
      parts: [good('a.bin', 64 * KB), good('b.bin'), READONLY, field('note', 'hi')],
      status: consume === 'file' ? 200 : 403,
      ...(consume === 'file' ? {} : { body: denied('file *', 'mode-not-permitted') }),
      disk: consume === 'file' ? ['a.bin'] : oneByOne(consume) ? ['a.bin', 'b.bin'] : [],
    },
  ];
}

const TOO_LARGE = LARGE('FST_REQ_FILE_TOO_LARGE');
/** What a too-large file gets: multipart's 413 where it buffers, the handler's own where it streams. */
const tooLarge = (c: Consume) =>
  ['files', 'parts', 'file', 'onFile'].includes(c) ? { statusCode: 413 } : TOO_LARGE;

const limits: Row[] = ALL.flatMap((consume): Row[] => [
  {
    name: `${consume}: files limit, the denied part is one too many`,
    consume,
    limits: { files: 1 },
    parts: [good('a.bin'), DENIED],
    status: consume === 'file' ? 200 : 413,
    ...(consume === 'file' ? {} : { body: LARGE('FST_FILES_LIMIT') }),
    disk: consume === 'file' || oneByOne(consume) ? ['a.bin'] : [],
  },
  {
    name: `${consume}: files limit trips after the deny`,
    consume,
    limits: { files: 1 },
    parts: [DENIED, good('a.bin')],
    status: 403,
    body: ANY_DENIED,
  },
  {
    name: `${consume}: fileSize trips before the denied part`,
    consume,
    limits: { fileSize: KB },
    parts: [good('a.bin', 64 * KB), DENIED],
    // saveRequestFiles spools the truncated file, then meets the deny.
    status: consume === 'save' ? 403 : 413,
    body: consume === 'save' ? ANY_DENIED : tooLarge(consume),
  },
  {
    name: `${consume}: fileSize, the denied part itself too large`,
    consume,
    limits: { fileSize: KB },
    parts: [good('a.bin', 100), file('upload', '../x.bin', randomBytes(256 * KB))],
    status: consume === 'file' ? 200 : 403,
    ...(consume === 'file' ? {} : { body: ANY_DENIED }),
    disk: consume === 'file' || oneByOne(consume) ? ['a.bin'] : [],
  },
  {
    name: `${consume}: fileSize trips after the deny`,
    consume,
    limits: { fileSize: KB },
    parts: [DENIED, good('a.bin', 64 * KB)],
    status: 403,
    body: ANY_DENIED,
  },
  {
    name: `${consume}: parts limit, the denied part is one too many`,
    consume,
    limits: { parts: 1 },
    parts: [good('a.bin'), DENIED],
    status: consume === 'file' ? 200 : 413,
    ...(consume === 'file' ? {} : { body: LARGE('FST_PARTS_LIMIT') }),
    disk: consume === 'file' || oneByOne(consume) ? ['a.bin'] : [],
  },
  {
    name: `${consume}: parts limit trips after the deny`,
    consume,
    limits: { parts: 1 },
    parts: [DENIED, field('note', 'hi')],
    status: 403,
    body: ANY_DENIED,
  },
  {
    name: `${consume}: fields limit trips before the deny`,
    consume,
    limits: { fields: 1 },
    parts: [field('a', 'x'), field('b', 'y'), DENIED],
    // busboy goes on emitting files past the fields limit.
    status: [403, 413],
  },
  {
    name: `${consume}: fieldSize truncates a field, the deny still refuses`,
    consume,
    limits: { fieldSize: 2 },
    parts: [good('a.bin'), field('note', 'long'), DENIED],
    status: consume === 'file' ? 200 : 403,
    ...(consume === 'file' ? {} : { body: ANY_DENIED }),
    disk: consume === 'file' || oneByOne(consume) ? ['a.bin'] : [],
  },
]);

const noThrow: Row[] = ALL.flatMap((consume): Row[] => [
  {
    name: `${consume}: throwFileSizeLimit false, a too-large file, then a denied one`,
    consume,
    limits: { fileSize: KB },
    throwFileSizeLimit: false,
    parts: [good('a.bin', 64 * KB), DENIED],
    // The streaming handlers find the file truncated (their own 413); the rest meet the deny.
    status: ['file', 'files', 'parts', 'onFile'].includes(consume) ? 413 : 403,
  },
  {
    name: `${consume}: throwFileSizeLimit false, the denied part too large`,
    consume,
    limits: { fileSize: KB },
    throwFileSizeLimit: false,
    parts: [file('upload', '../x.bin', randomBytes(64 * KB)), good('a.bin', 100)],
    status: 403,
    body: ANY_DENIED,
  },
]);

const avatar = (name: string) => file('avatar', name);
const docs = (name: string) => file('docs', name);
const NOT_FILE: Consume[] = ALL.filter((c) => c !== 'file');

const specs: Row[] = NOT_FILE.flatMap((consume): Row[] => [
  {
    name: `${consume}: required avatar, sent after a field`,
    consume,
    specs: 'avatar',
    parts: [field('note', 'hi'), avatar('me.png')],
    status: 200,
    disk: ['me.png'],
  },
  {
    name: `${consume}: required avatar, only fields sent`,
    consume,
    specs: 'avatar',
    parts: [field('avatar', 'me.png')],
    status: 403,
    body: denied('file avatar', 'missing-path'),
  },
  {
    name: `${consume}: required avatar, a file in an undeclared field`,
    consume,
    specs: 'avatar',
    parts: [avatar('me.png'), good('a.bin')],
    status: 403,
    body: denied('file', 'unexpected-file'),
    disk: oneByOne(consume) ? ['me.png'] : [],
  },
  {
    name: `${consume}: optional avatar, an empty file input`,
    consume,
    specs: 'avatar?',
    parts: [field('note', 'hi'), avatar('')],
    status: 200,
  },
  {
    name: `${consume}: two fields, both sent`,
    consume,
    specs: 'two',
    parts: [docs('d.txt'), avatar('me.png')],
    status: 200,
    disk: ['d.txt', 'me.png'],
  },
  {
    name: `${consume}: two fields, the required one missing`,
    consume,
    specs: 'two',
    parts: [docs('d.txt'), field('avatar', 'x')],
    status: 403,
    body: denied('file avatar', 'missing-path'),
    disk: oneByOne(consume) ? ['d.txt'] : [],
  },
  {
    name: `${consume}: two fields, the optional one denied`,
    consume,
    specs: 'two',
    parts: [avatar('me.png'), docs('../d.txt')],
    status: 403,
    body: denied('file docs', 'path-not-in-allowlist'),
    disk: oneByOne(consume) ? ['me.png'] : [],
  },
  {
    name: `${consume}: two fields, the required one missing, report-only, onDeny answers itself`,
    consume,
    specs: 'two',
    mode: 'answer',
    parts: [docs('d.txt'), field('avatar', 'x')],
    status: 451,
    body: ANSWER_BODY,
    denies: 1,
    disk: oneByOne(consume) ? ['d.txt'] : [],
    handed: oneByOne(consume) ? 1 : 0,
  },
  {
    name: `${consume}: read mode, a file under public`,
    consume,
    specs: 'read',
    parts: [good('r.pdf')],
    status: 200,
  },
  {
    name: `${consume}: read mode, a dotfile`,
    consume,
    specs: 'read',
    parts: [good('.env')],
    status: 403,
    body: ANY_DENIED,
  },
]);

const modes: Row[] = ALL.flatMap((consume): Row[] => [
  {
    name: `${consume}: report-only, allowed, denied, allowed`,
    consume,
    mode: 'report',
    parts: [good('a.bin'), DENIED, good('b.bin')],
    status: 200,
    denies: consume === 'file' ? 0 : 1,
    disk: consume === 'file' ? ['a.bin'] : ['a.bin', 'b.bin'],
  },
  {
    name: `${consume}: report-only, a required file missing`,
    consume,
    mode: 'report',
    specs: 'avatar',
    parts: [field('note', 'hi')],
    status: 200,
    denies: 1,
  },
  {
    name: `${consume}: report-only, onDeny answers itself: no part after the deny is handed out`,
    consume,
    mode: 'answer',
    parts: [good('a.bin'), DENIED, good('b.bin')],
    // file() hands out the first part only: the deny is never met.
    status: consume === 'file' ? 200 : 451,
    ...(consume === 'file' ? {} : { body: ANSWER_BODY }),
    denies: consume === 'file' ? 0 : 1,
    disk: consume === 'file' || oneByOne(consume) ? ['a.bin'] : [],
    // saveRequestFiles() returns none: it throws, having removed what it spooled.
    handed: consume === 'file' || oneByOne(consume) ? 1 : 0,
  },
  {
    name: `${consume}: report-only, onDeny answers itself, denied first`,
    consume,
    mode: 'answer',
    parts: [DENIED, good('a.bin')],
    status: 451,
    body: ANSWER_BODY,
    denies: 1,
    handed: 0,
  },
  {
    name: `${consume}: onDeny's body, denied first`,
    consume,
    mode: 'onDeny',
    parts: [DENIED, good('a.bin')],
    status: 403,
    body: ONDENY_BODY,
  },
  {
    name: `${consume}: onDeny's body, denied after a stored file`,
    consume,
    mode: 'onDeny',
    parts: [good('a.bin'), DENIED],
    status: consume === 'file' ? 200 : 403,
    ...(consume === 'file' ? {} : { body: ONDENY_BODY }),
    disk: consume === 'file' || oneByOne(consume) ? ['a.bin'] : [],
  },
]);

const schemas: Row[] = [
  {
    name: 'a required avatar, allowed',
    consume: 'attach',
    schema: true,
    specs: 'avatar',
    parts: [avatar('me.png')],
    status: 200,
    disk: ['me.png'],
  },
  {
    name: 'a required avatar, denied: the deny comes before validation',
    consume: 'attach',
    schema: true,
    specs: 'avatar',
    parts: [avatar('../me.png')],
    status: 403,
    body: denied('file avatar', 'path-not-in-allowlist'),
  },
  {
    name: 'a field posing as the avatar passes the schema, not pathgate',
    consume: 'attach',
    schema: true,
    specs: 'avatar',
    parts: [field('avatar', 'me.png')],
    status: 403,
    body: denied('file avatar', 'missing-path'),
  },
  {
    name: 'an optional avatar left empty: dropped, so the schema refuses',
    consume: 'attach',
    schema: true,
    specs: 'avatar?',
    parts: [avatar('')],
    status: 400,
    body: { code: 'FST_ERR_VALIDATION' },
  },
  {
    name: 'report-only, a denied avatar passes both, unstored',
    consume: 'attach',
    schema: true,
    specs: 'avatar',
    mode: 'report',
    parts: [avatar('../me.png')],
    status: 200,
    denies: 1,
  },
];

describe.each([
  ['parts order, by way of consuming and placement', orders],
  ["multipart's limits", limits],
  ['throwFileSizeLimit: false', noThrow],
  ["the route's file specs", specs],
  ['report-only and onDeny', modes],
  ['a body schema (sharedSchemaId)', schemas],
])('upload matrix: %s', (_, rows) => {
  it.each(rows.map((row) => [row.name, row] as const))('%s', (_, row) => runRow(row));
});

describe('upload matrix: a request pipelined behind an upload answered while it arrives', () => {
  it.each(ALL)(
    '%s: one answer, the rest read and dropped up to the FIN, no handler runs for the request behind',
    async (consume) => {
      const root = sandbox();
      const seen: Seen = { calls: 0, pings: 0, denies: 0, work: [], handed: 0 };
      const row: Row = { name: consume, consume, parts: [], status: 403 };
      const port = await build(row, root, sandbox(), seen);
      const body = multipartBody([
        good('a.bin', 256 * KB),
        file('upload', '../x.bin', randomBytes(512 * KB)),
      ]);
      const refused = rawRequest(
        'POST /up HTTP/1.1',
        [
          `content-type: multipart/form-data; boundary=${BOUNDARY}`,
          `content-length: ${body.length}`,
        ],
        body,
      );
      const behind = rawRequest('GET /ping HTTP/1.1');
      const result = await exchangeRaw(port, [Buffer.concat([refused, behind])], {
        timeoutMs: DEADLINE,
      });
      // file() hands out the first part only: its handler answers, the rest
      // unread, and still piped into multipart's parser.
      const status = consume === 'file' ? 200 : 403;
      expect(result.responses.map((r) => [r.status, r.headers.connection])).toEqual([
        [status, 'close'],
      ]);
      expect([result.closed, seen.pings]).toEqual([true, 0]);
    },
  );
});
