import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
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

// A form's file input left empty: browsers still send the part, with
// `filename=""` and no bytes. On an optional file spec that is a file not
// sent, whichever way @fastify/multipart hands parts out; on a required one,
// a missing path.

const EMPTY_INPUT: RawPart = {
  disposition: 'name="avatar"; filename=""',
  contentType: 'application/octet-stream',
  data: '',
};
const note = (data: string): RawPart => ({ disposition: 'name="note"', data });
const FORM = [note('before'), EMPTY_INPUT, note('after')];

const spec = (optional: boolean) => ({
  config: {
    pathgate: { mode: 'write', paths: [{ file: 'avatar', under: 'uploads', optional }] },
  } as const,
});

/** What a handler got: the file parts handed out, by filename, and the fields. */
async function drain(parts: AsyncIterable<MultipartFile | { type: 'field' }>) {
  const files: string[] = [];
  let fields = 0;
  for await (const part of parts) {
    if (part.type === 'field') fields++;
    else {
      files.push((part as MultipartFile).filename);
      (part as MultipartFile).file.resume();
    }
  }
  return { files, fields };
}

function routes(app: FastifyInstance, optional: boolean, prefix: string): void {
  app.post(`${prefix}/file`, spec(optional), async (request) => {
    const part = await request.file();
    part?.file.resume();
    return { files: part ? [part.filename] : [], checked: request.pathgate?.files };
  });
  app.post(`${prefix}/files`, spec(optional), async (request) => ({
    ...(await drain(request.files())),
    checked: request.pathgate?.files,
  }));
  app.post(`${prefix}/parts`, spec(optional), async (request) => ({
    ...(await drain(request.parts() as AsyncIterable<MultipartFile>)),
    checked: request.pathgate?.files,
  }));
  app.post(`${prefix}/save`, spec(optional), async (request) => {
    const { files } = await request.saveRequestFiles();
    return { files: files.map((f) => f.filename), checked: request.pathgate?.files };
  });
}

/** A fresh sandbox and app (both removed after the test), listening on 127.0.0.1. */
async function serve(): Promise<{ port: number; root: string }> {
  const root = sandbox();
  const app = newApp();
  await app.register(pathgate, { root, fs: ['rw:./uploads/**'] });
  await app.register(async (scope) => {
    await scope.register(multipart, { preservePath: true });
    routes(scope, true, '/optional');
    routes(scope, false, '/required');
  });
  await app.register(async (scope) => {
    await scope.register(multipart, { preservePath: true, attachFieldsToBody: true });
    scope.post('/attach', spec(true), async (request) => ({
      avatar: Object.hasOwn(request.body as object, 'avatar'),
      note: Object.hasOwn(request.body as object, 'note'),
      checked: request.pathgate?.files,
    }));
  });
  return { port: await listen(app), root };
}

describe('an empty file input (filename="", no bytes)', () => {
  it.each(['/file', '/files', '/parts', '/save'])(
    'optional, %s: the handler runs without a file',
    async (route) => {
      const { port, root } = await serve();
      const res = await postMultipart(port, `/optional${route}`, FORM);
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ files: [], checked: [] });
      if (route === '/parts') expect(res.json).toMatchObject({ fields: 2 });
      expect(filesIn(root)).toEqual([]);
    },
  );

  it('optional, attachFieldsToBody: the body holds the fields and no file', async () => {
    const { port } = await serve();
    const res = await postMultipart(port, '/attach', FORM);
    expect(res.json).toEqual({ avatar: false, note: true, checked: [] });
  });

  it('optional, attachFieldsToBody: two empty inputs of one field leave no (empty) list behind', async () => {
    const { port } = await serve();
    // Both parts reach multipart's body as one list before the guard drops either.
    const res = await postMultipart(port, '/attach', [EMPTY_INPUT, EMPTY_INPUT, note('after')]);
    expect(res.json).toEqual({ avatar: false, note: true, checked: [] });
  });

  it('optional, files(): a real file after the empty input is still handed out and checked', async () => {
    const { port, root } = await serve();
    const file = {
      disposition: 'name="avatar"; filename="me.png"',
      contentType: 'image/png',
      data: 'png',
    };
    const res = await postMultipart(port, '/optional/files', [EMPTY_INPUT, file]);
    expect(res.json).toMatchObject({
      files: ['me.png'],
      checked: [{ field: 'avatar', filename: 'me.png', path: `${root}/uploads/me.png` }],
    });
    const bad = await postMultipart(port, '/optional/files', [
      EMPTY_INPUT,
      { ...file, disposition: 'name="avatar"; filename="../me.png"' },
    ]);
    expect(bad.json).toEqual(denied('file avatar', 'path-not-in-allowlist'));
  });

  it('optional: an empty name with bytes is let go too, and nothing of it is stored', async () => {
    const { port, root } = await serve();
    const res = await postMultipart(port, '/optional/save', [
      { ...EMPTY_INPUT, data: 'x'.repeat(64 * 1024) },
    ]);
    expect(res.json).toMatchObject({ files: [], checked: [] });
    expect(filesIn(root)).toEqual([]);
  });

  it.each(['/file', '/files', '/parts', '/save'])('required, %s: missing-path', async (route) => {
    const { port } = await serve();
    const res = await postMultipart(port, `/required${route}`, FORM);
    expect(res.status).toBe(403);
    expect(res.json).toEqual(denied('file avatar', 'missing-path'));
  });
});
