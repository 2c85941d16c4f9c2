import multipart, { type MultipartFile } from '@fastify/multipart';
import { describe, expect, it, vi } from 'vitest';
import pathgate from '../src/index.js';
import {
  denied,
  filesIn,
  hangUp,
  listen,
  multipartBody,
  newApp,
  postMultipart,
  type RawPart,
  sandbox,
} from './helpers.js';
import { store } from './multipart-server.js';

// Multipart bodies no browser sends, each asserting the answer and what the
// handler got: one name for a text field and a file, a field sent twice, a
// file over `limits.fileSize`, a client that hangs up mid-file.

const field = (name: string, data: string): RawPart => ({ disposition: `name="${name}"`, data });
const file = (name: string, filename: string, data = 'x'): RawPart => ({
  disposition: `name="${name}"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data,
});

type Attach = boolean | 'keyValues';

/** One route at /r declaring `paths`; the handler records its body and `request.pathgate`. */
async function serve(attachFieldsToBody: Attach, paths: readonly object[]) {
  const root = sandbox();
  const app = newApp();
  const seen: unknown[] = [];
  await app.register(pathgate, { root, fs: ['rw:./uploads/**'] });
  await app.register(multipart, { attachFieldsToBody });
  const pathgateConfig = { mode: 'write', paths } as never;
  app.post('/r', { config: { pathgate: pathgateConfig } }, async (request) => {
    seen.push({ body: request.body, pathgate: request.pathgate });
    return 'ran';
  });
  return { root, seen, port: await listen(app) };
}

describe('a text field and a file part under one name, with a body spec and a file spec on it', () => {
  const send = [field('doc', 'uploads/a.txt'), file('doc', 'b.txt')];

  it('attachFieldsToBody true: the name holds a list of parts, which ["doc", "value"] does not select', async () => {
    const paths = [{ body: ['doc', 'value'] }, { file: 'doc', under: 'uploads' }];
    const s = await serve(true, paths);
    for (const parts of [send, [...send].reverse()]) {
      const res = await postMultipart(s.port, '/r', parts);
      expect(res.json).toEqual(denied('body.doc.value', 'missing-path'));
    }
    expect(s.seen).toEqual([]);
  });

  it("'keyValues': the name holds the text and the file's bytes, and the bytes are no path", async () => {
    const s = await serve('keyValues', [{ body: 'doc' }, { file: 'doc', under: 'uploads' }]);
    const res = await postMultipart(s.port, '/r', send);
    expect(res.json).toEqual(denied('body.doc', 'not-a-string'));
    expect(s.seen).toEqual([]);
  });
});

describe('a body field sent twice', () => {
  const twice = (second: string) => [field('to', 'uploads/a'), field('to', second)];

  it('attachFieldsToBody true, required: missing-path, as a list of parts has no "value"', async () => {
    const s = await serve(true, [{ body: ['to', 'value'] }]);
    const res = await postMultipart(s.port, '/r', twice('uploads/b'));
    expect(res.json).toEqual(denied('body.to.value', 'missing-path'));
    expect(s.seen).toEqual([]);
  });

  it('attachFieldsToBody true, optional: the handler runs with no checked path for it', async () => {
    const s = await serve(true, [{ body: ['to', 'value'], optional: true }]);
    const res = await postMultipart(s.port, '/r', twice('../../etc/x'));
    expect(res.text).toBe('ran');
    expect(s.seen).toMatchObject([{ pathgate: { body: {} } }]);
  });

  it("'keyValues': a list, checked element by element", async () => {
    const s = await serve('keyValues', [{ body: 'to' }]);
    const bad = await postMultipart(s.port, '/r', twice('../../etc/x'));
    expect(bad.json).toEqual(denied('body.to', 'path-not-in-allowlist'));
    const ok = await postMultipart(s.port, '/r', twice('uploads/b'));
    expect(ok.text).toBe('ran');
    const to = [`${s.root}/uploads/a`, `${s.root}/uploads/b`];
    expect(s.seen).toEqual([
      {
        body: { to: ['uploads/a', 'uploads/b'] },
        pathgate: expect.objectContaining({ body: { to } }),
      },
    ]);
  });
});

const LIMIT = 100;

/** Stores each upload with `saveRequestFiles()` (at /save, and with attachFieldsToBody at /a/save) or `files()`. */
async function serveUploads() {
  const root = sandbox();
  const spool = sandbox();
  const app = newApp();
  let handled = 0;
  // Requests that failed: a hung-up one's once the server has read what came.
  let failed = 0;
  app.addHook('onError', async () => {
    failed++;
  });
  const upload = {
    config: { pathgate: { mode: 'write', paths: [{ file: true, under: 'uploads' }] } },
  } as const;
  await app.register(pathgate, { root, fs: ['rw:./uploads/**'] });
  const routes = (attachFieldsToBody: Attach) => async (scope: typeof app) => {
    await scope.register(multipart, { attachFieldsToBody, limits: { fileSize: LIMIT } });
    scope.post('/save', upload, async (request) => {
      const { files } = await request.saveRequestFiles({ tmpdir: spool });
      handled++;
      return files.map((f) => f.pathgatePath);
    });
    scope.post('/files', upload, async (request) => {
      const stored = [];
      for await (const part of request.files()) stored.push(await store(part));
      handled++;
      return stored;
    });
  };
  await app.register(routes(false));
  await app.register(routes(true), { prefix: '/a' });
  return { root, spool, handled: () => handled, failed: () => failed, port: await listen(app) };
}

const twoFiles = (second: number) => [
  file('f', 'a.txt', 'a'.repeat(50)),
  file('f', 'b.txt', 'b'.repeat(second)),
];

describe('limits.fileSize reached in the second file', () => {
  it.each([['/save'], ['/a/save']])(
    '%s: 413, nothing spooled is left, the handler never gets the files',
    async (url) => {
      const s = await serveUploads();
      const res = await postMultipart(s.port, url, twoFiles(LIMIT + 1));
      expect(res.json).toMatchObject({ statusCode: 413, code: 'FST_REQ_FILE_TOO_LARGE' });
      expect(s.handled()).toBe(0);
      await vi.waitFor(() => expect(filesIn(s.spool)).toEqual([]));
      expect(filesIn(s.root)).toEqual([]);
    },
  );

  it('at the limit exactly: both are handed out, with their checked paths', async () => {
    const s = await serveUploads();
    const res = await postMultipart(s.port, '/save', twoFiles(LIMIT));
    expect(res.json).toEqual([`${s.root}/uploads/a.txt`, `${s.root}/uploads/b.txt`]);
    await vi.waitFor(() => expect(filesIn(s.spool)).toEqual([]));
  });
});

describe('the client hangs up in the second file', () => {
  it.each([
    ['/save', []],
    ['/a/save', []],
    ['/files', ['uploads/a.txt']],
  ])('%s: no half-written file, nothing spooled left, the server goes on', async (url, kept) => {
    const s = await serveUploads();
    // Up to the middle of the second file.
    const body = multipartBody(twoFiles(LIMIT));
    await hangUp(s.port, url, body, body.indexOf('b'.repeat(LIMIT)) + LIMIT / 2);
    // An empty spool before the server has read anything proves nothing.
    await vi.waitFor(() => {
      expect(s.failed()).toBe(1);
      expect(filesIn(s.spool)).toEqual([]);
      expect(filesIn(s.root)).toEqual(kept);
    });
    expect(s.handled()).toBe(0);
    const next = await postMultipart(s.port, url, [file('f', 'c.txt')]);
    expect(next.status).toBe(200);
    // @fastify/multipart unlinks what it spooled after the answer: the test
    // ends once it has, not while the sandbox's removal would race it.
    await vi.waitFor(() => expect(filesIn(s.spool)).toEqual([]));
  });
});

describe('onFile, then a body value denied', () => {
  it('the 403 comes once the body is parsed: the file onFile stored stays, the handler never runs', async () => {
    const root = sandbox();
    const app = newApp();
    let calls = 0;
    await app.register(pathgate, { root, fs: ['rw:./uploads/**'] });
    const onFile = async (part: MultipartFile) => void (await store(part));
    await app.register(multipart, { attachFieldsToBody: true, onFile });
    const paths = [{ body: ['dest', 'value'] }, { file: 'f', under: 'uploads' }] as const;
    app.post('/r', { config: { pathgate: { mode: 'write', paths } } }, async () => ++calls);
    const port = await listen(app);
    const res = await postMultipart(port, '/r', [field('dest', '../../etc/x'), file('f', 'a.txt')]);
    expect(res.json).toEqual(denied('body.dest.value', 'path-not-in-allowlist'));
    expect(filesIn(root)).toEqual(['uploads/a.txt']);
    expect(calls).toBe(0);
  });
});

describe('a saveRequestFiles() that reads past the guarded parts()', () => {
  it('a file it hands out unchecked is refused, fail closed', async () => {
    const app = newApp();
    // Registered before pathgate, so pathgate wraps it: as if multipart stopped reading through parts().
    app.addHook('onRequest', async (request) => {
      const own = async () => ({
        files: [{ type: 'file', fieldname: 'upload', filename: 'a.png' }],
      });
      Object.assign(request, { saveRequestFiles: own });
    });
    await app.register(pathgate, { root: sandbox(), fs: ['rw:./uploads/**'] });
    await app.register(multipart);
    let calls = 0;
    const pathgateConfig = { mode: 'write', paths: [{ file: true, under: 'uploads' }] } as const;
    app.post('/save', { config: { pathgate: pathgateConfig } }, async (request) => {
      await request.saveRequestFiles();
      calls++;
      return 'saved';
    });
    const res = await postMultipart(await listen(app), '/save', [file('upload', 'a.png')]);
    expect(res).toMatchObject({ status: 403, json: denied('file', 'unexpected-file') });
    expect(calls).toBe(0);
  });
});
