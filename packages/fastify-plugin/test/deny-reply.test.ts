import http from 'node:http';
import multipart from '@fastify/multipart';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { closing } from '../../../test/raw-http.js';
import { withoutUnhandled } from '../../../test/unhandled.js';
import pathgate, {
  type DenyHandler,
  type PathgateDenied,
  PathgateDeniedError,
  type PathgateOptions,
} from '../src/index.js';
import {
  denied,
  listen,
  newApp,
  postJson,
  postMultipart,
  postMultipartKeepAlive,
  request,
  sandbox,
} from './helpers.js';

// What a deny sends: the documented 403 JSON (or the host's own body from
// onDeny), never the root or the canonical path; a log line that does carry
// the path; and the connection kept alive unless the body is still arriving.

interface LogLine {
  level: number;
  msg: string;
  pathgate?: Record<string, string>;
}

/**
 * `asyncOnSend`: the app has an async onSend hook, which holds every answer
 * back a tick. `loggerInstance`: the app's own logger, instead of one into `lines`.
 */
async function serve(
  options: Partial<PathgateOptions> = {},
  asyncOnSend = false,
  loggerInstance?: FastifyBaseLogger,
) {
  const root = sandbox();
  const lines: LogLine[] = [];
  const app = newApp(
    loggerInstance
      ? { loggerInstance }
      : {
          logger: {
            level: 'info',
            stream: { write: (line: string) => lines.push(JSON.parse(line)) },
          },
        },
  );
  if (asyncOnSend) app.addHook('onSend', async (_request, _reply, payload) => payload);
  await app.register(pathgate, {
    root,
    fs: ['./public/**', 'rw:./uploads/*.png'],
    ...options,
  } as PathgateOptions);
  const read = { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } } as const;
  app.get('/files/*', read, async () => 'ran');
  const move = { config: { pathgate: { mode: 'write', paths: [{ body: 'to' }] } } } as const;
  app.post('/move', move, async () => 'ran');
  app.get(
    '/schema/*',
    {
      ...read,
      schema: {
        response: {
          '4xx': {
            type: 'object',
            properties: { statusCode: { type: 'number' }, message: { type: 'string' } },
          },
        },
      },
    },
    async () => 'ran',
  );
  await app.register(async (scope) => {
    await scope.register(multipart, { limits: { fileSize: 16 * 1024 * 1024 } });
    const upload = {
      mode: 'write',
      paths: [{ params: 'dir' }, { file: true, under: 'uploads' }],
    } as const;
    scope.post('/up/:dir', { config: { pathgate: upload } }, async (req) => {
      for await (const part of req.files()) await part.toBuffer();
      return 'ran';
    });
  });
  const port = await listen(app);
  const logged = () => lines.filter((l) => l.msg === 'pathgate: denied').map((l) => l.pathgate);
  return { root, port, logged, lines };
}

const bigFile = (filename: string) => ({
  disposition: `name="upload"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data: Buffer.alloc(4 * 1024 * 1024),
});

describe('the 403', () => {
  it('is logged at info with the canonical path; the reply has neither path nor root', async () => {
    const s = await serve();
    const res = await request(s.port, { path: '/files/public%2F..%2F..%2Fsecret' });
    expect(res.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
    expect(res.text).not.toContain(s.root);
    expect(s.logged()).toEqual([
      {
        route: 'GET /files/*',
        label: 'params.*',
        reason: 'path-not-in-allowlist',
        path: `${s.root.replace(/\/[^/]+$/, '')}/secret`,
      },
    ]);
  });

  it('logs at most the start of a long canonical path, and none of a 1 MB value', async () => {
    const s = await serve();
    const move = (to: string) =>
      request(s.port, {
        method: 'POST',
        path: '/move',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ to }),
      });
    // 4,088 characters, under the guard's cap: checked, and its canonical path logged cut short.
    expect((await move(`uploads/${'a'.repeat(4_080)}`)).json).toEqual(
      denied('body.to', 'path-not-in-allowlist'),
    );
    expect((await move(`uploads/${'a'.repeat(1_000_000)}`)).json).toEqual(
      denied('body.to', 'path-too-long'),
    );
    const lines = s.lines.filter((l) => l.msg === 'pathgate: denied');
    expect(lines.map((line) => JSON.stringify(line).length < 2048)).toEqual([true, true]);
    expect(lines[0]?.pathgate?.path).toMatch(/^\/.*\/uploads\/a+… \(\d+ more characters\)$/);
    expect(lines[1]?.pathgate?.path).toBeUndefined();
  });

  it('keeps reason when the route has a 4xx response schema', async () => {
    const s = await serve();
    const res = await request(s.port, { path: '/schema/..%2Fx' });
    expect(res.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
  });

  it('keeps the connection alive when no body is left unread', async () => {
    const s = await serve();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await request(s.port, { path: '/files/..%2Fx', agent });
      // A body that was read whole before the check leaves nothing unread either.
      const second = await request(s.port, {
        method: 'POST',
        path: '/move',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ to: '../y' }),
        agent,
      });
      // An empty body (Content-Length: 0) has nothing to read, parsed or not.
      const third = await request(s.port, {
        method: 'POST',
        path: '/move',
        headers: { 'content-length': 0 },
        agent,
      });
      expect([first.status, second.status, third.status]).toEqual([403, 403, 403]);
      expect(second.json).toEqual(denied('body.to', 'path-not-in-allowlist'));
      expect(third.json).toEqual(denied('body.to', 'missing-path'));
      for (const res of [first, second, third]) expect(res.headers.connection).toBe('keep-alive');
    } finally {
      agent.destroy();
    }
  });

  it('closes the connection when it goes out while the body is still arriving', async () => {
    const s = await serve();
    const early = await postMultipartKeepAlive(s.port, '/up/..%2F..', [bigFile('ok.png')]);
    expect(closing(early)).toEqual({
      answers: [[403, 'close', denied('params.dir', 'path-not-in-allowlist')]],
      closed: true,
      error: undefined,
    });
    const late = await postMultipartKeepAlive(s.port, '/up/uploads%2Fa.png', [
      bigFile('virus.exe'),
    ]);
    expect(closing(late)).toEqual({
      answers: [[403, 'close', denied('file *', 'path-not-in-allowlist')]],
      closed: true,
      error: undefined,
    });
  });
});

describe('an onDeny that hijacks and writes the raw answer while the body is still arriving', () => {
  // Its answer must say `Connection: close` too: pathgate drops whatever the
  // client sends next on the connection, and a keep-alive answer would leave
  // the client waiting on it.
  const WRITES: [string, (write: () => void) => void][] = [
    ['at once', (write) => write()],
    ['on a later turn', (write) => setImmediate(write)],
  ];
  it.each(WRITES)('%s: the connection closes', async (_when, when) => {
    const s = await serve({
      onDeny: (_denial, _req, reply) => {
        reply.hijack();
        when(() => reply.raw.writeHead(451, { 'content-type': 'application/json' }).end('{}'));
      },
    });
    for (const [path, filename] of [
      ['/up/..%2F..', 'ok.png'],
      ['/up/uploads%2Fa.png', 'virus.exe'],
    ] as const) {
      const got = await postMultipartKeepAlive(s.port, path, [bigFile(filename)]);
      expect([path, closing(got)]).toEqual([
        path,
        { answers: [[451, 'close', {}]], closed: true, error: undefined },
      ]);
    }
  });
});

describe('onDeny', () => {
  it('sees the denial, request and reply; may add headers and return the body', async () => {
    const seen: unknown[] = [];
    const s = await serve({
      onDeny: (denial, req, reply) => {
        seen.push({
          reason: denial.reason,
          label: denial.label,
          path: denial.result?.path,
          url: req.url,
        });
        reply.header('x-pathgate', denial.reason);
        return { error: 'nope', why: denial.reason };
      },
    });
    const res = await request(s.port, { path: '/files/etc' });
    expect(res).toMatchObject({
      status: 403,
      json: { error: 'nope', why: 'path-not-in-allowlist' },
    });
    expect(res.headers['x-pathgate']).toBe('path-not-in-allowlist');
    expect(seen).toEqual([
      {
        reason: 'path-not-in-allowlist',
        label: 'params.*',
        path: `${s.root}/etc`,
        url: '/files/etc',
      },
    ]);
  });

  it('its body is used for a deny thrown out of a multipart iteration too', async () => {
    const s = await serve({ onDeny: (denial) => ({ error: 'nope', why: denial.reason }) });
    const res = await postMultipart(s.port, '/up/uploads%2Fa.png', [
      { disposition: 'name="upload"; filename="virus.exe"', data: 'x' },
    ]);
    expect(res).toMatchObject({
      status: 403,
      json: { error: 'nope', why: 'path-not-in-allowlist' },
    });
  });

  it('returning the reply (`reply.header(…)` in an arrow function): no body, no crash, no error', async () => {
    // Fastify's reply is a thenable whose then() calls its first callback unchecked.
    const crashes: unknown[] = [];
    const onCrash = (error: unknown) => crashes.push(error);
    process.on('uncaughtException', onCrash);
    try {
      const s = await serve({
        onDeny: (denial, _req, reply) => reply.header('x-pathgate', denial.reason),
      });
      const res = await request(s.port, { path: '/files/..%2Fx' });
      expect(res).toMatchObject({ status: 403, json: denied('params.*', 'path-not-in-allowlist') });
      expect(res.headers['x-pathgate']).toBe('path-not-in-allowlist');
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(crashes).toEqual([]);
      expect(s.lines.filter((l) => l.level >= 50)).toEqual([]);
    } finally {
      process.off('uncaughtException', onCrash);
    }
  });

  // Each returns a stream of the exchange itself, which a stream returned as
  // a page to send is not: the 403 goes out on it, never destroyed with it.
  it.each([
    [
      'the raw response (`reply.raw.setHeader(…)`)',
      (reply: FastifyReply) => reply.raw.setHeader('x-pathgate', 'denied'),
    ],
    [
      'the raw request (`request.raw.once(…)`)',
      (reply: FastifyReply) => reply.request.raw.once('close', () => {}),
    ],
    [
      'the socket (`socket.setNoDelay()`)',
      (reply: FastifyReply) => reply.request.raw.socket.setNoDelay(true),
    ],
  ])('returning %s: no body, and the default 403 goes out on it', async (_name, chain) => {
    const s = await serve({ onDeny: (_denial, _req, reply) => chain(reply) });
    const res = await request(s.port, { path: '/files/..%2Fx' });
    expect(res).toMatchObject({ status: 403, json: denied('params.*', 'path-not-in-allowlist') });
  });

  it.each([
    ['', false],
    [', under an async onSend hook', true],
  ])(
    'one that answers itself (`return reply.code(451).send(…)`)%s: its answer alone, no handler',
    async (_name, asyncOnSend) => {
      const onDeny: DenyHandler = (_denial, _req, reply) => reply.code(451).send({ mine: 1 });
      const s = await serve({ onDeny }, asyncOnSend);
      const answers = [
        await request(s.port, { path: '/files/..%2Fx' }),
        await postJson(s.port, '/move', { to: 'public/x' }),
        await postMultipart(s.port, '/up/..%2F..', [{ disposition: 'name="a"', data: 'x' }]),
      ];
      expect(answers.map((res) => [res.status, res.json])).toEqual(
        Array(3).fill([451, { mine: 1 }]),
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(s.lines.filter((l) => l.level >= 40)).toEqual([]);
      expect(s.logged()).toHaveLength(3);
    },
  );

  it('returning nothing keeps the default body', async () => {
    let count = 0;
    const s = await serve({
      onDeny: () => {
        count++;
      },
    });
    const res = await request(s.port, { path: '/files/etc' });
    expect(res.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
    expect(count).toBe(1);
  });

  it('a synchronous throw is handled as a rejection: logged, and the default 403 goes out', async () => {
    const s = await serve({
      onDeny: () => {
        throw new Error('metrics down at /srv/files');
      },
    });
    const upload = [{ disposition: 'name="upload"; filename="virus.exe"', data: 'x' }];
    const answers = [
      // the guarded handler, a route with a response schema, the onRequest hook, a multipart part
      await request(s.port, { path: '/files/..%2Fx' }),
      await request(s.port, { path: '/schema/..%2Fx' }),
      await postMultipart(s.port, '/up/..%2F..', upload),
      await postMultipart(s.port, '/up/uploads%2Fa.png', upload),
    ];
    expect(answers.map((res) => [res.status, res.json])).toEqual([
      [403, denied('params.*', 'path-not-in-allowlist')],
      [403, denied('params.*', 'path-not-in-allowlist')],
      [403, denied('params.dir', 'path-not-in-allowlist')],
      [403, denied('file *', 'path-not-in-allowlist')],
    ]);
    const failed = s.lines.filter((l) => l.msg === 'pathgate: onDeny failed');
    expect(failed).toEqual(
      Array(4).fill(
        expect.objectContaining({
          level: 50,
          err: expect.objectContaining({ message: 'metrics down at /srv/files' }),
        }),
      ),
    );
    expect(s.logged().map((l) => l?.label)).toEqual([
      'params.*',
      'params.*',
      'params.dir',
      'file *',
    ]);
  });

  it('an async onDeny is no body, even resolved; a rejection is logged, not unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const s = await serve({
        onDeny: async (denial) => {
          if (denial.label === 'params.*') throw new Error('metrics down');
          return { late: true };
        },
      });
      const res = await request(s.port, { path: '/files/etc' });
      expect(res).toMatchObject({ status: 403, json: denied('params.*', 'path-not-in-allowlist') });
      const up = await postMultipart(s.port, '/up/uploads%2Fa.png', [
        { disposition: 'name="upload"; filename="virus.exe"', data: 'x' },
      ]);
      expect(up).toMatchObject({
        status: 403,
        json: denied('file *', 'path-not-in-allowlist'),
      });
      await new Promise((resolve) => setTimeout(resolve, 20));
      const failed = s.lines.filter((l) => l.msg === 'pathgate: onDeny failed');
      expect(failed).toEqual([
        expect.objectContaining({
          level: 50,
          err: expect.objectContaining({ message: 'metrics down' }),
        }),
      ]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('a route with a response schema', () => {
  const ERROR = {
    type: 'object',
    properties: { message: { type: 'string' }, statusCode: { type: 'number' } },
  };
  const SCHEMAS: readonly (readonly [string, Record<string, unknown>])[] = [
    ['4xx', { '4xx': ERROR }],
    ['403', { 403: ERROR }],
    ['default', { default: ERROR }],
    ['4xx per media type', { '4xx': { content: { 'application/json': { schema: ERROR } } } }],
    ['4xx for any media type', { '4xx': { content: { '*/*': { schema: ERROR } } } }],
    // Fastify hands the schema an `error` of its own: the match must make the same one.
    [
      '4xx keeping error',
      { '4xx': { ...ERROR, properties: { ...ERROR.properties, error: { type: 'string' } } } },
    ],
  ];
  const avatar = (filename: string) => [
    { disposition: `name="avatar"; filename="${filename}"`, data: 'x' },
  ];

  async function serveSchema(
    response: Record<string, unknown>,
    options: { onDeny?: DenyHandler } = {},
    errorHandler?: Parameters<FastifyInstance['setErrorHandler']>[0],
  ) {
    const app = newApp();
    if (errorHandler) app.setErrorHandler(errorHandler);
    await app.register(pathgate, { root: sandbox(), fs: ['rw:./uploads/*'], ...options });
    await app.register(multipart, { preservePath: true });
    const pathgateConfig = {
      mode: 'write',
      paths: [{ file: 'avatar', under: 'uploads' }],
    } as const;
    app.post('/u', { schema: { response }, config: { pathgate: pathgateConfig } }, async (req) => {
      const part = await req.file();
      part?.file.resume();
      return {};
    });
    return listen(app);
  }

  it.each(SCHEMAS)(
    '%s: a deny thrown out of multipart keeps the whole body',
    async (_n, schema) => {
      const port = await serveSchema(schema);
      const res = await postMultipart(port, '/u', avatar('../x'));
      expect(res).toMatchObject({
        status: 403,
        json: denied('file avatar', 'path-not-in-allowlist'),
      });
      // A hook deny on the same route: the same body.
      const hook = await postJson(port, '/u', {});
      expect(hook).toMatchObject({ status: 403, json: denied('file avatar', 'missing-path') });
    },
  );

  it.each(SCHEMAS)('%s: onDeny’s body is sent as it is', async (_n, schema) => {
    const port = await serveSchema(schema, { onDeny: () => ({ error: 'nope' }) });
    const res = await postMultipart(port, '/u', avatar('../x'));
    expect(res).toMatchObject({ status: 403, json: { error: 'nope' } });
    expect(await postJson(port, '/u', {})).toMatchObject({ status: 403, json: { error: 'nope' } });
  });

  it.each(SCHEMAS)(
    '%s: a custom error handler gets the error; its own body is kept',
    async (_n, schema) => {
      const seen: unknown[] = [];
      const port = await serveSchema(schema, {}, (error, _request, reply) => {
        const { statusCode, code, reason, label } = error as PathgateDenied;
        seen.push({ statusCode, code, reason, label });
        reply.code(403).send({ message: `refused: ${reason}`, statusCode: 403, extra: 'dropped' });
      });
      const res = await postMultipart(port, '/u', avatar('../x'));
      expect(res).toMatchObject({
        status: 403,
        json: { message: 'refused: path-not-in-allowlist', statusCode: 403 },
      });
      expect(seen).toEqual([
        {
          statusCode: 403,
          code: 'PATHGATE_DENIED',
          reason: 'path-not-in-allowlist',
          label: 'file avatar',
        },
      ]);
    },
  );

  it('a custom error handler that sends the error on gets the whole body', async () => {
    const port = await serveSchema({ '4xx': ERROR }, {}, (error, _request, reply) => {
      reply.send(error);
    });
    const res = await postMultipart(port, '/u', avatar('../x'));
    expect(res).toMatchObject({
      status: 403,
      json: denied('file avatar', 'path-not-in-allowlist'),
    });
  });

  it("no schema: a custom error handler's JSON null is kept, not a 500", async () => {
    const port = await serveSchema({}, {}, (_error, _request, reply) => {
      reply.code(403).type('application/json').send('null');
    });
    const res = await postMultipart(port, '/u', avatar('../x'));
    expect(res).toMatchObject({ status: 403, json: null });
  });

  it("no schema: a custom error handler's body is kept, even with Fastify's keys (but its own statusCode)", async () => {
    const port = await serveSchema({}, {}, (error, _request, reply) => {
      const { code, message } = error as PathgateDenied;
      reply.code(403).send({ statusCode: 4031, code, error: 'Forbidden', message });
    });
    const res = await postMultipart(port, '/u', avatar('../x'));
    expect(res.status).toBe(403);
    expect(res.json).toEqual({
      statusCode: 4031,
      code: 'PATHGATE_DENIED',
      error: 'Forbidden',
      message: 'file avatar: path denied (path-not-in-allowlist)',
    });
  });

  it("a schema the deny cannot fit: a custom error handler's text body is kept, not a 500", async () => {
    // Serializing the deny through it throws (a required key the error lacks): no body Fastify made of it.
    const strict = { ...ERROR, required: ['detail'] };
    const port = await serveSchema({ '4xx': strict }, {}, (_error, _request, reply) => {
      reply.code(403).type('text/plain').send('refused');
    });
    const res = await postMultipart(port, '/u', avatar('../x'));
    expect(res).toMatchObject({ status: 403, text: 'refused' });
  });

  it('an allowed upload is answered through the schema as usual', async () => {
    const port = await serveSchema({ 200: { type: 'object', properties: {} }, '4xx': ERROR });
    expect(await postMultipart(port, '/u', avatar('a.png'))).toMatchObject({
      status: 200,
      json: {},
    });
  });
});

describe("an app's own deny", () => {
  it("new PathgateDeniedError(denial) from a handler: the same error as pathgate's, a 403 naming no path", async () => {
    const app = newApp();
    const seen: unknown[] = [];
    app.setErrorHandler((error, _request, reply) => {
      if (error instanceof PathgateDeniedError) seen.push([error.reason, error.label]);
      return reply.send(error);
    });
    await app.register(pathgate, { root: sandbox(), fs: ['./public/**'] });
    // A check of the app's own, say a copy's target in write mode on a read route.
    app.get('/copy', async () => {
      throw new PathgateDeniedError({ reason: 'mode-not-permitted', label: 'query.to' });
    });
    const port = await listen(app);
    const res = await request(port, { path: '/copy' });
    expect(res.status).toBe(403);
    expect(res.json).toEqual({
      statusCode: 403,
      code: 'PATHGATE_DENIED',
      error: 'Forbidden',
      message: 'query.to: path denied (mode-not-permitted)',
    });
    expect(seen).toEqual([['mode-not-permitted', 'query.to']]);
  });
});

describe('an app logger whose warn and error throw (a custom loggerInstance)', () => {
  /** Fastify's own lines (info) are written; pathgate's warn and error lines throw. */
  const throwing = (): FastifyBaseLogger => {
    const fail = () => {
      throw new Error('log sink down');
    };
    const logger = {
      level: 'info',
      info() {},
      debug() {},
      trace() {},
      warn: fail,
      error: fail,
      fatal: fail,
    };
    return { ...logger, silent() {}, child: () => throwing() } as unknown as FastifyBaseLogger;
  };
  const UPLOAD = [{ disposition: 'name="upload"; filename="virus.exe"', data: 'x' }];

  /** The answers to a denied GET and a denied file part, with the logger's failures on stderr. */
  async function answers(options: Partial<PathgateOptions>) {
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const s = await serve(options, false, throwing());
      const got = [
        await request(s.port, { path: '/files/etc' }),
        await postMultipart(s.port, '/up/uploads%2Fa.png', UPLOAD),
      ].map((res) => [res.status, res.json]);
      const failures = stderr.mock.calls.filter(([line]) => line === 'pathgate: the logger failed');
      return { got, failures: failures.length };
    } finally {
      stderr.mockRestore();
    }
  }
  const DENIED = [
    [403, denied('params.*', 'path-not-in-allowlist')],
    [403, denied('file *', 'path-not-in-allowlist')],
  ];

  it.each([
    [
      'a throwing onDeny',
      () => {
        throw new Error('metrics down');
      },
    ],
    [
      'a rejecting onDeny',
      async () => {
        throw new Error('metrics down');
      },
    ],
  ])(
    '%s: the 403 still goes out, nothing unhandled, the failure on stderr',
    async (_name, onDeny) => {
      const result = await withoutUnhandled(() => answers({ onDeny }));
      expect(result).toEqual({ got: DENIED, failures: 2 });
    },
  );

  it('report-only: the request goes on', async () => {
    const result = await withoutUnhandled(() => answers({ reportOnly: true }));
    expect(result).toEqual({
      got: [
        [200, undefined],
        [200, undefined],
      ],
      failures: 2,
    });
  });
});
