import { createWriteStream } from 'node:fs';
import { copyFile, rename, unlink, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import multipart, { type MultipartFields, type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import pathgate from '../src/index.js';
import { listen, newApp, sandbox } from './helpers.js';

// One server with every way @fastify/multipart hands out files, each route
// writing allowed parts where pathgate says (`part.pathgatePath`), through a
// temp sibling renamed on success, and counting its handler calls.

export const RULES = ['./public/**', 'rw:./uploads/**/*.{png,txt,bin}', './uploads/**/*.pdf'];
export const UPLOAD = { mode: 'write', paths: [{ file: true, under: 'uploads' }] } as const;
const MB = 1024 * 1024;

/**
 * An app whose uploads pathgate checks (any name under uploads/, files up to
 * `fileSize`), for handlers that answer while a file arrives: Fastify's
 * `handlerTimeout` answers 503 for one still running after 300 ms. `server`:
 * more Fastify options (`{ http2: true }`).
 */
export async function answeringUploadApp(fileSize: number, server: object = {}) {
  const root = sandbox();
  const app = newApp({ handlerTimeout: 300, ...server } as never);
  await app.register(pathgate, { root, fs: ['rw:./uploads/**'] });
  await app.register(multipart, { limits: { fileSize } });
  return { root, app, config: { pathgate: UPLOAD } };
}

/** Writes a streamed part to its pathgatePath: a temp sibling, renamed when complete. */
export async function store(part: MultipartFile): Promise<string> {
  const target = part.pathgatePath;
  if (target === undefined) throw new Error('a part without pathgatePath reached the handler');
  const temp = `${target}.partial`;
  try {
    await pipeline(part.file, createWriteStream(temp, { flags: 'wx' }));
  } catch (error) {
    // A body cut mid-file fails the stream: leave no half-written file behind.
    await unlink(temp).catch(() => {});
    throw error;
  }
  if (part.file.truncated) {
    await unlink(temp);
    throw Object.assign(new Error('file too large'), { statusCode: 413 });
  }
  await rename(temp, target);
  return target;
}

/** A handler's read of the whole upload, each way, storing where pathgate checked (`spool`: saveRequestFiles()'s tmpdir). */
export type Read = (request: FastifyRequest, spool: string) => Promise<unknown>;

export const READS: [string, Read][] = [
  ['file()', async (request) => store((await request.file()) as never)],
  [
    'files()',
    async (request) => {
      for await (const part of request.files()) await store(part);
    },
  ],
  [
    'parts()',
    async (request) => {
      for await (const part of request.parts()) if (part.type === 'file') await store(part);
    },
  ],
  ['saveRequestFiles()', (request, spool) => request.saveRequestFiles({ tmpdir: spool })],
];

/** Writes a whole file to its checked path: a temp sibling, renamed when complete. */
export async function storeBuffer(target: string, data: Buffer): Promise<string> {
  await writeFile(`${target}.partial`, data, { flag: 'wx' });
  await rename(`${target}.partial`, target);
  return target;
}

export interface MultipartServer {
  root: string;
  /** Where saveRequestFiles() spools. */
  spool: string;
  port: number;
  app: FastifyInstance;
  calls: () => number;
  url: (path: string) => string;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface ServeOptions {
  errorHandler?: Parameters<FastifyInstance['setErrorHandler']>[0];
  pathgate?: Record<string, unknown>;
}

export async function serveMultipart(options: ServeOptions = {}): Promise<MultipartServer> {
  const root = sandbox();
  const spool = sandbox();
  const app = newApp();
  let calls = 0;
  const counted =
    (handler: Handler): Handler =>
    (request, reply) => {
      calls++;
      return handler(request, reply);
    };
  const limits = { fileSize: 10 * MB };
  if (options.errorHandler) app.setErrorHandler(options.errorHandler);
  await app.register(pathgate, { root, fs: RULES, ...options.pathgate } as never);
  await app.register(async (scope) => {
    await scope.register(multipart, { limits });
    streamRoutes(scope, counted, spool);
  });
  await app.register(
    async (scope) => {
      await scope.register(multipart, { limits, attachFieldsToBody: true });
      attachRoutes(scope, counted, spool);
    },
    { prefix: '/a' },
  );
  await app.register(
    async (scope) => {
      await scope.register(multipart, { limits, attachFieldsToBody: 'keyValues' });
      scope.post(
        '/attach',
        { config: { pathgate: UPLOAD } },
        counted(async (request) => {
          const body = request.body as Record<string, Buffer>;
          const files = request.pathgate?.files ?? [];
          const stored = [];
          for (const f of files) stored.push(await storeBuffer(f.path, body[f.field] as Buffer));
          return { stored };
        }),
      );
    },
    { prefix: '/kv' },
  );
  await app.register(
    async (scope) => {
      const stored: string[] = [];
      await scope.register(multipart, {
        limits,
        attachFieldsToBody: true,
        async onFile(part) {
          stored.push(await store(part));
        },
      });
      scope.post(
        '/attach',
        { config: { pathgate: UPLOAD } },
        counted(async () => ({ stored: stored.splice(0) })),
      );
    },
    { prefix: '/of' },
  );
  const port = await listen(app);
  return {
    root,
    spool,
    port,
    app,
    calls: () => calls,
    url: (path) => `http://127.0.0.1:${port}${path}`,
  };
}

/** saveRequestFiles() spools each file; the handler moves it where pathgate checked. */
function saveHandler(spool: string): Handler {
  return async (request) => {
    const { files } = await request.saveRequestFiles({ tmpdir: spool });
    const stored = [];
    for (const f of files) {
      const target = f.pathgatePath;
      // Fail loudly, never write `undefined.partial` into the working directory.
      if (target === undefined) throw new Error('a saved file without pathgatePath');
      await copyFile(f.filepath, `${target}.partial`);
      await rename(`${target}.partial`, target);
      stored.push(target);
    }
    return { stored };
  };
}

function streamRoutes(
  scope: FastifyInstance,
  counted: (handler: Handler) => Handler,
  spool: string,
): void {
  const config = { config: { pathgate: UPLOAD } };
  scope.post(
    '/file',
    config,
    counted(async (request) => {
      const part = await request.file();
      return { stored: part ? [await store(part)] : [], filename: part?.filename };
    }),
  );
  scope.post(
    '/files',
    config,
    counted(async (request) => {
      const stored = [];
      for await (const part of request.files()) stored.push(await store(part));
      return { stored };
    }),
  );
  scope.post(
    '/parts',
    config,
    counted(async (request) => {
      const stored = [];
      const fields: Record<string, unknown> = {};
      for await (const part of request.parts()) {
        if (part.type === 'file') stored.push(await store(part));
        else fields[part.fieldname] = part.value;
      }
      return { stored, fields };
    }),
  );
  scope.post('/save', config, counted(saveHandler(spool)));
  scope.post(
    '/preserve',
    config,
    counted(async (request) => {
      const part = await request.file({ preservePath: true });
      return { stored: part ? [await store(part)] : [] };
    }),
  );
  const avatar = (optional: boolean) => ({
    config: {
      pathgate: { mode: 'write', paths: [{ file: 'avatar', under: 'uploads', optional }] },
    } as const,
  });
  const filesHandler = counted(async (request) => {
    const stored = [];
    for await (const part of request.files()) stored.push(await store(part));
    return { stored, files: request.pathgate?.files };
  });
  scope.post('/avatar', avatar(false), filesHandler);
  scope.post('/avatar-optional', avatar(true), filesHandler);
  scope.post('/save-optional', avatar(true), counted(saveHandler(spool)));
  scope.post(
    '/compare',
    { config: { pathgate: { mode: 'read', paths: [{ file: true, under: 'public' }] } } },
    counted(async (request) => {
      const part = await request.file();
      await part?.toBuffer();
      return { files: request.pathgate?.files };
    }),
  );
  scope.post(
    '/parts-catch',
    config,
    counted(async (request) => {
      // Reads what it can, catches the deny, and answers what multipart's shared fields hold.
      let fields: MultipartFields = {};
      try {
        for await (const part of request.parts()) {
          fields = part.fields;
          if (part.type === 'file') await part.toBuffer();
        }
      } catch (error) {
        return { reason: (error as { reason?: string }).reason, fields: summary(fields) };
      }
      return { fields: summary(fields) };
    }),
  );
  scope.post(
    '/catch',
    config,
    counted(async (request) => {
      const errors = [];
      for (let i = 0; i < 2; i++) {
        try {
          await request.file();
        } catch (error) {
          errors.push((error as { reason?: string }).reason);
        }
      }
      return { errors };
    }),
  );
}

/** Each field's values, files by filename: `{ note: ['hi'], upload: ['a.png'] }`. */
function summary(fields: MultipartFields): Record<string, unknown[]> {
  const values = (entry: MultipartFields[string]) =>
    [entry].flat().map((p) => (p?.type === 'file' ? p.filename : p?.value));
  return Object.fromEntries(Object.entries(fields).map(([name, entry]) => [name, values(entry)]));
}

function attachRoutes(
  scope: FastifyInstance,
  counted: (handler: Handler) => Handler,
  spool: string,
): void {
  const handler = counted(async (request) => {
    const stored = [];
    for (const value of Object.values(request.body as Record<string, unknown>)) {
      for (const part of [value].flat() as MultipartFile[]) {
        if (part.type !== 'file') continue;
        stored.push(await storeBuffer(part.pathgatePath as string, await part.toBuffer()));
      }
    }
    return { stored };
  });
  scope.post('/attach', { config: { pathgate: UPLOAD } }, handler);
  scope.post('/save', { config: { pathgate: UPLOAD } }, counted(saveHandler(spool)));
  const into = { mode: 'write', paths: [{ params: 'folder' }, UPLOAD.paths[0]] } as const;
  scope.post('/into/:folder', { config: { pathgate: into } }, handler);
  const avatar = { mode: 'write', paths: [{ file: 'avatar', under: 'uploads' }] } as const;
  scope.post('/avatar', { config: { pathgate: avatar } }, handler);
}
