// The two servers the fault tests attack: the same routes on Fastify and on
// Express, each guarded by pathgate, in this process on 127.0.0.1, over a
// fresh sandbox. Every server and sandbox is closed and removed after each test.
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { rename, unlink, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import multipart, { type MultipartFile } from '@fastify/multipart';
import { type PathgateOptions as ExpressOptions, pathgate as expressGate } from '@pathgate/express';
import fastifyGate from '@pathgate/fastify';
import express from 'express';
import type { FastifyInstance } from 'fastify';
import {
  countingErrorHandler,
  serve,
  tempRoot,
} from '../packages/express-middleware/test/helpers.js';
import { afterTest, listen, newApp, sandbox } from '../packages/fastify-plugin/test/helpers.js';

export const ADAPTERS = ['fastify', 'express'] as const;
export type Adapter = (typeof ADAPTERS)[number];

/** public/ read-only, uploads/ read-write, nothing else. */
export const RULES = ['./public/**', 'rw:./uploads/**'];
/** The JSON body limit (Fastify `bodyLimit`, `express.json({ limit })`). */
export const JSON_LIMIT = 64 * 1024;
/** The multipart limits, for @fastify/multipart and for multer: 256 KiB, one file. */
export const UPLOAD_LIMITS = { fileSize: 256 * 1024, files: 1 };
/** The multipart field `/upload` declares (`{ file: 'upload', under: 'uploads' }`). */
export const FIELD = 'upload';
/** The file every sandbox is seeded with. */
export const SEEDED = 'public/a.txt';

/** Handler runs, by route. */
export interface Calls {
  read: number;
  move: number;
  upload: number;
}

export interface FaultServer {
  readonly adapter: Adapter;
  readonly port: number;
  readonly root: string;
  readonly server: http.Server;
  readonly calls: Calls;
}

export interface FaultOptions {
  /** Builds the policy's `resolve` option; it gets the sandbox root, which it must resolve to itself. */
  resolve?: (root: string) => (path: string) => unknown;
}

function seed(root: string): void {
  mkdirSync(join(root, 'public'), { recursive: true });
  mkdirSync(join(root, 'uploads'), { recursive: true });
  writeFileSync(join(root, SEEDED), 'seeded');
}

/** A client's name the file system refuses is a 400, as in the example's `clientError`. */
function nameTooLong(error: NodeJS.ErrnoException): never {
  if (error.code === 'ENAMETOOLONG') {
    throw Object.assign(new Error('name too long'), { statusCode: 400 });
  }
  throw error;
}

/**
 * The example's way to store a streamed part: a temp sibling of its
 * `pathgatePath`, renamed into place when complete and not truncated; the
 * temp file is removed whatever happens.
 */
async function saveAtomically(app: FastifyInstance, part: MultipartFile): Promise<string> {
  const target = part.pathgatePath;
  if (target === undefined) throw new Error('a file part pathgate did not check');
  const temp = join(dirname(target), `.upload-${randomUUID()}.part`);
  try {
    await pipeline(part.file, createWriteStream(temp, { flags: 'wx' }));
    if (part.file.truncated) throw new app.multipartErrors.RequestFileTooLargeError();
    await rename(temp, target).catch(nameTooLong);
    return target;
  } finally {
    await unlink(temp).catch(() => {});
  }
}

async function startFastify(options: FaultOptions): Promise<FaultServer> {
  const root = sandbox();
  seed(root);
  const app = newApp({ bodyLimit: JSON_LIMIT });
  const calls: Calls = { read: 0, move: 0, upload: 0 };
  const resolve = options.resolve?.(root) as ((path: string) => string) | undefined;
  await app.register(fastifyGate, { root, fs: RULES, resolve });
  // preservePath, as in the example: busboy would strip `../../x` to `x`, and the
  // policy would judge another name than the client sent (multer gets it from the gate).
  await app.register(multipart, {
    preservePath: true,
    limits: UPLOAD_LIMITS,
    throwFileSizeLimit: true,
  });
  app.get('/health', async () => ({ ok: true }));
  const read = { mode: 'read', paths: [{ query: 'path' }] } as const;
  app.get('/read', { config: { pathgate: read } }, async () => {
    calls.read++;
    return { ok: true };
  });
  const move = { mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] } as const;
  app.post('/move', { config: { pathgate: move } }, async (request, reply) => {
    calls.move++;
    await writeFile(request.pathgate?.body.to as string, 'moved', { flag: 'wx' });
    return reply.code(201).send({ ok: true });
  });
  const upload = { mode: 'write', paths: [{ file: FIELD, under: 'uploads' }] } as const;
  app.post('/upload', { config: { pathgate: upload } }, async (request, reply) => {
    calls.upload++;
    const stored: string[] = [];
    try {
      for await (const part of request.files()) stored.push(await saveAtomically(app, part));
    } catch (error) {
      // A later part failed: keep none of the request.
      await Promise.all(stored.map((path) => unlink(path).catch(() => {})));
      throw error;
    }
    return reply.code(201).send({ stored: stored.length });
  });
  const port = await listen(app);
  return { adapter: 'fastify', port, root, server: app.server, calls };
}

async function startExpress(options: FaultOptions): Promise<FaultServer> {
  const { root, remove } = tempRoot();
  afterTest(remove);
  seed(root);
  const calls: Calls = { read: 0, move: 0, upload: 0 };
  const resolve = options.resolve?.(root) as ((path: string) => string) | undefined;
  const gate = expressGate({ root, fs: RULES, resolve } as ExpressOptions);
  const upload = gate.multer({ limits: UPLOAD_LIMITS });
  const app = express();
  app.get('/health', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/read', gate.read({ query: 'path' }), (_req, res) => {
    calls.read++;
    res.json({ ok: true });
  });
  app.post(
    '/move',
    express.json({ limit: JSON_LIMIT }),
    gate.write({ body: 'from' }, { body: 'to' }),
    async (req, res) => {
      calls.move++;
      await writeFile(req.pathgate?.body.to as string, 'moved', { flag: 'wx' });
      res.status(201).json({ ok: true });
    },
  );
  app.post(
    '/upload',
    gate.write({ file: FIELD, under: 'uploads' }),
    upload.single(FIELD),
    (req, res) => {
      calls.upload++;
      res.status(201).json({ stored: req.file ? 1 : 0 });
    },
  );
  // A generic error handler: `err.status` when the error has one, else 500.
  app.use(countingErrorHandler().handler);
  const served = await serve(app);
  afterTest(() => served.close());
  return { adapter: 'express', port: served.port, root, server: served.server, calls };
}

/** Starts one adapter's fault server on a fresh sandbox. */
export function start(adapter: Adapter, options: FaultOptions = {}): Promise<FaultServer> {
  return adapter === 'fastify' ? startFastify(options) : startExpress(options);
}
