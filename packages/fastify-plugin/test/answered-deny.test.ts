import multipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate from '../src/index.js';
import { listen, newApp, postMultipart, sandbox } from './helpers.js';

// An onDeny that answers the request itself, for a deny met while the handler
// reads the upload: the multipart call throws to stop the handler, and that
// throw, after the answer went out, must not reach Fastify's log as an error.

interface LogLine {
  level: number;
  msg: string;
}

type Consume = (request: FastifyRequest) => Promise<unknown>;

const parts: Consume = async (request) => {
  for await (const part of request.parts()) if (part.type === 'file') await part.toBuffer();
};

const CONSUMERS: [string, Consume][] = [
  ['parts()', parts],
  [
    'files()',
    async (request) => {
      for await (const part of request.files()) await part.toBuffer();
    },
  ],
  ['file()', (request) => request.file()],
  ['saveRequestFiles()', (request) => request.saveRequestFiles()],
];

interface Setup {
  reportOnly?: boolean;
  consume?: Consume;
  /** What the handler does with the deny it caught. */
  onCaught?: (error: unknown) => never;
  /** The route is declared before pathgate: app-wide hooks guard it. */
  routeFirst?: boolean;
  /** An allowed file part comes before the denied one. */
  allowedFirst?: boolean;
}

async function serve(setup: Setup) {
  const { reportOnly = false, consume = parts, onCaught, routeFirst, allowedFirst } = setup;
  const root = sandbox();
  const lines: LogLine[] = [];
  const app = newApp({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  });
  const guard = () =>
    app.register(pathgate, {
      root,
      fs: ['rw:./uploads/**'],
      reportOnly,
      onDeny: (_denial, _request, reply) => reply.code(451).send({ answered: true }),
    });
  if (!routeFirst) await guard();
  await app.register(multipart, { preservePath: true });
  const reached: string[] = [];
  const paths = [{ file: true, under: 'uploads' }] as const;
  app.post('/up', { config: { pathgate: { mode: 'write', paths } } }, async (request) => {
    try {
      await consume(request).catch(onCaught ?? ((error) => Promise.reject(error)));
      reached.push('after the upload');
    } finally {
      reached.push('finally');
    }
    return 'ran';
  });
  if (routeFirst) await guard();
  const port = await listen(app);
  const res = await postMultipart(port, '/up', [
    ...(allowedFirst
      ? [{ disposition: 'name="b"; filename="ok.bin"', data: 'y'.repeat(1024) }]
      : []),
    { disposition: 'name="a"; filename="../escape.bin"', data: 'x'.repeat(1024) },
  ]);
  // Fastify logs a handler's rejection once the promise settles, after the answer.
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { res, reached, errors: lines.filter((l) => l.level >= 50).map((l) => l.msg) };
}

describe.each([
  ['report-only', true],
  ['enforced', false],
])('%s, an onDeny that answers a deny thrown out of a multipart call', (_mode, reportOnly) => {
  it.each(CONSUMERS)(
    '%s: its answer alone, the handler stops, no error logged',
    async (name, consume) => {
      const s = await serve({ reportOnly, consume });
      expect(s.res).toMatchObject({ status: 451, json: { answered: true } });
      expect(s.reached).toEqual(['finally']);
      // multipart's saveRequestFiles() logs any error out of its loop itself.
      expect(s.errors).toEqual(name === 'saveRequestFiles()' ? ['save request file'] : []);
    },
  );
});

describe('after an onDeny answered, what is still logged', () => {
  it("the handler's own error, thrown in place of the deny", async () => {
    const s = await serve({
      onCaught: () => {
        throw new Error('handler bug');
      },
    });
    expect(s.res).toMatchObject({ status: 451, json: { answered: true } });
    expect(s.errors).toEqual(['Promise errored, but reply.sent = true was set']);
  });

  it('the deny, on a route declared before pathgate: its handler is not wrapped', async () => {
    const s = await serve({ routeFirst: true });
    expect(s.res).toMatchObject({ status: 451, json: { answered: true } });
    expect(s.reached).toEqual(['finally']);
    expect(s.errors).toEqual(['Promise errored, but reply.sent = true was set']);
  });

  it("saveRequestFiles() after it spooled a file: multipart's own, removing the spool twice", async () => {
    const s = await serve({ consume: (request) => request.saveRequestFiles(), allowedFirst: true });
    expect(s.res).toMatchObject({ status: 451, json: { answered: true } });
    expect(s.reached).toEqual(['finally']);
    // Its onResponse hook removes the spool, and so does its loop's catch.
    expect(s.errors).toEqual(['save request file', 'Could not delete file']);
  });
});
