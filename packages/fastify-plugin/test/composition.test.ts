import http from 'node:http';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { describe, expect, it } from 'vitest';
import { exchangeRaw, rawRequest } from '../../../test/raw-http.js';
import pathgate, { type RouteGuardOptions } from '../src/index.js';
import { denied, listen, newApp, postJson, postMultipart, request, sandbox } from './helpers.js';

// How the app is put together, rather than what the client sends: pathgate
// inside or outside encapsulated contexts, two policies in sibling contexts,
// schema coercion and defaults, user hooks that rewrite values before or
// after the check, or answer first, route constraints. For each, what the
// handler sees against what pathgate checked.

const RULES = ['./public/**', 'rw:./uploads/**'];
const READ_STAR: RouteGuardOptions = { mode: 'read', paths: [{ params: '*' }] };
const WRITE_TO: RouteGuardOptions = { mode: 'write', paths: [{ body: 'to' }] };

/** The handler: counts its calls, answers what it sees. */
function handler() {
  let calls = 0;
  const answer = async (req: FastifyRequest) => {
    calls += 1;
    return { pathgate: req.pathgate, params: req.params, query: req.query, body: req.body };
  };
  return { answer, calls: () => calls };
}

const get = (port: number, path: string) => request(port, { path });

describe('encapsulation: where pathgate is registered decides what it guards', () => {
  it('two policies in sibling contexts: each route is checked by its own context only', async () => {
    const root = sandbox();
    const app = newApp();
    const { answer, calls } = handler();
    const context = (fs: string[]) => async (child: FastifyInstance) => {
      await child.register(pathgate, { root, fs });
      child.get('/f/*', { config: { pathgate: READ_STAR } }, answer);
    };
    await app.register(context(['./public/**']), { prefix: '/a' });
    await app.register(context(['./docs/**']), { prefix: '/b' });
    // No pathgate in this route's tree: its declaration guards nothing (README).
    app.get('/c/*', { config: { pathgate: READ_STAR } }, answer);
    const port = await listen(app);
    expect((await get(port, '/a/f/public/x')).json).toMatchObject({
      pathgate: { params: { '*': `${root}/public/x` } },
    });
    expect((await get(port, '/a/f/docs/x')).json).toEqual(
      denied('params.*', 'path-not-in-allowlist'),
    );
    expect((await get(port, '/b/f/public/x')).status).toBe(403);
    expect((await get(port, '/b/f/docs/x')).status).toBe(200);
    expect((await get(port, '/c/..%2Fetc')).json).toEqual({ params: { '*': '../etc' }, query: {} });
    expect(calls()).toBe(3);
  });

  it('two policies, one route options object with a file spec and a preHandler: each route keeps its own', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(multipart, { preservePath: true });
    let preHandlers = 0;
    const options = {
      preHandler: [async () => void preHandlers++],
      config: {
        pathgate: {
          mode: 'write',
          paths: [
            { params: 'd', under: 'uploads' },
            { file: 'f', under: 'uploads' },
          ],
        } satisfies RouteGuardOptions,
      },
    };
    const store = async (req: FastifyRequest) => {
      const part = await req.file();
      await part?.toBuffer();
      return { path: part?.pathgatePath };
    };
    for (const name of ['a', 'b']) {
      await app.register(
        async (scope) => {
          await scope.register(pathgate, { root, fs: [`rw:./uploads/${name}/**`] });
          scope.post('/u/:d', options, store);
        },
        { prefix: `/${name}` },
      );
    }
    const port = await listen(app);
    const send = (url: string, filename: string) =>
      postMultipart(port, url, [{ disposition: `name="f"; filename="${filename}"`, data: 'x' }]);
    expect((await send('/a/u/a', 'a/x')).json).toEqual({ path: `${root}/uploads/a/x` });
    expect((await send('/b/u/b', 'b/x')).json).toEqual({ path: `${root}/uploads/b/x` });
    expect((await send('/a/u/b', 'b/x')).json).toEqual(denied('params.d', 'path-not-in-allowlist'));
    expect((await send('/b/u/b', 'a/x')).json).toEqual(denied('file f', 'path-not-in-allowlist'));
    expect((await send('/a/u/a', 'b/x')).json).toEqual(denied('file f', 'path-not-in-allowlist'));
    // The params deny comes in onRequest, before any preHandler; the file denies in the handler.
    expect(preHandlers).toBe(4);
  });

  it('inside a fastify-plugin wrapper it guards the parent context; inside a plain plugin, only its own', async () => {
    const root = sandbox();
    const wrapped = newApp();
    await wrapped.register(fp(async (scope) => scope.register(pathgate, { root, fs: RULES })));
    wrapped.get('/f/*', { config: { pathgate: READ_STAR } }, handler().answer);
    const plain = newApp();
    await plain.register(async (scope) => scope.register(pathgate, { root, fs: RULES }));
    plain.get('/f/*', { config: { pathgate: READ_STAR } }, handler().answer);
    expect((await get(await listen(wrapped), '/f/..%2Fetc')).status).toBe(403);
    expect((await get(await listen(plain), '/f/..%2Fetc')).status).toBe(200);
  });

  it('routes declared in a prefixed context before pathgate was registered there are guarded', async () => {
    const root = sandbox();
    const app = newApp();
    const { answer, calls } = handler();
    await app.register(
      async (scope) => {
        scope.get('/f/*', { config: { pathgate: READ_STAR } }, answer);
        await scope.register(pathgate, { root, fs: RULES });
      },
      { prefix: '/v1' },
    );
    const port = await listen(app);
    expect((await get(port, '/v1/f/..%2F..%2Fetc')).status).toBe(403);
    expect((await get(port, '/v1/f/public/a')).status).toBe(200);
    expect(calls()).toBe(1);
  });
});

describe('schema validation runs first: pathgate checks its result', () => {
  async function schemaApp() {
    const root = sandbox();
    const app = newApp({
      ajv: { customOptions: { coerceTypes: 'array', removeAdditional: 'all', useDefaults: true } },
    });
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart);
    const { answer, calls } = handler();
    const query = (d: string) => ({
      type: 'object',
      properties: {
        p: { type: 'array', items: { type: 'string' } },
        d: { type: 'string', default: d },
      },
    });
    const paths = [
      { query: 'p', optional: true },
      { query: 'd', optional: true },
    ];
    app.get('/bad-default', {
      schema: { querystring: query('../../etc/passwd') },
      config: { pathgate: { mode: 'read', paths } },
      handler: answer,
    });
    app.get('/good-default', {
      schema: { querystring: query('public/default') },
      config: { pathgate: { mode: 'read', paths } },
      handler: answer,
    });
    // A file route checks params, query and headers early too, in onRequest, before validation.
    const upload = (d: string) =>
      ({
        schema: { querystring: query(d) },
        config: {
          pathgate: { mode: 'write', paths: [{ query: 'd' }, { file: 'f', under: 'uploads' }] },
        },
        handler: answer,
      }) as const;
    app.post('/upload/bad-default', upload('../../etc/passwd'));
    app.post('/upload/good-default', upload('uploads/default'));
    app.post('/strip', {
      schema: { body: { type: 'object', properties: { keep: { type: 'string' } } } },
      config: { pathgate: WRITE_TO },
      handler: answer,
    });
    return { root, port: await listen(app), calls };
  }

  it('a default filling a missing optional value is checked, and handed over', async () => {
    const { root, port, calls } = await schemaApp();
    expect((await get(port, '/bad-default')).json).toEqual(
      denied('query.d', 'path-not-in-allowlist'),
    );
    expect((await get(port, '/bad-default?d=public/a')).status).toBe(200);
    expect((await get(port, '/good-default')).json).toMatchObject({
      pathgate: { query: { d: `${root}/public/default` } },
      query: { d: 'public/default' },
    });
    expect(calls()).toBe(2);
  });

  it('on a route with a file spec, a default filling a missing required value is checked too', async () => {
    const { root, port, calls } = await schemaApp();
    const file = [{ disposition: 'name="f"; filename="a.txt"', data: 'a' }];
    expect((await postMultipart(port, '/upload/bad-default', file)).json).toEqual(
      denied('query.d', 'path-not-in-allowlist'),
    );
    expect((await postMultipart(port, '/upload/good-default', file)).json).toMatchObject({
      pathgate: { query: { d: `${root}/uploads/default` } },
      query: { d: 'uploads/default' },
    });
    expect(calls()).toBe(1);
  });

  it("coerceTypes 'array': a single value becomes a list, each element checked", async () => {
    const { root, port } = await schemaApp();
    expect((await get(port, '/good-default?p=public/a')).json).toMatchObject({
      pathgate: { query: { p: [`${root}/public/a`] } },
      query: { p: ['public/a'] },
    });
    expect((await get(port, '/good-default?p=public/a&p=../x')).status).toBe(403);
  });

  it('removeAdditional strips a declared key: missing, so denied', async () => {
    const { port, calls } = await schemaApp();
    const answer = await postJson(port, '/strip', { to: 'uploads/a', keep: 'x' });
    expect(answer.json).toEqual(denied('body.to', 'missing-path'));
    expect(calls()).toBe(0);
  });
});

describe("the user's hooks: before the check they are checked, after it they are not", () => {
  async function hookApp() {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    const { answer, calls } = handler();
    const evil = '../../etc/passwd';
    app.post('/pre-validation', {
      preValidation: async (req) => {
        req.body = { to: evil };
      },
      config: { pathgate: WRITE_TO },
      handler: answer,
    });
    app.post('/route-pre-handler', {
      preHandler: async (req) => {
        (req.body as { to: string }).to = evil;
      },
      config: { pathgate: WRITE_TO },
      handler: answer,
    });
    await app.register(async (scope) => {
      scope.get('/context-pre-handler/*', { config: { pathgate: READ_STAR } }, answer);
      // Added after the route, to its context: still before the route's own hooks.
      scope.addHook('preHandler', async (req) => {
        (req.params as Record<string, string>)['*'] = evil;
      });
    });
    await app.register(async (scope) => {
      scope.addHook('onRequest', async (req, reply) => {
        if (req.headers['x-answer'] === 'hijack') {
          reply.hijack();
          reply.raw.end('hijacked');
        } else if (req.headers['x-answer'] === 'reply') {
          return reply.code(401).send({ first: true });
        } else if (req.headers['x-answer'] === 'throw') {
          throw Object.assign(new Error('no'), { statusCode: 400 });
        }
      });
      scope.get('/early/*', { config: { pathgate: READ_STAR } }, answer);
    });
    return { root, port: await listen(app), calls };
  }

  it('a preValidation or a context preHandler that rewrites a value: the new value is checked', async () => {
    const { port, calls } = await hookApp();
    const rewritten = await postJson(port, '/pre-validation', { to: 'uploads/a' });
    expect(rewritten.json).toEqual(denied('body.to', 'path-not-in-allowlist'));
    const params = await get(port, '/context-pre-handler/public/a');
    expect(params.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
    expect(calls()).toBe(0);
  });

  it("a route's own preHandler runs after the check: what it rewrites is raw, request.pathgate keeps the checked path", async () => {
    const { root, port } = await hookApp();
    const answer = await postJson(port, '/route-pre-handler', { to: 'uploads/a' });
    expect(answer.json).toMatchObject({
      pathgate: { body: { to: `${root}/uploads/a` } },
      body: { to: '../../etc/passwd' },
    });
  });

  it('an onRequest hook that answers, hijacks or throws first: its answer, no handler', async () => {
    const { port, calls } = await hookApp();
    const path = '/early/..%2Fetc';
    const with_ = (answer: string) => request(port, { path, headers: { 'x-answer': answer } });
    expect((await with_('hijack')).text).toBe('hijacked');
    expect((await with_('reply')).json).toEqual({ first: true });
    expect((await with_('throw')).status).toBe(400);
    expect((await get(port, path)).status).toBe(403);
    expect(calls()).toBe(0);
  });
});

describe('app hooks added before or after pathgate', () => {
  type Kind = 'onRequest' | 'preValidation' | 'preHandler';
  /** An app hook of `kind`, added before or after pathgate, points `params['*']` out of the rules. */
  async function rewritingApp(kind: Kind, hookAfter: boolean, appWide: boolean) {
    const root = sandbox();
    const app = newApp();
    const { answer, calls } = handler();
    const declare = () => app.get('/f/*', { config: { pathgate: READ_STAR } }, answer);
    const addHook = () =>
      app.addHook(kind, async (req: FastifyRequest) => {
        (req.params as Record<string, string>)['*'] = '../../etc/passwd';
      });
    // Declared before pathgate, the route is guarded by its app-wide hooks.
    if (appWide) declare();
    if (!hookAfter) addHook();
    await app.register(pathgate, { root, fs: RULES });
    if (hookAfter) addHook();
    if (!appWide) declare();
    return { root, answer: await get(await listen(app), '/f/public/a'), calls };
  }

  const KINDS: readonly Kind[] = ['onRequest', 'preValidation', 'preHandler'];
  const ROWS = KINDS.flatMap((kind) =>
    [false, true].flatMap((hookAfter) =>
      [false, true].map((appWide) => [kind, hookAfter, appWide] as const),
    ),
  );

  it.each(
    ROWS.filter(([kind, hookAfter, appWide]) => !(kind === 'preHandler' && hookAfter && appWide)),
  )(
    '%s, added after pathgate %s, app-wide hooks %s: the rewritten value is checked',
    async (kind, hookAfter, appWide) => {
      const { answer, calls } = await rewritingApp(kind, hookAfter, appWide);
      expect(answer.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
      expect(calls()).toBe(0);
    },
  );

  // README (registration order): the app-wide preHandler runs in registration
  // order, so an app preHandler added after it runs after the check.
  it('a preHandler added after pathgate, on a route its app-wide hooks guard: what it rewrites is raw, request.pathgate keeps the checked path', async () => {
    const { root, answer } = await rewritingApp('preHandler', true, true);
    expect(answer.json).toMatchObject({
      pathgate: { params: { '*': `${root}/public/a` } },
      params: { '*': '../../etc/passwd' },
    });
  });
});

describe('routes that share a URL, or a declaration', () => {
  it('a version constraint: the constrained route is checked, its HEAD route too', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    const { answer, calls } = handler();
    app.get('/v/*', { constraints: { version: '1.0.0' }, config: { pathgate: READ_STAR } }, answer);
    app.get('/v/*', answer);
    const port = await listen(app);
    const versioned = { 'accept-version': '1.x' };
    const bad = await request(port, { path: '/v/..%2Fetc', headers: versioned });
    expect(bad.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
    const head = await request(port, { method: 'HEAD', path: '/v/..%2Fetc', headers: versioned });
    expect(head.status).toBe(403);
    expect(calls()).toBe(0);
    // The unconstrained route declares nothing: request.pathgate is null there.
    expect((await get(port, '/v/..%2Fetc')).json).toMatchObject({ pathgate: null });
  });

  /**
   * A listening app with pathgate; `declare` runs before its registration
   * (`appWide`: its app-wide hooks guard those routes) or after it.
   */
  async function declaredApp(appWide: boolean, declare: (app: FastifyInstance) => unknown) {
    const root = sandbox();
    const app = newApp();
    if (appWide) await declare(app);
    await app.register(pathgate, { root, fs: RULES });
    if (!appWide) await declare(app);
    return { root, port: await listen(app) };
  }

  it.each([false, true])(
    'a host constraint, app-wide hooks %s: each host gets its own route, checked by its own declaration',
    async (appWide) => {
      const { answer, calls } = handler();
      const under: RouteGuardOptions = { mode: 'read', paths: [{ params: '*', under: 'public' }] };
      const { root, port } = await declaredApp(appWide, (app) => {
        const host = (name: string, pathgate: RouteGuardOptions) => ({
          constraints: { host: name },
          config: { pathgate },
        });
        app.get('/h/*', host('a.test', READ_STAR), answer);
        app.get('/h/*', host('b.test', under), answer);
      });
      const at = (host: string, path: string) => request(port, { path, headers: { host } });
      const checked = { pathgate: { params: { '*': `${root}/public/a` } } };
      expect((await at('a.test', '/h/public/a')).json).toMatchObject(checked);
      expect((await at('b.test', '/h/a')).json).toMatchObject(checked);
      const outside = await at('a.test', '/h/a');
      expect(outside.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
      expect((await at('b.test', '/h/..%2F..%2Fx')).status).toBe(403);
      expect(calls()).toBe(2);
    },
  );

  it.each([false, true])(
    "a prefix's '/' route, prefixTrailingSlash 'both', app-wide hooks %s: both URLs Fastify registers are checked",
    async (appWide) => {
      const { answer, calls } = handler();
      const read: RouteGuardOptions = { mode: 'read', paths: [{ params: 'dir', under: 'public' }] };
      const { root, port } = await declaredApp(appWide, (app) =>
        app.register(
          async (scope) => {
            scope.get('/', { prefixTrailingSlash: 'both', config: { pathgate: read } }, answer);
          },
          { prefix: '/d/:dir' },
        ),
      );
      for (const path of ['/d/..%2F..%2Fx', '/d/..%2F..%2Fx/']) {
        expect((await get(port, path)).json).toEqual(denied('params.dir', 'path-not-in-allowlist'));
        expect((await request(port, { method: 'HEAD', path })).status).toBe(403);
      }
      expect((await get(port, '/d/a/')).json).toMatchObject({
        pathgate: { params: { dir: `${root}/public/a` } },
      });
      expect(calls()).toBe(1);
    },
  );

  it('exposeHeadRoutes false: a HEAD route of its own, or one a GET route asks for, is checked', async () => {
    const root = sandbox();
    const app = newApp({ exposeHeadRoutes: false });
    await app.register(pathgate, { root, fs: RULES });
    const { answer, calls } = handler();
    app.head('/own/*', { config: { pathgate: READ_STAR } }, answer);
    app.get('/asked/*', { exposeHeadRoute: true, config: { pathgate: READ_STAR } }, answer);
    app.get('/none/*', { config: { pathgate: READ_STAR } }, answer);
    const port = await listen(app);
    const head = (path: string) => request(port, { method: 'HEAD', path });
    expect((await head('/own/..%2Fetc')).status).toBe(403);
    expect((await head('/asked/..%2Fetc')).status).toBe(403);
    expect((await head('/none/..%2Fetc')).status).toBe(404);
    expect((await head('/own/public/a')).status).toBe(200);
    expect(calls()).toBe(1);
  });

  it('fastify.route() with several methods: each is checked', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: RULES });
    const { answer, calls } = handler();
    app.route({
      method: ['GET', 'DELETE'],
      url: '/m/*',
      config: { pathgate: READ_STAR },
      handler: answer,
    });
    const port = await listen(app);
    for (const method of ['GET', 'HEAD', 'DELETE']) {
      expect((await request(port, { method, path: '/m/..%2Fetc' })).status).toBe(403);
    }
    expect((await request(port, { method: 'DELETE', path: '/m/public/a' })).status).toBe(200);
    expect(calls()).toBe(1);
  });
});

describe('a deny after a hook that sent the headers (an event stream)', () => {
  interface LogLine {
    level: number;
    msg: string;
  }

  /** What the client read, and whether the response came to its end or was cut. */
  interface Streamed {
    status: number;
    text: string;
    complete: boolean;
  }

  /**
   * Reads the response to its end or its cut; a hang fails the request after
   * 2 s. `pending`: the request announces a body it never sends.
   */
  function stream(port: number, path: string, pending = false): Promise<Streamed> {
    return new Promise((resolve, reject) => {
      const headers = pending ? { 'content-length': '10' } : {};
      const req = http.get(
        { host: '127.0.0.1', port, path, headers, agent: false, timeout: 2000 },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            text += chunk;
          });
          res.on('error', () => {}); // a cut response: `complete` says so
          res.on('close', () =>
            resolve({ status: res.statusCode ?? 0, text, complete: res.complete }),
          );
        },
      );
      req.on('timeout', () => req.destroy(new Error('no end of the response in 2 s')));
      req.on('error', reject);
    });
  }

  /** Where pathgate's check runs on each route: its guarded handler, its preHandler, its onRequest. */
  const ROUTES = {
    '/in-handler': { mode: 'read', paths: [{ query: 'p' }] },
    '/pre-handler': { mode: 'read', paths: [{ query: 'p' }] },
    '/on-request': { mode: 'read', paths: [{ query: 'p' }, { file: true, optional: true }] },
  } satisfies Record<string, RouteGuardOptions>;

  /** `ends`: onDeny writes a last event and ends the stream itself. */
  async function streamApp(reportOnly: boolean, ends = false) {
    const root = sandbox();
    const lines: LogLine[] = [];
    const app = newApp({
      logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
    });
    let denies = 0;
    await app.register(pathgate, {
      root,
      fs: RULES,
      reportOnly,
      onDeny: (_denial, _req, reply) => {
        denies += 1;
        if (ends) reply.raw.end('data: denied\n\n');
      },
    });
    await app.register(multipart);
    // Starts a 200 event stream, as a server-sent events app does before its routes' checks.
    app.addHook('onRequest', async (_req, reply) => {
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
      reply.raw.write('data: open\n\n');
    });
    let calls = 0;
    const handle = async (_req: FastifyRequest, reply: FastifyReply) => {
      calls += 1;
      reply.hijack();
      reply.raw.end('data: handled\n\n');
    };
    for (const [url, guard] of Object.entries(ROUTES)) {
      const preHandler = url === '/pre-handler' ? [async () => {}] : [];
      app.get(url, { config: { pathgate: guard }, preHandler }, handle);
    }
    const port = await listen(app);
    const logged = (pattern: RegExp) => lines.filter((l) => pattern.test(l.msg)).length;
    const noisy = () => lines.filter((l) => l.level >= 40).map((l) => l.msg);
    return { port, logged, noisy, calls: () => calls, denies: () => denies };
  }

  it.each(Object.keys(ROUTES))(
    'enforced, %s: no handler, onDeny and one log line, the stream cut, nothing noisy',
    async (url) => {
      const { port, logged, noisy, calls, denies } = await streamApp(false);
      const res = await stream(port, `${url}?p=../etc`);
      expect(res).toEqual({ status: 200, text: 'data: open\n\n', complete: false });
      expect(calls()).toBe(0);
      expect(denies()).toBe(1);
      expect(logged(/^pathgate: denied$/)).toBe(1);
      expect(noisy()).toEqual([]);
    },
  );

  // The deny closes a connection whose body is still coming, as ever; its
  // header cannot go on a response whose headers left (Node would throw).
  it.each(Object.keys(ROUTES))(
    'enforced, %s, a body still arriving: the stream cut, nothing noisy',
    async (url) => {
      const { port, noisy, calls, denies } = await streamApp(false);
      const res = await stream(port, `${url}?p=../etc`, true);
      expect(res).toEqual({ status: 200, text: 'data: open\n\n', complete: false });
      expect([calls(), denies(), noisy()]).toEqual([0, 1, []]);
    },
  );

  it.each(Object.keys(ROUTES))(
    'report-only, %s: reported once, the handler ends the stream',
    async (url) => {
      const { port, logged, noisy, calls, denies } = await streamApp(true);
      const res = await stream(port, `${url}?p=../etc`);
      expect(res).toEqual({ status: 200, text: 'data: open\n\ndata: handled\n\n', complete: true });
      expect(calls()).toBe(1);
      expect(denies()).toBe(1);
      expect(noisy()).toEqual(['pathgate: would deny (report-only)']);
      expect(logged(/would deny/)).toBe(1);
    },
  );

  // Its body still arriving: the stream was sent keep-alive, so no header
  // can say the connection closes; the next request must not go unanswered
  // on a connection left open.
  it.each(Object.keys(ROUTES))(
    'an onDeny that ends the stream itself, %s, a body still arriving: its end, then the connection closes',
    async (url) => {
      const { port, noisy, calls } = await streamApp(false, true);
      const denied = rawRequest(`GET ${url}?p=../etc HTTP/1.1`, ['content-length: 10']);
      const next = rawRequest(`GET ${url}?p=public/a HTTP/1.1`);
      const got = await exchangeRaw(port, [denied, Buffer.concat([Buffer.alloc(10), next])], {
        gapMs: 100,
      });
      const answers = got.responses.map((r) => [r.status, r.text]);
      expect({ answers, closed: got.closed, error: got.error, rest: got.rest }).toEqual({
        answers: [[200, 'data: open\n\ndata: denied\n\n']],
        closed: true,
        error: undefined,
        rest: '',
      });
      expect([calls(), noisy()]).toEqual([0, []]);
    },
  );

  // A body sent on and on, read until lingerMs ends: test/connection.test.ts, for both adapters.

  it.each([false, true])(
    'an onDeny that ends the stream itself (report-only %s): its end, no cut, no handler',
    async (reportOnly) => {
      const { port, noisy, calls } = await streamApp(reportOnly, true);
      const res = await stream(port, '/in-handler?p=../etc');
      expect(res).toEqual({ status: 200, text: 'data: open\n\ndata: denied\n\n', complete: true });
      expect(calls()).toBe(0);
      expect(noisy()).toEqual(reportOnly ? ['pathgate: would deny (report-only)'] : []);
    },
  );
});
