import { resolve } from 'node:path';
import multipart, { type MultipartFile } from '@fastify/multipart';
import { describe, expect, it } from 'vitest';
import pathgate, { type PathDenial } from '../src/index.js';
import { listen, newApp, postJson, postMultipart, request, sandbox } from './helpers.js';

// Report-only mode, for rolling a policy out on a live service: what would be
// denied is logged (request.log.warn, with the canonical path for operators)
// and the request goes on. onDeny still sees each would-be deny.

interface LogLine {
  level: number;
  msg: string;
  pathgate?: { route: string; label: string; reason: string; path?: string };
}

/** `onDenyThrows`: onDeny records the denial, then throws. */
async function serve(onDenyThrows = false) {
  const root = sandbox();
  const lines: LogLine[] = [];
  const denials: PathDenial[] = [];
  const app = newApp({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  });
  await app.register(pathgate, {
    root,
    fs: ['./public/**', 'rw:./uploads/*.png'],
    reportOnly: true,
    onDeny: (denial) => {
      denials.push(denial);
      if (onDenyThrows) throw new Error('metrics down');
      return { ignored: true };
    },
  });
  let calls = 0;
  app.get(
    '/files/*',
    { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } },
    async (req) => {
      calls++;
      return req.pathgate;
    },
  );
  app.post(
    '/move',
    { config: { pathgate: { mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] } } },
    async (req) => {
      calls++;
      return req.pathgate;
    },
  );
  const upload = { mode: 'write', paths: [{ file: true, under: 'uploads' }] } as const;
  await app.register(async (scope) => {
    await scope.register(multipart);
    scope.post('/files', { config: { pathgate: upload } }, async (req) => {
      calls++;
      const seen = [];
      for await (const part of req.files()) {
        await part.toBuffer();
        seen.push({ filename: part.filename, path: part.pathgatePath ?? null });
      }
      return seen;
    });
    const note = {
      mode: 'write',
      paths: [{ params: 'dir' }, { body: 'note', optional: true }],
    } as const;
    scope.post('/note/:dir', { config: { pathgate: note } }, async () => {
      calls++;
      return 'ran';
    });
    const memo = { mode: 'write', paths: [{ body: 'note' }] } as const;
    scope.post('/memo', { config: { pathgate: memo } }, async () => {
      calls++;
      return 'ran';
    });
  });
  await app.register(
    async (scope) => {
      await scope.register(multipart, { attachFieldsToBody: true });
      const into = { mode: 'write', paths: [{ params: 'dir' }, upload.paths[0]] } as const;
      scope.post('/into/:dir', { config: { pathgate: into } }, async (req) => {
        calls++;
        const part = (req.body as Record<string, MultipartFile>).upload;
        return { path: part?.pathgatePath ?? null, files: req.pathgate?.files.length };
      });
    },
    { prefix: '/a' },
  );
  const port = await listen(app);
  const reports = () => lines.filter((l) => l.msg === 'pathgate: would deny (report-only)');
  const failures = () => lines.filter((l) => l.msg === 'pathgate: onDeny failed');
  return { root, port, calls: () => calls, reports, failures, denials };
}

const file = (filename: string) => ({
  disposition: `name="upload"; filename="${filename}"`,
  contentType: 'image/png',
  data: 'x',
});

describe('report-only', () => {
  it('a would-be deny is logged with the canonical path, and the handler runs', async () => {
    const s = await serve();
    const res = await request(s.port, { path: '/files/..%2F..%2Fetc%2Fpasswd' });
    expect(res.status).toBe(200);
    expect(s.calls()).toBe(1);
    // The value that would be denied has no canonical path to hand out.
    expect(res.json).toMatchObject({ params: {} });
    expect(s.reports()).toEqual([
      expect.objectContaining({
        level: 40,
        pathgate: {
          route: 'GET /files/*',
          label: 'params.*',
          reason: 'path-not-in-allowlist',
          path: resolve(s.root, '../../etc/passwd'),
        },
      }),
    ]);
    expect(s.denials).toMatchObject([{ reason: 'path-not-in-allowlist', label: 'params.*' }]);
  });

  it('an onDeny that throws is logged, and the request still goes on', async () => {
    const s = await serve(true);
    const res = await request(s.port, { path: '/files/..%2Fx' });
    expect(res).toMatchObject({ status: 200, json: { params: {} } });
    const up = await postMultipart(s.port, '/files', [file('virus.exe'), file('ok.png')]);
    expect(up.json).toEqual([
      { filename: 'virus.exe', path: null },
      { filename: 'ok.png', path: `${s.root}/uploads/ok.png` },
    ]);
    expect(s.calls()).toBe(2);
    expect(s.reports().map((l) => l.pathgate?.label)).toEqual(['params.*', 'file *']);
    expect(s.failures()).toEqual([
      expect.objectContaining({
        level: 50,
        err: expect.objectContaining({ message: 'metrics down' }),
      }),
      expect.objectContaining({
        level: 50,
        err: expect.objectContaining({ message: 'metrics down' }),
      }),
    ]);
  });

  it('an onDeny that returns the reply, once per denied element: the reply is not awaited each time', async () => {
    // Awaiting it adds end-of-stream listeners to the response, as many as the client sends elements.
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      const app = newApp();
      await app.register(pathgate, {
        root: sandbox(),
        fs: ['./public/**'],
        reportOnly: true,
        onDeny: (denial, _req, reply) => reply.header('x-would-deny', denial.reason),
      });
      const read = { mode: 'read', paths: [{ query: 'p' }] } as const;
      app.get('/q', { config: { pathgate: read } }, async () => 'ran');
      const many = Array.from({ length: 30 }, (_, i) => `p=../x${i}`).join('&');
      const res = await request(await listen(app), { path: `/q?${many}` });
      expect([res.status, res.text, res.headers['x-would-deny']]).toEqual([
        200,
        'ran',
        'path-not-in-allowlist',
      ]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(warnings.map((w) => w.name)).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('an allowed request logs nothing', async () => {
    const s = await serve();
    const res = await request(s.port, { path: '/files/public/a' });
    expect(res.json).toMatchObject({ params: { '*': `${s.root}/public/a` } });
    expect(s.reports()).toEqual([]);
    expect(s.denials).toEqual([]);
  });

  it('every value that would be denied is reported, and every one that passed is recorded', async () => {
    const s = await serve();
    const res = await postJson(s.port, '/move', { from: '../../etc/passwd', to: 'uploads/a.png' });
    expect(res.json).toMatchObject({ body: { to: `${s.root}/uploads/a.png` } });
    const both = await postJson(s.port, '/move', { from: '../x', to: 'public/b.png' });
    expect(both.json).toMatchObject({ body: {} });
    expect(s.reports().map((l) => [l.pathgate?.label, l.pathgate?.reason])).toEqual([
      ['body.from', 'path-not-in-allowlist'],
      ['body.from', 'path-not-in-allowlist'],
      ['body.to', 'mode-not-permitted'],
    ]);
    expect(s.denials).toHaveLength(3);
  });

  it("a list's first denied element is reported, once however many follow; the list is not handed out", async () => {
    const s = await serve();
    const from = ['uploads/a.png', 'public/b.png', ...Array(1000).fill('secret/y')];
    const res = await postJson(s.port, '/move', { from, to: 'uploads/c.png' });
    expect(res.json).toMatchObject({ body: { to: `${s.root}/uploads/c.png` } });
    expect(res.json).not.toHaveProperty('body.from');
    expect(s.reports().map((l) => [l.pathgate?.reason, l.pathgate?.path])).toEqual([
      ['mode-not-permitted', `${s.root}/public/b.png`],
    ]);
    expect(s.denials.map((d) => d.label)).toEqual(['body.from']);
  });

  it('a missing value is reported as missing-path', async () => {
    const s = await serve();
    const res = await postJson(s.port, '/move', { to: 'uploads/a.png' });
    expect(res.status).toBe(200);
    expect(s.reports().map((l) => l.pathgate)).toEqual([
      { route: 'POST /move', label: 'body.from', reason: 'missing-path' },
    ]);
  });

  it('multipart: a would-be denied file reaches the handler without a pathgatePath', async () => {
    const s = await serve();
    const res = await postMultipart(s.port, '/files', [file('virus.exe'), file('ok.png')]);
    expect(res.json).toEqual([
      { filename: 'virus.exe', path: null },
      { filename: 'ok.png', path: `${s.root}/uploads/ok.png` },
    ]);
    expect(s.reports().map((l) => l.pathgate?.reason)).toEqual(['path-not-in-allowlist']);
  });

  it('multipart: the only file, would-be denied, is reported once, not as missing too', async () => {
    const s = await serve();
    const res = await postMultipart(s.port, '/files', [file('virus.exe')]);
    expect(res.json).toEqual([{ filename: 'virus.exe', path: null }]);
    expect(s.reports().map((l) => l.pathgate?.reason)).toEqual(['path-not-in-allowlist']);
    expect(s.denials.map((d) => d.reason)).toEqual(['path-not-in-allowlist']);
  });

  it('multipart: a file spec is reported once, by its first denied part, however many follow; each part still reaches the handler', async () => {
    const s = await serve();
    const denied = Array.from({ length: 300 }, (_, i) => file(`virus-${i}.exe`));
    const res = await postMultipart(s.port, '/files', [...denied, file('ok.png'), file('x.gif')]);
    expect(res.status).toBe(200);
    const unchecked = denied.map((_, i) => ({ filename: `virus-${i}.exe`, path: null }));
    expect(res.json).toEqual([
      ...unchecked,
      { filename: 'ok.png', path: `${s.root}/uploads/ok.png` },
      { filename: 'x.gif', path: null },
    ]);
    expect(s.reports().map((l) => l.pathgate)).toEqual([
      expect.objectContaining({ label: 'file *', reason: 'path-not-in-allowlist' }),
    ]);
    expect(s.denials).toHaveLength(1);
  });

  it('a body spec that streaming multipart leaves unread is reported, optional or not, beside other denies', async () => {
    const s = await serve();
    const note = { disposition: 'name="note"', data: 'uploads/a.png' };
    expect((await postMultipart(s.port, '/note/uploads%2Fa.png', [note])).text).toBe('ran');
    expect((await postMultipart(s.port, '/note/..%2Fx', [note])).text).toBe('ran');
    // Required: reported missing by the check, and not a second time as unread.
    expect((await postMultipart(s.port, '/memo', [note])).text).toBe('ran');
    expect(s.calls()).toBe(3);
    expect(s.reports().map((l) => [l.pathgate?.label, l.pathgate?.reason])).toEqual([
      ['body.note', 'missing-path'],
      ['params.dir', 'path-not-in-allowlist'],
      ['body.note', 'missing-path'],
      ['body.note', 'missing-path'],
    ]);
    expect(s.denials).toHaveLength(4);
  });

  it('a route with a file spec: a missing file and a denied param are both reported, the handler runs', async () => {
    const s = await serve();
    const res = await postJson(s.port, '/a/into/..%2Fx', {});
    expect(res.json).toEqual({ path: null, files: 0 });
    // The values first, then the files: the order of the enforced check, and of Express.
    expect(s.reports().map((l) => [l.pathgate?.label, l.pathgate?.reason])).toEqual([
      ['params.dir', 'path-not-in-allowlist'],
      ['file *', 'missing-path'],
    ]);
    expect(s.calls()).toBe(1);
  });

  it('attachFieldsToBody: a would-be denied param is reported once, the handler runs', async () => {
    const s = await serve();
    const res = await postMultipart(s.port, '/a/into/..%2Fx', [file('ok.png')]);
    expect(res.json).toEqual({ path: `${s.root}/uploads/ok.png`, files: 1 });
    expect(s.reports().map((l) => l.pathgate?.label)).toEqual(['params.dir']);
  });
});

describe('report-only, an onDeny that answers the request itself', () => {
  /** `asyncOnSend`: an app onSend hook that is async holds the answer back a tick. */
  async function serveAnswering(preHandler: boolean, asyncOnSend: boolean) {
    const root = sandbox();
    const lines: LogLine[] = [];
    let onDenyCalls = 0;
    let calls = 0;
    const app = newApp({
      logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
    });
    if (asyncOnSend) app.addHook('onSend', async (_request, _reply, payload) => payload);
    await app.register(pathgate, {
      root,
      fs: ['rw:./uploads/**'],
      reportOnly: true,
      onDeny: (_denial, _request, reply) => {
        onDenyCalls++;
        reply.code(451).send({ error: 'unavailable' });
      },
    });
    const paths = [{ body: 'from' }, { body: 'to' }];
    app.post(
      '/move',
      {
        config: { pathgate: { mode: 'write', paths } },
        // A route preHandler of its own: pathgate then checks in its own preHandler hook.
        ...(preHandler ? { preHandler: (_req, _reply, done) => done() } : {}),
      },
      async () => {
        calls++;
        return { moved: true };
      },
    );
    const port = await listen(app);
    return { port, lines, onDenyCalls: () => onDenyCalls, calls: () => calls };
  }

  it.each([
    ['checked in the guarded handler', false, false],
    ['checked in a preHandler hook', true, false],
    ['checked in the guarded handler, under an async onSend hook', false, true],
    ['checked in a preHandler hook, under an async onSend hook', true, true],
  ])(
    '%s: its answer ends the request, once: no handler, no second onDeny',
    async (_name, hook, asyncOnSend) => {
      const s = await serveAnswering(hook, asyncOnSend);
      const res = await postJson(s.port, '/move', { from: '../a', to: '../b' });
      expect(res.status).toBe(451);
      expect({ handler: s.calls(), onDeny: s.onDenyCalls() }).toEqual({ handler: 0, onDeny: 1 });
      expect(s.lines.filter((l) => /already sent/i.test(l.msg))).toEqual([]);
    },
  );
});
