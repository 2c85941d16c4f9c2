import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import multipart, { type Multipart, type MultipartFile } from '@fastify/multipart';
import type { PathSpec } from '@pathgate/core';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { searchParams } from '../../../test/container-parsers.js';
import { closing } from '../../../test/raw-http.js';
import pathgate, { type PathgateDenied } from '../src/index.js';
import {
  BOUNDARY,
  denied,
  filesIn,
  listen,
  newApp,
  postJson,
  postMultipart,
  postMultipartKeepAlive,
  type RawPart,
  request,
  sandbox,
} from './helpers.js';
import { RULES, serveMultipart, store, UPLOAD } from './multipart-server.js';

// Multipart filenames with a real client (fetch + FormData) and raw bodies,
// through every way @fastify/multipart hands out files. An allowed file
// arrives intact where pathgate says; a denied one is refused before its
// bytes are read, and the handler never sees it.

const STREAM = ['/file', '/files', '/parts', '/save'] as const;
const ATTACH = ['/a/attach', '/a/save', '/kv/attach', '/of/attach'] as const;
const ROUTES = [...STREAM, ...ATTACH] as const;
const isStream = (route: string) => (STREAM as readonly string[]).includes(route);

type Entry = readonly [field: string, data: string | Buffer, filename?: string];

async function send(url: string, entries: readonly Entry[]) {
  const form = new FormData();
  for (const [field, data, filename] of entries) {
    if (filename === undefined) form.append(field, String(data));
    else form.append(field, new Blob([data]), filename);
  }
  const res = await fetch(url, { method: 'POST', body: form });
  return { status: res.status, connection: res.headers.get('connection'), json: await res.json() };
}

/**
 * A chunked upload whose body stops mid-file: the part header and a few
 * bytes, then, once the server has handed the part out, the end of the
 * request without the closing boundary.
 */
function sendCut(port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        agent: false,
        headers: {
          'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
          'transfer-encoding': 'chunked',
        },
      },
      (res) => readAnswer(res).then(resolve, reject),
    );
    req.on('error', reject);
    req.write(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="upload"; filename="cut.png"\r\n` +
        'Content-Type: application/octet-stream\r\n\r\nabc',
    );
    setTimeout(() => req.end(), 100);
  });
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');
const file = (filename: string, data: string | Buffer = 'x'): RawPart => ({
  disposition: `name="upload"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data,
});

/**
 * An app whose one route takes the `upload` files `spec` allows, reading
 * each, and, once every part has arrived and been parsed behind the first
 * (tiny files hold busboy up at no point), counts each read and write of
 * the field's list in multipart's shared fields as a step. Answers the
 * deny's reason, if any, and how many parts the list holds then.
 */
async function countingSteps(spec: PathSpec) {
  const app = newApp();
  await app.register(pathgate, { root: sandbox(), fs: RULES });
  await app.register(multipart, { limits: { parts: Number.POSITIVE_INFINITY } });
  let steps = 0;
  const counted: ProxyHandler<Multipart[]> = {
    get(list, key) {
      steps++;
      return Reflect.get(list, key);
    },
    set(list, key, value) {
      steps++;
      return Reflect.set(list, key, value);
    },
  };
  const config = { pathgate: { mode: 'write', paths: [spec] } } as const;
  app.post('/count', { config }, async (request) => {
    let list: Multipart[] = [];
    try {
      for await (const part of request.parts()) {
        await (part as MultipartFile).toBuffer();
        if (list.length > 0) continue;
        if (!request.raw.readableEnded) await once(request.raw, 'end');
        list = part.fields.upload as Multipart[];
        part.fields.upload = new Proxy(list, counted);
      }
    } catch (error) {
      return { reason: (error as PathgateDenied).reason, left: list.length };
    }
    return { left: list.length };
  });
  const port = await listen(app);
  return {
    steps: () => steps,
    post: (parts: readonly RawPart[]) => postMultipart(port, '/count', parts),
  };
}

describe('an allowed file arrives intact at its pathgatePath', () => {
  it.each(ROUTES)('%s', async (route) => {
    const s = await serveMultipart();
    const data = randomBytes(1024 * 1024 + 7);
    const res = await send(s.url(route), [
      ['note', 'hello'],
      ['upload', data, 'photo.png'],
    ]);
    const target = `${s.root}/uploads/photo.png`;
    expect(res).toMatchObject({ status: 200, json: { stored: [target] } });
    expect(sha(readFileSync(target))).toBe(sha(data));
    expect(filesIn(s.root)).toEqual(['uploads/photo.png']);
    expect(s.calls()).toBe(1);
  });

  it('request.pathgate.files lists each allowed part', async () => {
    const s = await serveMultipart();
    const res = await send(s.url('/avatar'), [['avatar', 'a', 'me.png']]);
    expect(res.json).toEqual({
      stored: [`${s.root}/uploads/me.png`],
      files: [{ field: 'avatar', filename: 'me.png', path: `${s.root}/uploads/me.png` }],
    });
  });

  it('read mode: a file checked under public', async () => {
    const s = await serveMultipart();
    const res = await send(s.url('/compare'), [['upload', 'a', 'a.png']]);
    expect(res.json).toEqual({
      files: [{ field: 'upload', filename: 'a.png', path: `${s.root}/public/a.png` }],
    });
  });
});

describe('a denied filename is refused before the handler sees it', () => {
  const REASONS: readonly (readonly [string, RawPart, string])[] = [
    ['not in the allowlist', file('virus.exe'), 'path-not-in-allowlist'],
    ['a read-only rule', file('report.pdf'), 'mode-not-permitted'],
    ['a NUL', file('a\u0000b.png'), 'nul-byte'],
    ['an empty name', file(''), 'missing-path'],
    ['".." (busboy makes it empty)', file('..'), 'missing-path'],
    ['a dotfile', file('.htaccess'), 'path-not-in-allowlist'],
    [
      'no filename at all (octet-stream part)',
      { disposition: 'name="upload"', contentType: 'application/octet-stream', data: 'x' },
      'missing-path',
    ],
  ];
  const CASES = ROUTES.flatMap((route) => REASONS.map((row) => [route, ...row] as const));

  it.each(CASES)('%s: %s → %s', async (route, _name, part, reason) => {
    const s = await serveMultipart();
    const res = await postMultipart(s.port, route, [part]);
    expect(res.json).toEqual(denied('file *', reason));
    expect(res.status).toBe(403);
    expect(res.text).not.toContain(s.root);
    // Streaming handlers awaited the part and got the 403 instead; attach handlers never ran.
    expect(s.calls()).toBe(isStream(route) ? 1 : 0);
    expect(filesIn(s.root)).toEqual([]);
    expect(filesIn(s.spool)).toEqual([]);
  });

  it('read mode: a dotfile under public is still denied', async () => {
    const s = await serveMultipart();
    const res = await postMultipart(s.port, '/compare', [file('.env')]);
    expect(res.json).toEqual(denied('file *', 'path-not-in-allowlist'));
  });
});

describe('an allowed and a denied file in one request', () => {
  it.each(ROUTES)('%s: allowed first, nothing of the denied part is written', async (route) => {
    const s = await serveMultipart();
    const res = await send(s.url(route), [
      ['upload', 'ok', 'ok.png'],
      ['upload', 'bad', 'virus.exe'],
    ]);
    const written = filesIn(s.root);
    expect(written.filter((f) => !f.startsWith('uploads/ok.png'))).toEqual([]);
    expect(filesIn(s.spool)).toEqual([]);
    if (route === '/file') {
      // file() returns the first file only; the second is never parsed.
      expect(res).toMatchObject({ status: 200, json: { stored: [`${s.root}/uploads/ok.png`] } });
      return;
    }
    expect(res).toMatchObject({ status: 403, json: denied('file *', 'path-not-in-allowlist') });
    // What the handler (or onFile) consumed before the deny is its own; the rest wrote nothing.
    const consumedFirst = ['/files', '/parts', '/of/attach'].includes(route);
    expect(written).toEqual(consumedFirst ? ['uploads/ok.png'] : []);
    expect(s.calls()).toBe(isStream(route) ? 1 : 0);
  });

  it.each(ROUTES)('%s: denied first, nothing is written', async (route) => {
    const s = await serveMultipart();
    const res = await send(s.url(route), [
      ['upload', 'bad', 'virus.exe'],
      ['upload', 'ok', 'ok.png'],
    ]);
    expect(res).toMatchObject({ status: 403, json: denied('file *', 'path-not-in-allowlist') });
    expect(filesIn(s.root)).toEqual([]);
    expect(filesIn(s.spool)).toEqual([]);
  });
});

describe("a denied part leaves multipart's shared fields", () => {
  it.each([
    [
      'after a field',
      [
        ['note', 'hi'],
        ['upload', 'bad', 'virus.exe'],
      ],
      { note: ['hi'] },
    ],
    [
      'after an allowed file in the same field',
      [
        ['upload', 'ok', 'ok.png'],
        ['upload', 'bad', 'virus.exe'],
      ],
      { upload: ['ok.png'] },
    ],
  ] as const)(
    '%s: a handler that catches the deny no longer finds it',
    async (_name, entries, fields) => {
      const s = await serveMultipart();
      const res = await send(s.url('/parts-catch'), entries);
      expect(res.json).toEqual({ reason: 'path-not-in-allowlist', fields });
      expect(filesIn(s.root)).toEqual([]);
    },
  );

  it('so do the files parsed behind it, which no one checked, in its field and in others', async () => {
    const s = await serveMultipart();
    // One write: busboy parses every part before the guard sees the second.
    const more = { ...file('more.png'), disposition: 'name="more"; filename="more.png"' };
    const parts = [file('ok.png'), file('virus.exe'), file('later.png'), more];
    const res = await postMultipart(s.port, '/parts-catch', parts);
    expect(res.json).toEqual({ reason: 'path-not-in-allowlist', fields: { upload: ['ok.png'] } });
    expect(filesIn(s.root)).toEqual([]);
  });

  it('taken out in one pass over the field, however many parts an app lets in', async () => {
    const app = await countingSteps(UPLOAD.paths[0]);
    const behind = Array.from({ length: 2000 }, (_, i) => file(`f${i}.png`));
    const res = await app.post([file('ok.png'), file('virus.exe'), ...behind]);
    expect(res.json).toEqual({ reason: 'path-not-in-allowlist', left: 1 });
    // Removed one at a time, each took its list's length in steps: millions.
    expect(app.steps()).toBeLessThan(10 * behind.length);
  });

  it("a nameless part let go is found from its list's end, not past every part kept before it", async () => {
    const app = await countingSteps({ ...UPLOAD.paths[0], optional: true });
    const kept = Array.from({ length: 2000 }, (_, i) => file(`f${i}.png`));
    const res = await app.post([...kept, file('')]);
    expect(res.json).toEqual({ left: kept.length });
    expect(app.steps()).toBeLessThan(100);
  });
});

describe('which fields, and required files', () => {
  it('a file in an undeclared field → unexpected-file', async () => {
    const s = await serveMultipart();
    const res = await send(s.url('/avatar'), [['other', 'x', 'a.png']]);
    expect(res).toMatchObject({ status: 403, json: denied('file', 'unexpected-file') });
    expect(filesIn(s.root)).toEqual([]);
  });

  it.each(['/avatar', '/a/avatar'])(
    '%s: a required file that never came → missing-path',
    async (route) => {
      const s = await serveMultipart();
      const res = await send(s.url(route), [['note', 'only a field']]);
      expect(res).toMatchObject({ status: 403, json: denied('file avatar', 'missing-path') });
    },
  );

  it.each(['/file', '/files', '/a/attach'])(
    '%s: file: true needs at least one file',
    async (route) => {
      const s = await serveMultipart();
      const res = await send(s.url(route), [['note', 'only a field']]);
      expect(res).toMatchObject({ status: 403, json: denied('file *', 'missing-path') });
    },
  );

  it('file() hands out one file: a second required file spec is missing, and nothing is stored', async () => {
    const root = sandbox();
    const app = newApp();
    let calls = 0;
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart, { preservePath: true });
    const paths = [
      { file: 'avatar', under: 'uploads' },
      { file: 'doc', under: 'uploads' },
    ] as const;
    app.post('/two', { config: { pathgate: { mode: 'write', paths } } }, async (req) => {
      const part = await req.file();
      calls++;
      return { stored: part ? [await store(part)] : [] };
    });
    const port = await listen(app);
    const avatar: RawPart = { ...file('a.png'), disposition: 'name="avatar"; filename="a.png"' };
    const res = await postMultipart(port, '/two', [avatar]);
    expect(res.json).toEqual(denied('file doc', 'missing-path'));
    expect(calls).toBe(0);
    expect(filesIn(root)).toEqual([]);
  });

  it('an optional file may be absent, with files() or saveRequestFiles()', async () => {
    const s = await serveMultipart();
    const res = await send(s.url('/avatar-optional'), [['note', 'x']]);
    expect(res).toMatchObject({ status: 200, json: { stored: [], files: [] } });
    const saved = await send(s.url('/save-optional'), [['note', 'x']]);
    expect(saved).toMatchObject({ status: 200, json: { stored: [] } });
  });

  it.each(['/a/attach', '/files'])(
    '%s: a request that is not multipart has no file: a required one is missing',
    async (route) => {
      const s = await serveMultipart();
      const res = await request(s.port, {
        method: 'POST',
        path: route,
        headers: { 'content-type': 'application/json' },
        body: `{"upload":{"type":"file","pathgatePath":"${s.root}/uploads/x.png"}}`,
      });
      expect(res.json).toEqual(denied('file *', 'missing-path'));
      expect(s.calls()).toBe(0);
    },
  );

  it('an optional file on a request that is not multipart: the handler runs, with no files', async () => {
    const s = await serveMultipart();
    const res = await request(s.port, {
      method: 'POST',
      path: '/avatar-optional',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(406); // the handler's request.files() refuses a non-multipart body
    expect(s.calls()).toBe(1);
  });
});

describe("file specs on a multipart body that @fastify/multipart did not parse (the app's own parser)", () => {
  it('deny, optional ones too: pathgate cannot see its file parts', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    // What a multer-style parser leaves: the parts, read in the app's own way.
    app.addContentTypeParser(/^multipart\//, async () => ({ avatar: { filename: '../../x.png' } }));
    // A type that starts with multipart's letters, and is not multipart/.
    app.addContentTypeParser('multipartial/x', async () => ({}));
    let calls = 0;
    const paths = [{ file: true, under: 'uploads', optional: true }] as const;
    app.post('/opt', { config: { pathgate: { mode: 'write', paths } } }, async () => {
      calls++;
      return 'ran';
    });
    const port = await listen(app);
    const avatar = { disposition: 'name="avatar"; filename="../../x.png"', data: 'x' };
    const res = await postMultipart(port, '/opt', [avatar]);
    expect(res).toMatchObject({ status: 403, json: denied('file *', 'missing-path') });
    const mixed = await request(port, {
      method: 'POST',
      path: '/opt',
      headers: { 'content-type': 'Multipart/Mixed; boundary=x' },
      body: '--x--',
    });
    expect(mixed.json).toEqual(denied('file *', 'missing-path'));
    const spaced = await app.inject({
      method: 'POST',
      url: '/opt',
      headers: { 'content-type': ' multipart/mixed; boundary=x' },
      payload: '--x--',
    });
    expect(spaced.json()).toEqual(denied('file *', 'missing-path'));
    expect(calls).toBe(0);
    // Not multipart: no file, and the optional one is simply absent.
    expect((await postJson(port, '/opt', {})).text).toBe('ran');
    // Nor is a type that only mentions multipart/ in a parameter, or starts with its letters.
    for (const type of ['application/json; profile="multipart/x"', 'multipartial/x']) {
      const sent = { method: 'POST', path: '/opt', headers: { 'content-type': type }, body: '{}' };
      expect([type, (await request(port, sent)).text]).toEqual([type, 'ran']);
    }
  });
});

describe('a querystring parser that hands over a container, on an upload route', () => {
  // attachFieldsToBody with onFile stores each file while the body is read.
  async function uploadApp() {
    const root = sandbox();
    const app = newApp({ routerOptions: { querystringParser: searchParams as never } });
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart, {
      attachFieldsToBody: true,
      async onFile(part) {
        await store(part);
      },
    });
    const paths = [
      { query: 'p', under: 'uploads' },
      { file: true, under: 'uploads' },
    ] as const;
    const config = { pathgate: { mode: 'write', paths } } as const;
    app.post('/up', { config }, async (request) => ({ query: request.pathgate?.query }));
    return { root, port: await listen(app) };
  }
  const avatar = { disposition: 'name="avatar"; filename="a.png"', data: 'x' };

  it('a denied value refuses the upload before the body is read: no file stored', async () => {
    const { root, port } = await uploadApp();
    const res = await postMultipart(port, '/up?p=../x.txt', [avatar]);
    expect(res).toMatchObject({ status: 403, json: denied('query.p', 'path-not-in-allowlist') });
    expect(filesIn(root)).toEqual([]);
  });

  it('an allowed value is checked as the handler reads it', async () => {
    const { root, port } = await uploadApp();
    const res = await postMultipart(port, '/up?p=note.txt', [avatar]);
    expect(res).toMatchObject({ status: 200, json: { query: { p: `${root}/uploads/note.txt` } } });
    expect(filesIn(root)).toEqual(['uploads/a.png']);
  });
});

describe('body specs on a multipart body that nothing parsed', () => {
  it('deny, optional ones too: without attachFieldsToBody pathgate cannot see the fields', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart);
    let calls = 0;
    const to = {
      mode: 'write',
      paths: [{ body: 'to', under: 'uploads', optional: true }],
    } as const;
    app.post('/opt', { config: { pathgate: to } }, async (request) => {
      calls++;
      return { body: request.pathgate?.body };
    });
    const port = await listen(app);
    const field = { disposition: 'name="to"', data: '../../etc/cron.d/x' };
    const res = await postMultipart(port, '/opt', [field]);
    expect(res).toMatchObject({ status: 403, json: denied('body.to', 'missing-path') });
    expect(calls).toBe(0);
    // Not multipart: nothing is unread, and the optional value is simply absent.
    const json = await request(port, {
      method: 'POST',
      path: '/opt',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json).toMatchObject({ status: 200, json: { body: {} } });
  });

  it('report-only reports such a spec once, required or optional', async () => {
    const root = sandbox();
    const lines: { msg: string; pathgate?: { label: string; reason: string } }[] = [];
    const app = newApp({
      logger: { level: 'warn', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
    });
    await app.register(pathgate, { root, fs: RULES, reportOnly: true });
    await app.register(multipart);
    const paths = [{ body: 'a' }, { body: 'b', optional: true }];
    app.post('/r', { config: { pathgate: { mode: 'write', paths } } }, async () => 'ran');
    const port = await listen(app);
    const res = await postMultipart(port, '/r', [{ disposition: 'name="a"', data: 'x' }]);
    expect(res.status).toBe(200);
    const reports = lines.filter((l) => l.msg === 'pathgate: would deny (report-only)');
    expect(reports.map((l) => [l.pathgate?.label, l.pathgate?.reason])).toEqual([
      ['body.a', 'missing-path'],
    ]);
  });
});

describe('attachFieldsToBody: params are checked before the body is read', () => {
  it('a denied param refuses the upload; the handler never runs', async () => {
    const s = await serveMultipart();
    const res = await send(s.url('/a/into/..%2F..%2Fetc'), [['upload', 'x', 'ok.png']]);
    expect(res).toMatchObject({
      status: 403,
      json: denied('params.folder', 'path-not-in-allowlist'),
    });
    expect(s.calls()).toBe(0);
    expect(filesIn(s.root)).toEqual([]);
  });

  it('an allowed param and file pass both checks', async () => {
    const s = await serveMultipart();
    const res = await send(s.url('/a/into/uploads%2Fnote.txt'), [['upload', 'x', 'ok.png']]);
    expect(res).toMatchObject({ status: 200, json: { stored: [`${s.root}/uploads/ok.png`] } });
  });
});

describe('errors', () => {
  it('a custom error handler gets statusCode, code, reason and label; its body is kept', async () => {
    const seen: unknown[] = [];
    const s = await serveMultipart({
      errorHandler: (error, _request, reply) => {
        const { statusCode, code, reason, label, message } = error as PathgateDenied;
        seen.push({ statusCode, code, reason, label, message });
        reply.code(statusCode ?? 500).send({ custom: reason });
      },
    });
    const res = await postMultipart(s.port, '/a/attach', [file('virus.exe')]);
    expect(res).toMatchObject({ status: 403, json: { custom: 'path-not-in-allowlist' } });
    expect(seen).toEqual([
      {
        statusCode: 403,
        code: 'PATHGATE_DENIED',
        reason: 'path-not-in-allowlist',
        label: 'file *',
        message: 'file *: path denied (path-not-in-allowlist)',
      },
    ]);
  });

  it('a custom error handler that sends the error gets the full 403 body', async () => {
    const s = await serveMultipart({ errorHandler: (error, _request, reply) => reply.send(error) });
    const res = await postMultipart(s.port, '/files', [file('virus.exe')]);
    expect(res).toMatchObject({ status: 403, json: denied('file *', 'path-not-in-allowlist') });
  });

  // inject hands the whole body over at once: busboy has failed the part's
  // stream before the guard sees the part (as when an app hook awaits first).
  it.each(ROUTES)(
    '%s: a body cut mid-file, already parsed when checked, is a 400',
    async (route) => {
      const s = await serveMultipart();
      const boundary = 'cutBoundary42';
      const res = await s.app.inject({
        method: 'POST',
        url: route,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        payload: `--${boundary}\r\nContent-Disposition: form-data; name="upload"; filename="cut.png"\r\n\r\nabc`,
      });
      expect(res.statusCode).toBe(400);
      expect(filesIn(s.root)).toEqual([]);
    },
  );

  it.each(ROUTES)('%s: a multipart body without a boundary is a 400', async (route) => {
    const s = await serveMultipart();
    const res = await request(s.port, {
      method: 'POST',
      path: route,
      headers: { 'content-type': 'multipart/form-data' },
      body: 'x',
    });
    expect(res.status).toBe(400);
    expect(s.calls()).toBe(isStream(route) ? 1 : 0);
  });

  it.each(ROUTES)(
    '%s: a body cut mid-file, after the part was handed out, is a 400',
    async (route) => {
      const s = await serveMultipart();
      const res = await sendCut(s.port, route);
      expect(res.status).toBe(400);
      expect(filesIn(s.root)).toEqual([]);
      expect(filesIn(s.spool)).toEqual([]);
    },
  );

  it("the server's own failure to store an allowed part stays a 500", async () => {
    const s = await serveMultipart();
    // Allowed, but the handler writes into a directory that does not exist:
    // pipeline() fails the part's stream with ENOENT while the part still arrives.
    const big = Buffer.alloc(4 * 1024 * 1024);
    const res = await postMultipart(s.port, '/preserve', [file('nodir/x.png', big)]);
    expect(res.status).toBe(500);
    expect(s.calls()).toBe(1);
    expect(filesIn(s.root)).toEqual([]);
  });

  it("an app's own error on an allowed part's stream stays a 500, not a malformed body's 400", async () => {
    const app = newApp();
    await app.register(pathgate, { root: sandbox(), fs: RULES });
    await app.register(multipart);
    app.post('/file', { config: { pathgate: UPLOAD } }, async (request) => {
      const part = await request.file();
      part?.file.destroy(new Error('the app gave up on the part'));
      await finished(part?.file as Readable);
      return 'not reached';
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/file', [file('a.png')]);
    expect(res).toMatchObject({ status: 500, json: { message: 'the app gave up on the part' } });
  });

  const shape = (error: PathgateDenied) => ({
    statusCode: error.statusCode,
    code: error.code,
    error: 'Forbidden',
    message: error.message,
  });
  const OWN: readonly (readonly [string, (error: PathgateDenied) => string | Buffer | object])[] = [
    ['plain text', () => 'upload refused'],
    ['a Buffer', () => Buffer.from('<p>upload refused</p>')],
    ["Fastify's shape plus a request id", (e) => ({ ...shape(e), requestId: 'r-1' })],
    ['its own message', (e) => ({ ...shape(e), message: 'Upload refused' })],
    ['its own error', (e) => ({ ...shape(e), error: 'Access Denied' })],
    ['its own code', (e) => ({ ...shape(e), code: 'UPLOAD_REFUSED' })],
  ];

  it.each(OWN)('a custom error handler that sends %s: its 403 body is kept', async (_name, own) => {
    let sent = '';
    const s = await serveMultipart({
      errorHandler: (error, _request, reply) => {
        const body = own(error as PathgateDenied);
        sent =
          typeof body === 'string' || Buffer.isBuffer(body) ? String(body) : JSON.stringify(body);
        reply.code(403).send(body);
      },
    });
    const res = await postMultipart(s.port, '/files', [file('virus.exe')]);
    expect(res.status).toBe(403);
    expect(res.text).toBe(sent);
  });

  it('an onDeny that throws: the part is still refused, everywhere, and stays refused', async () => {
    const onDeny = () => {
      throw new Error('metrics down at /srv/files');
    };
    const s = await serveMultipart({ pathgate: { onDeny } });
    for (const route of ROUTES) {
      const res = await postMultipart(s.port, route, [file('virus.exe')]);
      expect([route, res.status, res.json]).toEqual([
        route,
        403,
        denied('file *', 'path-not-in-allowlist'),
      ]);
    }
    const caught = await postMultipart(s.port, '/catch', [file('virus.exe')]);
    expect(caught.json).toEqual({ errors: ['path-not-in-allowlist', 'path-not-in-allowlist'] });
    const fields = await send(s.url('/parts-catch'), [
      ['note', 'hi'],
      ['upload', 'bad', 'virus.exe'],
    ]);
    expect(fields.json).toEqual({ reason: 'path-not-in-allowlist', fields: { note: ['hi'] } });
    expect(filesIn(s.root)).toEqual([]);
    expect(filesIn(s.spool)).toEqual([]);
  });

  it('a refused request stays refused, and a reply before the body is read closes', async () => {
    const s = await serveMultipart();
    const got = await postMultipartKeepAlive(s.port, '/catch', [
      file('virus.exe', Buffer.alloc(4 * 1024 * 1024)),
    ]);
    expect(closing(got)).toEqual({
      answers: [[200, 'close', { errors: ['path-not-in-allowlist', 'path-not-in-allowlist'] }]],
      closed: true,
      error: undefined,
    });
  });
});

describe('a body holding file parts', () => {
  async function serveWithHook(preValidation: (request: FastifyRequest) => Promise<void>) {
    const root = sandbox();
    const app = newApp();
    let calls = 0;
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart);
    app.post('/up', { config: { pathgate: UPLOAD }, preValidation }, async (req) => {
      calls++;
      const part = (req.body as Record<string, MultipartFile>).upload;
      return { path: part?.pathgatePath };
    });
    return { root, port: await listen(app), calls: () => calls };
  }

  it('a part the guard checked, moved to the body by a hook, passes', async () => {
    const s = await serveWithHook(async (request) => {
      const upload = await request.file();
      await upload?.toBuffer();
      // Next to values a hook may well leave empty.
      request.body = { upload, caption: undefined, alt: null, tags: ['a', 'b'] };
    });
    const res = await postMultipart(s.port, '/up', [file('ok.png')]);
    expect(res.json).toEqual({ path: `${s.root}/uploads/ok.png` });
  });

  it('a file part the guard never saw fails closed (unexpected-file), among other values too', async () => {
    const s = await serveWithHook(async (request) => {
      const upload = { type: 'file', filename: 'ok.png', file: Readable.from('x') };
      request.body = { note: 'hello', upload };
    });
    const res = await postMultipart(s.port, '/up', [file('ok.png')]);
    expect(res.json).toEqual(denied('file', 'unexpected-file'));
    expect(s.calls()).toBe(0);
  });
});

describe('registration order', () => {
  it('multipart registered before pathgate, attachFieldsToBody at the root', async () => {
    const root = sandbox();
    const app = newApp();
    let calls = 0;
    await app.register(multipart, { attachFieldsToBody: true });
    await app.register(pathgate, { root, fs: RULES });
    app.post('/up', { config: { pathgate: UPLOAD } }, async (req) => {
      calls++;
      const part = (req.body as Record<string, MultipartFile>).upload;
      return { path: part?.pathgatePath };
    });
    const port = await listen(app);
    const bad = await postMultipart(port, '/up', [file('virus.exe')]);
    expect(bad.json).toEqual(denied('file *', 'path-not-in-allowlist'));
    expect(calls).toBe(0);
    const ok = await postMultipart(port, '/up', [file('ok.png')]);
    expect(ok.json).toEqual({ path: `${root}/uploads/ok.png` });
  });
});
