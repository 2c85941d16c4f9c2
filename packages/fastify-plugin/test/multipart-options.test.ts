import multipart, {
  type FastifyMultipartAttachFieldsToBodyOptions,
  type FastifyMultipartOptions,
  type MultipartFile,
} from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate from '../src/index.js';
import {
  denied,
  filesIn,
  listen,
  newApp,
  postMultipart,
  type RawPart,
  sandbox,
} from './helpers.js';
import { store } from './multipart-server.js';

// @fastify/multipart's options the other files leave at their defaults, each
// with the part a client can shape: per-call and per-route options, a file
// cut at `limits.fileSize` that is not thrown (`throwFileSizeLimit: false`),
// and which parts count as files (`isPartAFile`). Whatever the options, the
// name pathgate checks is the `filename` busboy produced under them.

const file = (filename: string | undefined, data = 'data'): RawPart => ({
  disposition: filename === undefined ? 'name="f"' : `name="f"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data,
});

type Handler = (request: FastifyRequest) => Promise<unknown>;
type Options = FastifyMultipartOptions | FastifyMultipartAttachFieldsToBodyOptions;

/** One route at /r with a file spec under uploads; `config` is merged into its route config. */
async function serve(
  options: Options,
  handler: Handler,
  { optional = false, config = {} }: { optional?: boolean; config?: object } = {},
) {
  const root = sandbox();
  const app = newApp();
  await app.register(pathgate, { root, fs: ['rw:./uploads/**'] });
  await app.register(multipart, options);
  const pathgateConfig = { mode: 'write', paths: [{ file: 'f', under: 'uploads', optional }] };
  app.post('/r', { config: { ...config, pathgate: pathgateConfig } as never }, handler);
  const port = await listen(app);
  return { root, post: (parts: RawPart[]) => postMultipart(port, '/r', parts) };
}

/** Stores every file part `files(options)` hands out. */
const storeAll =
  (options?: object): Handler =>
  async (request) => {
    const stored = [];
    for await (const part of request.files(options)) stored.push(await store(part));
    return { stored };
  };

describe('per-call and per-route options: the name checked is the one busboy produced', () => {
  it('files({ preservePath: true }): the traversal is seen and denied; without it, cut to its base', async () => {
    const kept = await serve({}, storeAll({ preservePath: true }));
    const res = await kept.post([file('a/../../b.txt')]);
    expect(res.json).toEqual(denied('file f', 'path-not-in-allowlist'));
    expect(filesIn(kept.root)).toEqual([]);
    const cut = await serve({}, storeAll());
    expect((await cut.post([file('a/../../b.txt')])).status).toBe(200);
    expect(filesIn(cut.root)).toEqual(['uploads/b.txt']);
  });

  it('config.multipartOptions, which attachFieldsToBody passes to parts(): the same', async () => {
    const handler: Handler = async (request) => {
      const part = (request.body as { f: MultipartFile }).f;
      return { filename: part.filename, path: part.pathgatePath };
    };
    const config = { multipartOptions: { preservePath: true } };
    const s = await serve({ attachFieldsToBody: true }, handler, { config });
    const bad = await s.post([file('a/../../b.txt')]);
    expect(bad.json).toEqual(denied('file f', 'path-not-in-allowlist'));
    const ok = await s.post([file('a/../b.txt')]);
    expect(ok.json).toEqual({ filename: 'a/../b.txt', path: `${s.root}/uploads/b.txt` });
  });

  it('parts({ limits }): a file over the per-call fileSize is a 413, and nothing is stored', async () => {
    const handler: Handler = async (request) => {
      for await (const part of request.parts({ limits: { fileSize: 4 } })) {
        if (part.type === 'file') await store(part);
      }
      return 'stored';
    };
    const s = await serve({}, handler);
    const res = await s.post([file('a.txt', 'too long')]);
    expect(res.status).toBe(413);
    expect(filesIn(s.root)).toEqual([]);
  });
});

describe('formData()', () => {
  it('names each File by the raw filename: the checked path is in request.pathgate.files', async () => {
    const s = await serve({ attachFieldsToBody: true, preservePath: true }, async (request) => {
      const sent = (await request.formData()).get('f') as File;
      return { name: sent.name, paths: request.pathgate?.files.map((f) => f.path) };
    });
    const res = await s.post([file('a/../b.txt')]);
    expect(res.json).toEqual({ name: 'a/../b.txt', paths: [`${s.root}/uploads/b.txt`] });
  });
});

describe('throwFileSizeLimit: false: a file cut at limits.fileSize reaches the handler, checked', () => {
  const cut = { throwFileSizeLimit: false, limits: { fileSize: 4 } };

  it('attachFieldsToBody true: the part says file.truncated', async () => {
    const s = await serve({ ...cut, attachFieldsToBody: true }, async (request) => {
      const part = (request.body as { f: MultipartFile }).f;
      return { bytes: (await part.toBuffer()).length, truncated: part.file.truncated };
    });
    const res = await s.post([file('a.txt', 'too long')]);
    expect(res.json).toEqual({ bytes: 4, truncated: true });
  });

  it("saveRequestFiles(): each copy keeps its part's file.truncated", async () => {
    const spool = sandbox();
    const s = await serve(cut, async (request) => {
      const { files } = await request.saveRequestFiles({ tmpdir: spool });
      return files.map((f) => ({ path: f.pathgatePath, truncated: f.file.truncated }));
    });
    const res = await s.post([file('a.txt', 'too long')]);
    expect(res.json).toEqual([{ path: `${s.root}/uploads/a.txt`, truncated: true }]);
  });

  it("'keyValues': the body holds the cut bytes, and nothing says they were cut", async () => {
    const s = await serve({ ...cut, attachFieldsToBody: 'keyValues' }, async (request) => ({
      body: String((request.body as { f: Buffer }).f),
      files: request.pathgate?.files.length,
    }));
    const res = await s.post([file('a.txt', 'too long')]);
    expect(res.json).toEqual({ body: 'too ', files: 1 });
  });
});

describe('isPartAFile: which parts are files', () => {
  it('by default a part of type application/octet-stream with no filename is a nameless file', async () => {
    const required = await serve({}, storeAll());
    const res = await required.post([file(undefined)]);
    expect(res.json).toEqual(denied('file f', 'missing-path'));
    const optional = await serve({}, storeAll(), { optional: true });
    expect((await optional.post([file(undefined)])).json).toEqual({ stored: [] });
    expect(filesIn(optional.root)).toEqual([]);
  });

  it('a named part it calls a field is no file: never checked as one, so a required file is missing', async () => {
    const s = await serve(
      { attachFieldsToBody: 'keyValues', isPartAFile: () => false },
      async (request) => request.body,
    );
    const res = await s.post([file('../../x.txt', 'content')]);
    expect(res.json).toEqual(denied('file f', 'missing-path'));
  });
});

describe('charsets', () => {
  it('defParamCharset changes nothing: a raw filename is read as UTF-8', async () => {
    const options = { defParamCharset: 'latin1' } as Options;
    const s = await serve(options, storeAll());
    const raw = Buffer.from('résumé.txt', 'utf8').toString('latin1');
    expect((await s.post([file(raw)])).status).toBe(200);
    expect(filesIn(s.root)).toEqual(['uploads/résumé.txt']);
  });
});
