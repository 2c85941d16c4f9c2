import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate, { type RouteGuardOptions } from '../src/index.js';
import { denied, listen, newApp, request, sandbox } from './helpers.js';

// Per-route declarations: compiled at startup (a bad one stops the app with a
// message naming the route and the selector), and enforced whatever the
// registration order: routes declared before the plugin, in child contexts
// registered before or after it, and the HEAD routes Fastify adds.

const RULES = ['./public/**', 'rw:./uploads/**'];
const READ_STAR: RouteGuardOptions = { mode: 'read', paths: [{ params: '*' }] };

async function withPlugin(app: FastifyInstance, root = sandbox()): Promise<string> {
  await app.register(pathgate, { root, fs: RULES });
  return root;
}

describe('a bad declaration stops startup, naming the route and the selector', () => {
  const ROWS: readonly (readonly [string, unknown, string])[] = [
    ['a bad mode', { mode: 'rw', paths: [{ params: '*' }] }, 'mode must be "read" or "write"'],
    ['no paths', { mode: 'read', paths: [] }, 'paths must be a non-empty array'],
    ['an unknown key', { mode: 'read', paths: [{ parms: '*' }] }, 'paths[0]: unknown key "parms"'],
    [
      'two sources',
      { mode: 'read', paths: [{ params: 'a', query: 'b' }] },
      'paths[0]: name exactly one of params, query, body, headers, file',
    ],
    [
      'an empty body key',
      { mode: 'read', paths: [{ params: '*' }, { body: '' }] },
      'paths[1]: body must be a non-empty key or a non-empty list of non-empty keys and non-negative integer indexes',
    ],
    [
      'a negative index',
      { mode: 'read', paths: [{ body: ['a', -1] }] },
      'paths[0]: body must be a non-empty key',
    ],
    [
      'a header that is not a name',
      { mode: 'read', paths: [{ headers: ['x'] }] },
      'paths[0]: headers must be a header name',
    ],
    [
      'a file that is not a field',
      { mode: 'read', paths: [{ file: false }] },
      'paths[0]: file must be a field name or true (every file)',
    ],
    [
      'under outside the root',
      { mode: 'read', paths: [{ params: '*', under: '../..' }] },
      'paths[0]: under must be a directory inside the root',
    ],
    [
      'optional not a boolean',
      { mode: 'read', paths: [{ params: '*', optional: 'yes' }] },
      'paths[0]: optional must be a boolean',
    ],
    [
      'an extra key',
      { mode: 'read', paths: [{ params: '*' }], modes: 1 },
      'unknown key "modes" (use mode and paths)',
    ],
    ['null', null, 'the declaration must be an object'],
  ];

  it.each(ROWS)('%s: at the declaration, after the plugin', async (_name, declaration, message) => {
    const app = newApp();
    await withPlugin(app);
    const declare = () =>
      app.get(
        '/files/*',
        { config: { pathgate: declaration as RouteGuardOptions } },
        async () => 'ran',
      );
    expect(declare).toThrow(TypeError);
    expect(declare).toThrow(`pathgate: route GET /files/*: ${message}`);
  });

  it('in a child context, with its prefix: ready() rejects', async () => {
    const app = newApp();
    await withPlugin(app);
    app.register(
      async (api) => {
        api.post(
          '/move',
          {
            config: {
              pathgate: { mode: 'write', paths: [{ body: 'from' }, { bdy: 'to' } as never] },
            },
          },
          async () => 'ran',
        );
      },
      { prefix: '/api' },
    );
    await expect(app.ready()).rejects.toThrow(
      'pathgate: route POST /api/move: paths[1]: unknown key "bdy"',
    );
  });

  it('several methods are named together', async () => {
    const app = newApp();
    await withPlugin(app);
    const declare = () =>
      app.route({
        method: ['GET', 'POST'],
        url: '/m',
        config: { pathgate: { mode: 'x' } as never },
        handler: async () => 'ran',
      });
    expect(declare).toThrow('pathgate: route GET,POST /m: mode must be "read" or "write"');
  });
});

describe('fail closed: every declared route is guarded, whatever the order', () => {
  async function probe(app: FastifyInstance, root: string, url: string, calls: () => number) {
    const port = await listen(app);
    const bad = await request(port, { path: `${url}/..%2F..%2Fetc%2Fpasswd` });
    expect(bad.json).toEqual(denied('params.*', 'path-not-in-allowlist'));
    expect(calls()).toBe(0);
    const ok = await request(port, { path: `${url}/public/a` });
    expect(ok.json).toEqual({ '*': `${root}/public/a` });
    expect(calls()).toBe(1);
    return port;
  }

  it('a route declared at the root before the plugin was registered', async () => {
    const app = newApp();
    let calls = 0;
    app.get('/early/*', { config: { pathgate: READ_STAR } }, async (req) => {
      calls++;
      return req.pathgate?.params;
    });
    const root = await withPlugin(app);
    await probe(app, root, '/early', () => calls);
  });

  it('a child context registered before the plugin', async () => {
    const app = newApp();
    let calls = 0;
    app.register(async (child) => {
      child.get('/child/*', { config: { pathgate: READ_STAR } }, async (req) => {
        calls++;
        return req.pathgate?.params;
      });
      child.get('/child-open', async (req) => ({ pathgate: req.pathgate }));
    });
    const root = await withPlugin(app);
    const port = await probe(app, root, '/child', () => calls);
    // Unguarded routes there read null too, not undefined.
    expect((await request(port, { path: '/child-open' })).json).toEqual({ pathgate: null });
  });

  it('child and grandchild contexts registered after the plugin', async () => {
    const app = newApp();
    let calls = 0;
    const root = await withPlugin(app);
    app.register(async (child) => {
      child.register(
        async (grandchild) => {
          grandchild.get('/g/*', { config: { pathgate: READ_STAR } }, async (req) => {
            calls++;
            return req.pathgate?.params;
          });
        },
        { prefix: '/deep' },
      );
    });
    await probe(app, root, '/deep/g', () => calls);
  });

  it('the HEAD route Fastify adds for a GET is guarded too', async () => {
    const app = newApp();
    await withPlugin(app);
    app.get('/files/*', { config: { pathgate: READ_STAR } }, async () => 'ok');
    const port = await listen(app);
    expect((await request(port, { method: 'HEAD', path: '/files/..%2F..%2Fx' })).status).toBe(403);
    expect((await request(port, { method: 'HEAD', path: '/files/public/a' })).status).toBe(200);
  });

  it('one declaration object shared by several routes guards each', async () => {
    const app = newApp();
    const root = await withPlugin(app);
    const config = { config: { pathgate: READ_STAR } };
    app.get('/one/*', config, async (req) => req.pathgate?.params);
    app.get('/two/*', config, async (req) => req.pathgate?.params);
    const port = await listen(app);
    for (const url of ['/one', '/two']) {
      expect((await request(port, { path: `${url}/..%2Fx` })).status).toBe(403);
      expect((await request(port, { path: `${url}/public/b` })).json).toEqual({
        '*': `${root}/public/b`,
      });
    }
  });

  it('a bad declaration on a route declared before the plugin: 500 on use, logged, the handler never runs', async () => {
    const lines: { msg?: string; err?: { message?: string } }[] = [];
    const app = newApp({
      logger: { level: 'error', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
    });
    let calls = 0;
    app.get(
      '/early',
      { config: { pathgate: { mode: 'read', paths: [{ qury: 'p' }] } as never } },
      async () => {
        calls++;
        return 'ran';
      },
    );
    await withPlugin(app);
    const port = await listen(app);
    for (let i = 0; i < 2; i++) {
      const res = await request(port, { path: '/early?p=public/a' });
      expect(res.status).toBe(500);
      expect(res.json).toEqual({
        statusCode: 500,
        code: 'PATHGATE_ROUTE_CONFIG',
        error: 'Internal Server Error',
        message: 'pathgate: this route has an invalid path declaration (see the server log)',
      });
    }
    expect(calls).toBe(0);
    const logged = lines.find((l) => l.msg === 'pathgate: invalid route declaration');
    expect(logged?.err?.message).toBe('pathgate: route GET /early: paths[0]: unknown key "qury"');
  });
});
