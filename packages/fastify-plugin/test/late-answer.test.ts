import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import fastifyStatic from '@fastify/static';
import view from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate from '../src/index.js';
import { denied, listen, newApp, postMultipart, request, sandbox } from './helpers.js';

// An onDeny that answers through a method whose `send` comes on a later turn,
// after onDeny returned: @fastify/view's `reply.view()` (renders first),
// @fastify/static's `reply.sendFile()` and `reply.download()` (stat the file
// first), Fastify's `reply.callNotFound()` (runs the not-found handler's
// hooks first). Pathgate must see that answer begun and send no 403 of its own: the
// client gets the app's answer, the handler does not run, and Fastify logs no
// "Reply was already sent" for the answer that came second.

interface LogLine {
  level: number;
  msg: string;
}

type Answer = (reply: FastifyReply) => unknown;

/** What every late answer sends, and the client must get. */
const EXPECTED = { status: 451, text: '<p>denied</p>' };

const ANSWERS: [string, Answer][] = [
  ['reply.view()', (reply) => reply.code(451).view('denied.eta', { what: 'denied' })],
  ['reply.sendFile()', (reply) => reply.code(451).sendFile('denied.html')],
  ['reply.download()', (reply) => reply.code(451).download('denied.html')],
  // The not-found handler answers once its own (async) preHandler ran.
  ['reply.callNotFound()', (reply) => reply.callNotFound()],
];

/** The app's templates and static files, outside the sandbox pathgate guards. */
function assets(): string {
  const dir = sandbox();
  writeFileSync(join(dir, 'denied.eta'), '<p><%= it.what %></p>');
  writeFileSync(join(dir, 'denied.html'), '<p>denied</p>');
  return dir;
}

async function serve(answer: Answer, reportOnly: boolean) {
  const dir = assets();
  const lines: LogLine[] = [];
  const app = newApp({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  });
  await app.register(view, { engine: { eta: new Eta() }, templates: dir });
  await app.register(fastifyStatic, { root: dir, serve: false });
  await app.register(multipart, { preservePath: true });
  app.setNotFoundHandler({ preHandler: async () => {} }, async (_request, reply) =>
    reply.code(451).type('text/html').send('<p>denied</p>'),
  );
  await app.register(pathgate, {
    root: sandbox(),
    fs: ['./public/**', 'rw:./uploads/**'],
    reportOnly,
    // Returns nothing: the answer it began is what tells pathgate it answered.
    onDeny: (_denial, _request, reply) => {
      void answer(reply);
    },
  });
  const ran: string[] = [];
  const read = { mode: 'read', paths: [{ params: 'file' }] } as const;
  // No preHandler of its own: the check runs in the guarded handler.
  app.get('/plain/:file', { config: { pathgate: read } }, async () => {
    ran.push('plain');
    return 'ran';
  });
  // A preHandler of its own: the check runs in pathgate's preHandler hook.
  const own = (_request: unknown, _reply: unknown, done: () => void) => done();
  app.get('/hooked/:file', { config: { pathgate: read }, preHandler: own }, async () => {
    ran.push('hooked');
    return 'ran';
  });
  const upload = { mode: 'write', paths: [{ file: true, under: 'uploads' }] } as const;
  app.post('/upload', { config: { pathgate: upload } }, async (request) => {
    for await (const part of request.files()) await part.toBuffer();
    ran.push('upload');
    return 'ran';
  });
  /** What Fastify logged: errors, and an answer sent over another. */
  const trouble = () =>
    lines.filter((l) => l.level >= 50 || /already sent/i.test(l.msg)).map((l) => l.msg);
  return { app, ran, trouble };
}

/** A denied `file` param: it escapes the root. */
const ESCAPE = '..%2F..%2Fetc%2Fpasswd';

describe.each([
  ['enforced', false],
  ['report-only', true],
])('%s, an onDeny that answers late', (_mode, reportOnly) => {
  describe.each(ANSWERS)('%s', (_name, answer) => {
    it.each(['plain', 'hooked'])(
      '/%s/:file route: its answer alone, no handler, nothing logged',
      async (route) => {
        const s = await serve(answer, reportOnly);
        const res = await s.app.inject({ method: 'GET', url: `/${route}/${ESCAPE}` });
        expect({ status: res.statusCode, text: res.body }).toEqual(EXPECTED);
        // A second send, or an error, is logged after the first answer left.
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect({ ran: s.ran, trouble: s.trouble() }).toEqual({ ran: [], trouble: [] });
      },
    );

    it('a denied file part, over HTTP: its answer alone, no handler, nothing logged', async () => {
      const s = await serve(answer, reportOnly);
      const port = await listen(s.app);
      const res = await postMultipart(port, '/upload', [
        { disposition: 'name="a"; filename="../escape.bin"', data: 'x'.repeat(1024) },
      ]);
      expect({ status: res.status, text: res.text }).toEqual(EXPECTED);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect({ ran: s.ran, trouble: s.trouble() }).toEqual({ ran: [], trouble: [] });
    });
  });
});

it('over HTTP, a param route: the rendered view, not the 403', async () => {
  const [, answer] = ANSWERS[0] as (typeof ANSWERS)[number];
  const s = await serve(answer, false);
  const port = await listen(s.app);
  const res = await request(port, { path: `/plain/${ESCAPE}` });
  expect({ status: res.status, text: res.text }).toEqual(EXPECTED);
  expect(s.ran).toEqual([]);
});

it('an onDeny that hijacks and writes on a later turn: its answer alone', async () => {
  const s = await serve((reply) => {
    reply.hijack();
    setImmediate(() => reply.raw.writeHead(451).end('raw'));
  }, false);
  const port = await listen(s.app);
  const res = await request(port, { path: `/hooked/${ESCAPE}` });
  expect({ status: res.status, text: res.text }).toEqual({ status: 451, text: 'raw' });
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect({ ran: s.ran, trouble: s.trouble() }).toEqual({ ran: [], trouble: [] });
});

describe('an async onDeny', () => {
  it('that awaits reply.view(): seen, as the call began in its synchronous part', async () => {
    const s = await serve(async (reply) => {
      await reply.code(451).view('denied.eta', { what: 'denied' });
    }, false);
    const res = await s.app.inject({ method: 'GET', url: `/plain/${ESCAPE}` });
    expect({ status: res.statusCode, text: res.body }).toEqual(EXPECTED);
  });

  it('that sends after awaiting reply.viewAsync(): too late, the 403 went out', async () => {
    const s = await serve(async (reply) => {
      const html = await reply.viewAsync('denied.eta', { what: 'denied' });
      reply.code(451).type('text/html').send(html);
    }, false);
    const res = await s.app.inject({ method: 'GET', url: `/plain/${ESCAPE}` });
    expect({ status: res.statusCode, json: res.json() }).toEqual({
      status: 403,
      json: denied('params.file', 'path-not-in-allowlist'),
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(s.trouble()).toEqual([expect.stringMatching(/^Reply was already sent/)]);
  });
});
