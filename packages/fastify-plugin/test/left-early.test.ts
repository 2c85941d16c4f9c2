import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
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
import { RULES, store } from './multipart-server.js';

// A handler that leaves a files() or parts() loop early (break, return, a
// throw) never lets the iteration reach its end, where the required file
// specs are checked: the loop's exit checks them against the parts handed
// out so far, as the Express adapter answers a body that lacks one. An
// iterator advanced by hand and dropped gets the same check as the answer leaves.

const part = (field: string, filename: string): RawPart => ({
  disposition: `name="${field}"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data: `${field} bytes`,
});
const AVATAR = part('avatar', 'a.png');
const DOC = part('doc', 'd.txt');
const NOTE: RawPart = { disposition: 'name="note"', data: 'hello' };

type Iterate = (request: FastifyRequest) => AsyncIterable<MultipartFile | { type: 'field' }>;
const ITERATIONS: readonly (readonly [string, Iterate])[] = [
  ['files()', (request) => request.files()],
  ['parts()', (request) => request.parts()],
];

/**
 * What the handler does with the loop: how many files it stores, and how it
 * leaves. `drop`: no loop, `next()` by hand, then the iterator is dropped.
 * `answer`: it sends its answer, waits for it to leave, then runs the loop to its end.
 */
type Leave = 'break' | 'return' | 'throw' | 'finish' | 'drop' | 'answer';

/** The handler's own error, thrown inside the loop. */
const teapot = () => Object.assign(new Error('the handler gave up'), { statusCode: 418 });

interface ServeOptions {
  doc?: 'required' | 'optional';
  reportOnly?: boolean;
  /** onDeny answers the request itself, with a 451. */
  answers?: boolean;
}

async function serve(
  iterate: Iterate,
  { doc = 'required', reportOnly = false, answers = false }: ServeOptions = {},
): Promise<{
  root: string;
  port: number;
  after: () => number;
  denies: string[];
  reports: () => { label?: string; reason?: string }[];
  /** What Fastify logged at warn or above, pathgate's reports aside. */
  troubles: () => string[];
}> {
  const root = sandbox();
  const lines: { level: number; msg: string; pathgate?: { label: string; reason: string } }[] = [];
  const app = newApp({
    logger: { level: 'warn', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  });
  const denies: string[] = [];
  const onDeny = (denial: { label: string }, _request: unknown, reply: FastifyReply) => {
    denies.push(denial.label);
    if (answers) return reply.code(451).send({ answered: 'by onDeny' });
  };
  await app.register(pathgate, { root, fs: RULES, reportOnly, onDeny });
  await app.register(multipart);
  const paths = [
    { file: 'avatar', under: 'uploads' },
    { file: 'doc', under: 'uploads', optional: doc === 'optional' },
  ] as const;
  let after = 0;
  app.post<{ Params: { leave: Leave; keep: string } }>(
    '/:leave/:keep',
    { config: { pathgate: { mode: 'write', paths } } },
    async (request, reply) => {
      const { leave } = request.params;
      const keep = Number(request.params.keep);
      const stored: string[] = [];
      if (leave === 'drop') {
        const parts = iterate(request)[Symbol.asyncIterator]();
        while (stored.length < keep) {
          const next = (await parts.next()).value as MultipartFile;
          // Report-only: a would-be denied part comes without a pathgatePath, unstored.
          if (next.pathgatePath !== undefined) stored.push(await store(next));
        }
        after++;
        return { stored };
      }
      for await (const p of iterate(request)) {
        if (p.type !== 'file') continue;
        stored.push(await store(p as MultipartFile));
        if (stored.length < keep || leave === 'finish') continue;
        if (leave === 'answer') {
          if (!reply.sent) await reply.send({ stored });
          continue;
        }
        if (leave === 'return') return { stored, left: 'return' };
        if (leave === 'throw') throw teapot();
        break;
      }
      after++;
      return leave === 'answer' ? reply : { stored };
    },
  );
  const port = await listen(app);
  const reports = () =>
    lines
      .filter((l) => l.msg === 'pathgate: would deny (report-only)')
      .map((l) => ({ label: l.pathgate?.label, reason: l.pathgate?.reason }));
  const troubles = () =>
    lines.filter((l) => !l.msg.startsWith('pathgate: would deny')).map((l) => l.msg);
  return { root, port, after: () => after, denies, reports, troubles };
}

describe.each(ITERATIONS)('%s left early', (_name, iterate) => {
  it.each(['break', 'return'] as const)(
    '%s after the first of two required files: the 403 the full iteration gives',
    async (leave) => {
      const s = await serve(iterate);
      const full = await postMultipart(s.port, '/finish/1', [AVATAR, NOTE]);
      expect(full).toMatchObject({ status: 403, json: denied('file doc', 'missing-path') });
      const res = await postMultipart(s.port, `/${leave}/1`, [AVATAR, DOC]);
      expect(res.status).toBe(403);
      expect(res.text).toBe(full.text);
      expect(s.after()).toBe(0);
      expect(s.denies).toEqual(['file doc', 'file doc']);
      // The handler's own write before its break is its own; pathgate left nothing behind.
      expect(filesIn(s.root)).toEqual(['uploads/a.png']);
    },
  );

  it('break once every required file was handed out: the handler answers', async () => {
    const s = await serve(iterate);
    const res = await postMultipart(s.port, '/break/2', [AVATAR, DOC, part('avatar', 'b.png')]);
    expect(res).toMatchObject({
      status: 200,
      json: { stored: [`${s.root}/uploads/a.png`, `${s.root}/uploads/d.txt`] },
    });
    expect(s.after()).toBe(1);
    expect(filesIn(s.root)).toEqual(['uploads/a.png', 'uploads/d.txt']);
  });

  it('break before an optional file: the handler answers', async () => {
    const s = await serve(iterate, { doc: 'optional' });
    const res = await postMultipart(s.port, '/break/1', [AVATAR, DOC]);
    expect(res).toMatchObject({ status: 200, json: { stored: [`${s.root}/uploads/a.png`] } });
    expect(s.after()).toBe(1);
  });

  it('report-only: break before a required file is reported once, and the handler answers', async () => {
    const s = await serve(iterate, { reportOnly: true });
    const res = await postMultipart(s.port, '/break/1', [AVATAR, DOC]);
    expect(res).toMatchObject({ status: 200, json: { stored: [`${s.root}/uploads/a.png`] } });
    expect(s.after()).toBe(1);
    expect(s.reports()).toEqual([{ label: 'file doc', reason: 'missing-path' }]);
  });

  it("the handler's own throw inside the loop: its error, not a deny", async () => {
    const s = await serve(iterate);
    const res = await postMultipart(s.port, '/throw/1', [AVATAR, DOC]);
    expect(res.status).toBe(418);
    expect(res.json).toMatchObject({ statusCode: 418, message: 'the handler gave up' });
    expect(s.after()).toBe(0);
    // The exit looks like a break from the iterator: the deny is still seen.
    expect(s.denies).toEqual(['file doc']);
  });

  it('an onDeny that answers itself answers a loop left early, even by a throw or a drop', async () => {
    const s = await serve(iterate, { answers: true });
    for (const leave of ['break', 'throw', 'drop']) {
      const res = await postMultipart(s.port, `/${leave}/1`, [AVATAR, DOC]);
      expect([leave, res.status, res.json]).toEqual([leave, 451, { answered: 'by onDeny' }]);
    }
    expect(s.after()).toBe(1); // the drop's handler returned; onDeny's answer went out instead
    expect(s.denies).toEqual(['file doc', 'file doc', 'file doc']);
    // Only the throw's own error, which came after onDeny's answer: the drop's
    // answer, stopped in onSend, is not sent a second time.
    expect(s.troubles()).toEqual(['Promise errored, but reply.sent = true was set']);
  });

  it('an iterator advanced by hand and dropped before a required file: the 403 the full iteration gives', async () => {
    const s = await serve(iterate);
    const full = await postMultipart(s.port, '/finish/1', [AVATAR]);
    expect(full).toMatchObject({ status: 403, json: denied('file doc', 'missing-path') });
    for (const body of [[AVATAR], [AVATAR, DOC]]) {
      const res = await postMultipart(s.port, '/drop/1', body);
      expect(res.status).toBe(403);
      expect(res.text).toBe(full.text);
    }
    expect(s.after()).toBe(2); // the handler ran to its end: its answer is what changed
    expect(s.denies).toEqual(['file doc', 'file doc', 'file doc']);
    expect(filesIn(s.root)).toEqual(['uploads/a.png']);
  });

  it('dropped once every required file was handed out: the handler answers', async () => {
    const s = await serve(iterate);
    const res = await postMultipart(s.port, '/drop/2', [AVATAR, DOC, part('avatar', 'b.png')]);
    expect(res).toMatchObject({
      status: 200,
      json: { stored: [`${s.root}/uploads/a.png`, `${s.root}/uploads/d.txt`] },
    });
    expect(s.denies).toEqual([]);
  });

  it('report-only: dropped before a required file is reported once, and the handler answers', async () => {
    const s = await serve(iterate, { reportOnly: true });
    const res = await postMultipart(s.port, '/drop/1', [AVATAR, DOC]);
    expect(res).toMatchObject({ status: 200, json: { stored: [`${s.root}/uploads/a.png`] } });
    expect(s.reports()).toEqual([{ label: 'file doc', reason: 'missing-path' }]);
    expect(s.denies).toEqual(['file doc']);
  });

  it.each([false, true])(
    'answered before a required file, then run to its end (reportOnly: %s): denied once, as the answer left',
    async (reportOnly) => {
      const s = await serve(iterate, { reportOnly });
      const res = await postMultipart(s.port, '/answer/1', [AVATAR]);
      if (reportOnly) expect(res.json).toEqual({ stored: [`${s.root}/uploads/a.png`] });
      else expect(res).toMatchObject({ status: 403, json: denied('file doc', 'missing-path') });
      await vi.waitFor(() => expect(s.after()).toBe(1));
      expect(s.denies).toEqual(['file doc']);
      expect(s.troubles()).toEqual([]);
    },
  );

  it('report-only: dropped before a required file, after a reported part: both are reported', async () => {
    const s = await serve(iterate, { reportOnly: true });
    const res = await postMultipart(s.port, '/drop/1', [part('avatar', 'a.exe'), AVATAR, DOC]);
    expect(res).toMatchObject({ status: 200, json: { stored: [`${s.root}/uploads/a.png`] } });
    expect(s.reports()).toEqual([
      { label: 'file avatar', reason: 'path-not-in-allowlist' },
      { label: 'file doc', reason: 'missing-path' },
    ]);
  });

  it('report-only: a loop run to its end is reported once, not again as the answer leaves', async () => {
    const s = await serve(iterate, { reportOnly: true });
    const res = await postMultipart(s.port, '/finish/1', [AVATAR]);
    expect(res).toMatchObject({ status: 200, json: { stored: [`${s.root}/uploads/a.png`] } });
    expect(s.reports()).toEqual([{ label: 'file doc', reason: 'missing-path' }]);
  });
});

describe('parts() with fields, attachFieldsToBody', () => {
  const paths = [
    { file: 'avatar', under: 'uploads' },
    { file: 'doc', under: 'uploads' },
  ] as const;
  const config = { config: { pathgate: { mode: 'write', paths } } } as const;

  it('break at a field, before any file: both required files are missing, the first is named', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart);
    let after = 0;
    app.post('/note', config, async (request) => {
      let note: unknown;
      for await (const p of request.parts()) {
        if (p.type === 'field') note = p.value;
        break;
      }
      after++;
      return { note };
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/note', [NOTE, AVATAR, DOC]);
    expect(res).toMatchObject({ status: 403, json: denied('file avatar', 'missing-path') });
    expect(after).toBe(0);
    expect(filesIn(root)).toEqual([]);
  });

  it('a throw thrown into the iterator (throw()) stays the answer', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart);
    app.post('/inject', config, async (request) => {
      const parts = request.files()[Symbol.asyncIterator]();
      await parts.next();
      await parts.throw?.(teapot());
      return 'not reached';
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/inject', [AVATAR, DOC]);
    expect(res).toMatchObject({ status: 418, json: { message: 'the handler gave up' } });
  });

  it('an iterator advanced by hand and dropped: the answer checks the required files', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart);
    app.post('/by-hand', config, async (request) => {
      const first = await request.files()[Symbol.asyncIterator]().next();
      return { got: (first.value as MultipartFile).filename };
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/by-hand', [AVATAR]);
    expect(res).toMatchObject({ status: 403, json: denied('file doc', 'missing-path') });
  });

  // A stream the handler answered with (a file: reply.sendFile, createReadStream)
  // holds a descriptor until read or destroyed: whoever answers instead, it is let go.
  const FILE_HEADERS = {
    'content-type': 'text/plain',
    'content-disposition': 'attachment; filename="report.txt"',
    'content-language': 'en',
    'content-location': '/files/report.txt',
    'content-range': 'bytes 0-12/100',
    etag: '"v1"',
    'last-modified': 'Fri, 04 Dec 2026 12:00:00 GMT',
  };
  const ANSWERED_INSTEAD = [
    ['the 403', {}, { status: 403, json: denied('file doc', 'missing-path') }],
    ['an onDeny that answers itself: its answer', { answers: true }, { status: 451 }],
    [
      'report-only, an onDeny that answers itself: its answer',
      { answers: true, reportOnly: true },
      { status: 451 },
    ],
  ] as const;
  /** A handler that drops the iteration after one file, then answers a stream it describes as a file. */
  async function dropThenStream(options: { answers?: true; reportOnly?: true }) {
    const app = newApp();
    const onDeny = (_denial: unknown, _request: unknown, reply: FastifyReply) =>
      options.answers ? reply.code(451).send({ answered: 'by onDeny' }) : undefined;
    await app.register(pathgate, {
      root: sandbox(),
      fs: RULES,
      reportOnly: options.reportOnly === true,
      onDeny,
    });
    await app.register(multipart);
    const streams: Readable[] = [];
    app.post('/stream', config, async (request, reply) => {
      await request.files()[Symbol.asyncIterator]().next();
      const stream = Readable.from(['handler bytes']);
      streams.push(stream);
      // As reply.download() describes a file: none of it holds for an answer sent instead.
      return reply.headers(FILE_HEADERS).send(stream);
    });
    const res = await postMultipart(await listen(app), '/stream', [AVATAR]);
    return { res, streams };
  }

  it.each(ANSWERED_INSTEAD)(
    'dropped, then a stream answered: %s instead, the stream let go, and the headers that describe it',
    async (_name, options, want) => {
      const { res, streams } = await dropThenStream(options);
      expect(res).toMatchObject(want);
      expect(streams.map((s) => s.destroyed)).toEqual([true]);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(FILE_HEADERS).filter((name) => name in res.headers)).toEqual([
        'content-type',
      ]);
    },
  );

  it('report-only, dropped, then a stream answered: it goes out, with the headers that describe it', async () => {
    const { res } = await dropThenStream({ reportOnly: true });
    expect([res.status, res.text]).toEqual([200, 'handler bytes']);
    expect(res.headers).toMatchObject(FILE_HEADERS);
  });

  it('dropped, then an empty answer (no payload to let go): the 403 instead', async () => {
    const app = newApp();
    await app.register(pathgate, { root: sandbox(), fs: RULES });
    await app.register(multipart);
    app.post('/empty', config, async (request, reply) => {
      await request.files()[Symbol.asyncIterator]().next();
      return reply.send();
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/empty', [AVATAR]);
    expect(res).toMatchObject({ status: 403, json: denied('file doc', 'missing-path') });
  });

  it("dropped, with an app-wide onSend that compressed the handler's answer: the 403 is sent plain, and says so", async () => {
    const app = newApp();
    await app.register(pathgate, { root: sandbox(), fs: RULES });
    await app.register(multipart);
    // What @fastify/compress does to an answer before the route's own onSend hooks.
    app.addHook('onSend', async (_request, reply, payload) => {
      if (typeof payload !== 'string') return payload;
      reply.header('content-encoding', 'gzip');
      return gzipSync(payload);
    });
    app.post('/gzip', config, async (request) => {
      await request.files()[Symbol.asyncIterator]().next();
      return { got: 'avatar' };
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/gzip', [AVATAR]);
    expect(res).toMatchObject({ status: 403, json: denied('file doc', 'missing-path') });
    expect(res.headers['content-encoding']).toBeUndefined();
  });

  it('attachFieldsToBody: an onFile that throws on the first file keeps its error', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    let seen = 0;
    await app.register(multipart, {
      attachFieldsToBody: true,
      async onFile() {
        seen++;
        throw teapot();
      },
    });
    let calls = 0;
    app.post('/attach', config, async () => {
      calls++;
      return 'ran';
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/attach', [AVATAR, DOC]);
    expect(res).toMatchObject({ status: 418, json: { message: 'the handler gave up' } });
    expect([seen, calls]).toEqual([1, 0]);
    expect(filesIn(root)).toEqual([]);
  });
});
