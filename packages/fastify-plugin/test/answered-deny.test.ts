import multipart from '@fastify/multipart';
import type { FastifyRequest, RouteHandlerMethod } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate, { PathgateDeniedError } from '../src/index.js';
import { denied, filesIn, listen, newApp, postMultipart, request, sandbox } from './helpers.js';

// A deny met while the handler reads the upload: the multipart call throws to
// stop the handler. Answered by an onDeny that answers the request itself, that
// throw must not reach Fastify's log as an error; through saveRequestFiles(),
// nor multipart's (it logs what leaves its loop, and removes the spool twice).

interface LogLine {
  level: number;
  msg: string;
}

/** `spool`: where saveRequestFiles() writes. */
type Consume = (request: FastifyRequest, spool: string) => Promise<unknown>;

const parts: Consume = async (request) => {
  for await (const part of request.parts()) if (part.type === 'file') await part.toBuffer();
};

const save: Consume = (request, spool) => request.saveRequestFiles({ tmpdir: spool });

const CONSUMERS: [string, Consume][] = [
  ['parts()', parts],
  [
    'files()',
    async (request) => {
      for await (const part of request.files()) await part.toBuffer();
    },
  ],
  ['file()', (request) => request.file()],
  ['saveRequestFiles()', save],
];

interface Setup {
  reportOnly?: boolean;
  /** onDeny answers the request itself (451); else it returns nothing, for the 403. */
  answers?: boolean;
  consume?: Consume;
  /** What the handler does with the deny it caught. */
  onCaught?: (error: unknown) => never;
  /** The route is declared before pathgate: app-wide hooks guard it. */
  routeFirst?: boolean;
  /** An allowed file part comes before the denied one. */
  allowedFirst?: boolean;
  /** multipart reads the upload in its own hook (`attachFieldsToBody`). */
  attach?: boolean;
  /** The app has an async onSend hook: an answer leaves a while after `send()`. */
  asyncOnSend?: boolean;
  /** The handler returns a thenable that is not a native promise (a query builder's, Bluebird's). */
  thenable?: boolean;
}

async function serve(setup: Setup) {
  const { reportOnly = false, answers = true, consume = parts, onCaught, routeFirst } = setup;
  const root = sandbox();
  const spool = sandbox();
  const lines: LogLine[] = [];
  const app = newApp({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  });
  const guard = () =>
    app.register(pathgate, {
      root,
      fs: ['rw:./uploads/**'],
      reportOnly,
      onDeny: (_denial, _request, reply) => {
        if (answers) reply.code(451).send({ answered: true });
      },
    });
  if (!routeFirst) await guard();
  if (setup.asyncOnSend) {
    // As one that does I/O: the answer leaves a while after send().
    app.addHook('onSend', async (_request, _reply, payload) => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      return payload;
    });
  }
  await app.register(multipart, { preservePath: true, attachFieldsToBody: setup.attach ?? false });
  const reached: string[] = [];
  const paths = [{ file: true, under: 'uploads' }] as const;
  // The handler may still be removing the spool when the answer arrives: the test waits for it.
  let handlerDone: Promise<void> | undefined;
  let finish = () => {};
  const handle = async (request: FastifyRequest) => {
    handlerDone = new Promise((resolve) => {
      finish = resolve;
    });
    try {
      await consume(request, spool).catch(onCaught ?? ((error) => Promise.reject(error)));
      reached.push('after the upload');
    } finally {
      reached.push('finally');
      finish();
    }
    return 'ran';
  };
  const handler = setup.thenable
    ? (request: FastifyRequest) => {
        const promise = handle(request);
        // biome-ignore lint/suspicious/noThenProperty: the thenable under test
        return { then: promise.then.bind(promise) } as unknown as Promise<string>;
      }
    : handle;
  app.post('/up', { config: { pathgate: { mode: 'write', paths } } }, handler);
  if (routeFirst) await guard();
  const port = await listen(app);
  const allowed = { disposition: 'name="b"; filename="ok.bin"', data: 'y'.repeat(1024) };
  const res = await postMultipart(port, '/up', [
    ...(setup.allowedFirst ? [allowed] : []),
    { disposition: 'name="a"; filename="../escape.bin"', data: 'x'.repeat(1024) },
  ]);
  await handlerDone;
  // Fastify logs a handler's rejection once the promise settles, after the answer.
  await new Promise((resolve) => setTimeout(resolve, 20));
  const errors = lines.filter((l) => l.level >= 50).map((l) => l.msg);
  const sentTwice = lines.filter((l) => /already sent/.test(l.msg)).map((l) => l.msg);
  return { res, reached, errors, sentTwice, spooled: filesIn(spool) };
}

const ANSWER = { status: 451, json: { answered: true } };

describe.each([
  ['report-only', true],
  ['enforced', false],
])('%s, an onDeny that answers a deny thrown out of a multipart call', (_mode, reportOnly) => {
  it.each(CONSUMERS)(
    '%s: its answer alone, the handler stops, no error logged',
    async (_n, consume) => {
      const s = await serve({ reportOnly, consume });
      expect(s.res).toMatchObject(ANSWER);
      expect(s.reached).toEqual(['finally']);
      expect(s.errors).toEqual([]);
    },
  );

  it('a handler returning a thenable that is not a native promise: no error logged', async () => {
    const s = await serve({ reportOnly, thenable: true });
    expect(s.res).toMatchObject(ANSWER);
    expect({ reached: s.reached, errors: s.errors }).toEqual({ reached: ['finally'], errors: [] });
  });

  it('saveRequestFiles() after it spooled a file: removed once, no error logged', async () => {
    const s = await serve({ reportOnly, consume: save, allowedFirst: true });
    expect(s.res).toMatchObject(ANSWER);
    expect({ reached: s.reached, errors: s.errors, spooled: s.spooled }).toEqual({
      reached: ['finally'],
      errors: [],
      spooled: [],
    });
  });
});

it.each([
  ['report-only', true],
  ['enforced', false],
])(
  '%s, attachFieldsToBody: the answer alone, no handler, no error logged',
  async (_m, reportOnly) => {
    const s = await serve({ reportOnly, attach: true, consume: async () => {} });
    expect(s.res).toMatchObject(ANSWER);
    expect({ reached: s.reached, errors: s.errors }).toEqual({ reached: [], errors: [] });
  },
);

describe('an enforced deny out of saveRequestFiles(), the default 403', () => {
  it.each([
    ['first', false],
    ['after a spooled file', true],
  ])('%s: the 403, the spool removed, no error logged', async (_name, allowedFirst) => {
    const s = await serve({ answers: false, consume: save, allowedFirst });
    expect(s.res).toMatchObject({ status: 403, json: denied('file *', 'path-not-in-allowlist') });
    expect({ reached: s.reached, errors: s.errors, spooled: s.spooled }).toEqual({
      reached: ['finally'],
      errors: [],
      spooled: [],
    });
  });
});

describe('after an onDeny answered, what is still logged', () => {
  it("the handler's own error, thrown in place of the deny", async () => {
    const s = await serve({
      onCaught: () => {
        throw new Error('handler bug');
      },
    });
    expect(s.res).toMatchObject(ANSWER);
    expect(s.errors).toEqual(['Promise errored, but reply.sent = true was set']);
  });

  it('the deny, on a route declared before pathgate: its handler is not wrapped', async () => {
    const s = await serve({ routeFirst: true });
    expect(s.res).toMatchObject(ANSWER);
    expect(s.reached).toEqual(['finally']);
    expect(s.errors).toEqual(['Promise errored, but reply.sent = true was set']);
  });
});

describe('saveRequestFiles() while the handler runs a parts() loop of its own', () => {
  it.each([
    ['enforced', false, { status: 403, json: denied('file *', 'path-not-in-allowlist') }],
    ['report-only, answered', true, ANSWER],
  ])('%s: that loop throws the deny too, it never just ends', async (_m, reportOnly, answer) => {
    let settled: string[] = [];
    const both: Consume = async (request, spool) => {
      const results = await Promise.allSettled([save(request, spool), parts(request, spool)]);
      settled = results.map((r) => r.status);
      for (const r of results) if (r.status === 'rejected') throw r.reason;
    };
    const s = await serve({ reportOnly, consume: both, allowedFirst: true, answers: reportOnly });
    expect(s.res).toMatchObject(answer);
    expect({ settled, reached: s.reached, spooled: s.spooled }).toEqual({
      settled: ['rejected', 'rejected'],
      reached: ['finally'],
      spooled: [],
    });
  });
});

// An async onSend hook holds onDeny's answer back: `reply.sent` is still
// false when the deny is thrown, yet the request was answered.
describe.each([
  ['report-only', true],
  ['enforced', false],
])('%s, under an async onSend hook, an onDeny that answers', (_mode, reportOnly) => {
  it.each(CONSUMERS)(
    '%s: its answer alone, the handler stops, nothing logged',
    async (_n, consume) => {
      const s = await serve({ reportOnly, consume, asyncOnSend: true });
      expect(s.res).toMatchObject(ANSWER);
      expect(s).toMatchObject({ reached: ['finally'], errors: [], sentTwice: [] });
    },
  );

  it('saveRequestFiles() after it spooled a file: removed, nothing logged', async () => {
    const s = await serve({ reportOnly, consume: save, asyncOnSend: true, allowedFirst: true });
    expect(s.res).toMatchObject(ANSWER);
    expect(s).toMatchObject({ reached: ['finally'], errors: [], sentTwice: [], spooled: [] });
  });

  it('attachFieldsToBody: its answer alone, no handler, nothing logged', async () => {
    const s = await serve({ reportOnly, attach: true, asyncOnSend: true, consume: async () => {} });
    expect(s.res).toMatchObject(ANSWER);
    expect(s).toMatchObject({ reached: [], errors: [], sentTwice: [] });
  });
});

// A file route's handler is wrapped to settle such a throw; what it returns
// otherwise must reach Fastify as it was, sync values included.
describe("a file route's handler, its value as Fastify would take it", () => {
  async function fileRoute(handler: RouteHandlerMethod) {
    const lines: LogLine[] = [];
    const app = newApp({
      logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
    });
    await app.register(pathgate, { root: sandbox(), fs: ['rw:./uploads/**'] });
    const paths = [{ file: true, under: 'uploads', optional: true }] as const;
    app.post('/up', { config: { pathgate: { mode: 'write', paths } } }, handler);
    const res = await request(await listen(app), { method: 'POST', path: '/up' });
    // A rejection settles after the answer: Fastify logs it then.
    await new Promise((resolve) => setTimeout(resolve, 20));
    return { res, errors: lines.filter((l) => l.level >= 50).map((l) => l.msg) };
  }

  it('undefined from a sync handler: Fastify waits for the answer it sends later', async () => {
    const s = await fileRoute((_request, reply) => {
      setImmediate(() => reply.send({ late: true }));
    });
    expect(s.res).toMatchObject({ status: 200, json: { late: true } });
  });

  it('null from a sync handler: sent as it is', async () => {
    const s = await fileRoute(() => null);
    expect({ status: s.res.status, errors: s.errors }).toEqual({ status: 200, errors: [] });
  });

  it("the app's own deny (checkFs), thrown after its own answer: still logged", async () => {
    const s = await fileRoute(async (_request, reply) => {
      await reply.code(403).send({ own: true });
      throw new PathgateDeniedError({ reason: 'path-not-in-allowlist', label: 'own' });
    });
    expect(s.res).toMatchObject({ status: 403, json: { own: true } });
    expect(s.errors).toEqual(['Promise errored, but reply.sent = true was set']);
  });
});
