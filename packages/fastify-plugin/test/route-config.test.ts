import multipart from '@fastify/multipart';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate, { type RouteGuardOptions } from '../src/index.js';
import { registeredBelow, routesMayEscape } from '../src/reach.js';
import {
  denied,
  filesIn,
  listen,
  newApp,
  postJson,
  postMultipart,
  request,
  sandbox,
} from './helpers.js';

// Per-route declarations: compiled at startup (a bad one stops the app with a
// message naming the route and the selector), and enforced whatever the
// registration order: routes declared before the plugin, in child contexts
// registered before or after it, and the HEAD routes Fastify adds. Which
// hooks a route gets: only guarded routes get any, unless some route may
// have escaped the onRoute hook, and then app-wide hooks guard it.

const RULES = ['./public/**', 'rw:./uploads/**'];
const READ_STAR: RouteGuardOptions = { mode: 'read', paths: [{ params: '*' }] };
const READ_QUERY: RouteGuardOptions = { mode: 'read', paths: [{ query: 'p' }] };
const UPLOAD_INTO: RouteGuardOptions = {
  mode: 'write',
  paths: [{ params: 'dir' }, { file: true, under: 'uploads' }],
};

/** One multipart file part, `x`, in the field `f`. */
const filePart = (filename: string) => ({
  disposition: `name="f"; filename="${filename}"`,
  data: 'x',
});

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
    ['a string', 'read', 'the declaration must be an object'],
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

describe("a params spec must name a parameter of the route's URL", () => {
  const declare = async (url: string, ...names: string[]) => {
    const app = newApp();
    await withPlugin(app);
    const paths = names.map((name) => ({ params: name }));
    return () => app.get(url, { config: { pathgate: { mode: 'read', paths } } }, async () => 'ok');
  };

  it.each([
    ['/files/*', 'path', '*'],
    ['/t/:file', 'name', 'file'],
    ['/t/:file', '*', 'file'],
    ['/plain', 'file', 'none'],
    ['/x::y/:id', 'y', 'id'],
    ['/near/:lat-:lng', 'lon', 'lat, lng'],
    // find-my-way ends a name only at `-`, `.` or `/`: this route has one parameter.
    ['/mail/:user@:host', 'host', 'user@:host'],
  ])(
    '%s with params %s: a TypeError naming the route and its parameters',
    async (url, name, has) => {
      const route = await declare(url, name);
      expect(route).toThrow(
        `pathgate: route GET ${url}: params "${name}" is not a parameter of this route (its parameters: ${has})`,
      );
    },
  );

  it.each([
    ['/files/*', ['*']],
    ['/near/:lat-:lng', ['lat', 'lng']],
    ['/f/:file.:ext', ['file', 'ext']],
    ['/opt/:dir/:file?', ['dir', 'file']],
    ['/x::y/:id', ['id']],
    ['/mail/:user@:host', ['user@:host']],
    ['/pair/:a::b', ['a::b']],
    // A regex parameter is not parsed here: its names are not checked.
    ['/r/:id(^\\d+)', ['anything']],
  ])('%s with params %j: accepted', async (url, names) => {
    expect(await declare(url, ...names)).not.toThrow();
  });

  it('a name holding a colon is the one find-my-way fills, and its value is checked', async () => {
    const app = newApp();
    const root = await withPlugin(app);
    const paths = [{ params: 'user@:host', under: 'public' }];
    app.get(
      '/mail/:user@:host',
      { config: { pathgate: { mode: 'read', paths } } },
      async (req) => ({
        params: req.params,
        checked: req.pathgate?.params,
      }),
    );
    const port = await listen(app);
    expect((await request(port, { path: '/mail/me@example' })).json).toEqual({
      params: { 'user@:host': 'me@example' },
      checked: { 'user@:host': `${root}/public/me@example` },
    });
    const climbing = await request(port, { path: '/mail/..%2F..%2Fetc@x' });
    expect(climbing.json).toEqual(denied('params.user@:host', 'path-not-in-allowlist'));
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

  it('a route declared at the root before the plugin was registered, with others after it', async () => {
    const app = newApp();
    let calls = 0;
    app.get('/early/*', { config: { pathgate: READ_STAR } }, async (req) => {
      calls++;
      return req.pathgate?.params;
    });
    const root = await withPlugin(app);
    app.get('/late/*', { config: { pathgate: READ_STAR } }, async () => 'late');
    await probe(app, root, '/early', () => calls);
  });

  it('a route with a file spec declared before the plugin: its params early, then each filename', async () => {
    const app = newApp();
    await app.register(multipart);
    let calls = 0;
    app.post('/up/:dir', { config: { pathgate: UPLOAD_INTO } }, async (req) => {
      calls++;
      const stored: unknown[] = [];
      for await (const part of req.files()) {
        await part.toBuffer();
        stored.push(part.pathgatePath);
      }
      return { stored, files: req.pathgate?.files.length };
    });
    const root = await withPlugin(app);
    const port = await listen(app);
    const bad = await postMultipart(port, '/up/..%2F..', [filePart('a.txt')]);
    expect(bad.json).toEqual(denied('params.dir', 'path-not-in-allowlist'));
    expect(calls).toBe(0);
    const dotfile = await postMultipart(port, '/up/uploads%2Fsub', [filePart('.htaccess')]);
    expect(dotfile.json).toEqual(denied('file *', 'path-not-in-allowlist'));
    expect(filesIn(root)).toEqual([]);
    const ok = await postMultipart(port, '/up/uploads%2Fsub', [filePart('a.txt')]);
    expect(ok.json).toEqual({ stored: [`${root}/uploads/a.txt`], files: 1 });
  });

  it.each([
    ['before', true],
    ['after', false],
  ])(
    'a declaration is read once: changing it later changes nothing (declared %s the plugin)',
    async (_when, before) => {
      const app = newApp();
      const declaration: { mode: 'read' | 'write'; paths: { query: string }[] } = {
        mode: 'read',
        paths: [{ query: 'p' }],
      };
      const declare = () =>
        app.get('/r', { config: { pathgate: declaration } }, async (req) => req.pathgate?.query);
      if (before) declare();
      const root = await withPlugin(app);
      if (!before) declare();
      const port = await listen(app);
      const allowed = { p: `${root}/public/a` };
      expect((await request(port, { path: '/r?p=public%2Fa' })).json).toEqual(allowed);
      declaration.mode = 'write';
      expect((await request(port, { path: '/r?p=public%2Fa' })).json).toEqual(allowed);
    },
  );

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

  it("a declaration another onRoute hook adds is guarded when that hook runs before pathgate's", async () => {
    const app = newApp();
    app.addHook('onRoute', (route) => {
      if (route.url.startsWith('/auto/')) route.config = { ...route.config, pathgate: READ_STAR };
    });
    const root = await withPlugin(app);
    app.get('/auto/*', async (req) => req.pathgate?.params);
    const port = await listen(app);
    expect((await request(port, { path: '/auto/..%2F..%2Fx' })).json).toEqual(
      denied('params.*', 'path-not-in-allowlist'),
    );
    expect((await request(port, { path: '/auto/public/a' })).json).toEqual({
      '*': `${root}/public/a`,
    });
  });

  it.each([
    ['set', undefined],
    ['replaced', READ_QUERY],
  ])(
    "a declaration an onRoute hook after pathgate's %s: the app does not start, and says why",
    async (done, before) => {
      const app = newApp();
      await withPlugin(app);
      app.addHook('onRoute', (route) => {
        if (route.url === '/late/*') route.config = { ...route.config, pathgate: READ_STAR };
      });
      app.get('/free', async () => 'free');
      app.get(
        '/late/*',
        before === undefined ? {} : { config: { pathgate: before } },
        async () => 'x',
      );
      await expect(app.ready()).rejects.toThrow(
        new TypeError(
          `pathgate: route GET /late/*: config.pathgate was ${done} by an onRoute hook that runs after pathgate's, so the route would not be guarded as declared; add that hook before registering pathgate`,
        ),
      );
    },
  );

  it.each([null, undefined])(
    "a config an onRoute hook after pathgate's took away (%s): the app does not start, and says why",
    async (config) => {
      const app = newApp();
      await withPlugin(app);
      app.addHook('onRoute', (route) => {
        if (route.url === '/gone/*') route.config = config as unknown as typeof route.config;
      });
      app.get('/gone/*', { config: { pathgate: READ_STAR } }, async () => 'x');
      await expect(app.ready()).rejects.toThrow(
        new TypeError(
          "pathgate: route GET /gone/*: config.pathgate was replaced by an onRoute hook that runs after pathgate's, so the route would not be guarded as declared; add that hook before registering pathgate",
        ),
      );
    },
  );

  it('a config.pathgate getter that builds a new declaration on each read: the app does not start, and says why', async () => {
    const app = newApp();
    await withPlugin(app);
    const config = {
      get pathgate() {
        return { ...READ_STAR };
      },
    };
    app.get('/made/*', { config }, async () => 'x');
    await expect(app.ready()).rejects.toThrow(
      new TypeError(
        "pathgate: route GET /made/*: config.pathgate is a getter that returned another declaration when read again; declare the object itself (Fastify reads a route's config more than once)",
      ),
    );
  });

  it("an onRoute hook after pathgate's that keeps the declaration: the app starts and is guarded", async () => {
    const app = newApp();
    await withPlugin(app);
    app.addHook('onRoute', (route) => {
      route.config = { ...route.config }; // a new config object, the same declaration
    });
    app.get('/kept/*', { config: { pathgate: READ_STAR } }, async () => 'x');
    const port = await listen(app);
    expect((await request(port, { path: '/kept/..%2F..%2Fx' })).json).toEqual(
      denied('params.*', 'path-not-in-allowlist'),
    );
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

  it('a params spec naming no parameter of a route declared before the plugin: the same 500, logged', async () => {
    const lines: { msg?: string; err?: { message?: string } }[] = [];
    const app = newApp({
      logger: { level: 'error', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
    });
    const declare = (name: string) => ({
      config: { pathgate: { mode: 'read', paths: [{ params: name }] } as const },
    });
    app.get('/early/*', declare('path'), async () => 'ran');
    app.get('/fine/:p', declare('p'), async () => 'ran');
    await withPlugin(app);
    const port = await listen(app);
    const res = await request(port, { path: '/early/public/a' });
    expect([res.status, (res.json as { code?: string }).code]).toEqual([
      500,
      'PATHGATE_ROUTE_CONFIG',
    ]);
    const logged = lines.find((l) => l.msg === 'pathgate: invalid route declaration');
    expect(logged?.err?.message).toBe(
      'pathgate: route GET /early/*: params "path" is not a parameter of this route (its parameters: *)',
    );
    expect((await request(port, { path: '/fine/public' })).text).toBe('ran');
  });
});

/** The pathgate hook names printed for the app's routes (`printRoutes` lists each route's hooks). */
function pathgateHooks(app: FastifyInstance): string[] {
  return [...new Set(app.printRoutes({ includeHooks: true }).match(/pathgate\w+/g) ?? [])].sort();
}

describe('which hooks: only guarded routes pay, when every route passed the onRoute hook', () => {
  it('registered first: no hook on a guarded route without hooks of its own, none anywhere else', async () => {
    const app = newApp();
    await withPlugin(app);
    app.get('/open', async () => 'open');
    app.get('/files/*', { config: { pathgate: READ_STAR } }, async () => 'ok');
    app.register(async (child) => {
      child.get('/child/open', async () => 'open');
    });
    await app.ready();
    expect(app.printRoutes({ includeHooks: true })).not.toContain('pathgate');
    const port = await listen(app);
    expect((await request(port, { path: '/files/..%2Fx' })).status).toBe(403);
    expect((await request(port, { path: '/files/public/a' })).text).toBe('ok');
  });

  it("a guarded route with a preHandler of its own gets pathgate's preHandler before it", async () => {
    const app = newApp();
    await withPlugin(app);
    const preHandler = async () => {};
    app.get('/files/*', { config: { pathgate: READ_STAR }, preHandler }, async () => 'ok');
    await app.ready();
    expect(pathgateHooks(app)).toEqual(['pathgatePreHandler']);
  });

  it('a route with a file spec also gets onRequest and onSend', async () => {
    const app = newApp();
    await withPlugin(app);
    const upload: RouteGuardOptions = { mode: 'write', paths: [{ file: true, under: 'uploads' }] };
    app.post('/up', { config: { pathgate: upload } }, async () => 'ok');
    await app.ready();
    expect(pathgateHooks(app)).toEqual([
      'pathgateOnRequest',
      'pathgateOnSend',
      'pathgatePreHandler',
    ]);
  });

  // Should Fastify's internal list of child contexts move, this test still
  // passes: the plugin would then install app-wide hooks in every app (slower,
  // still safe), and the three tests above, which expect none, are the ones that fail.
  it('a child context made before the plugin, even without routes, brings the app-wide hooks', async () => {
    const app = newApp();
    app.register(async () => {});
    await withPlugin(app);
    app.get('/open', async () => 'open');
    await app.ready();
    expect(pathgateHooks(app)).toEqual([
      'pathgateAppWideOnRequest',
      'pathgateAppWideOnSend',
      'pathgateAppWidePreHandler',
    ]);
  });

  // Fastify's internals are found by their symbols' descriptions: one renamed
  // must read as "cannot tell", which installs the app-wide hooks. A context
  // with no routes, its not-found flag found and clear: only the list decides.
  it('a list of child contexts that cannot be found: routes may escape, and no pathgate below', () => {
    const context = (internals: Record<string, unknown>) =>
      Object.assign(
        { printRoutes: () => '(empty tree)' },
        ...Object.entries(internals).map(([name, value]) => ({ [Symbol(name)]: value })),
      ) as FastifyInstance;
    const flag = { 'fastify.canSetNotFoundHandler': true };
    expect(routesMayEscape(context({ ...flag, 'fastify.children': [] }))).toBe(false);
    expect(routesMayEscape(context(flag))).toBe(true);
    expect(registeredBelow(context(flag))).toBe(false);
  });

  it('a route added later to a context made before the plugin (the router empty then) is guarded', async () => {
    const app = newApp();
    let early: FastifyInstance | undefined;
    app.register(async (child) => {
      early = child;
    });
    const root = await withPlugin(app);
    let calls = 0;
    early?.get('/late/*', { config: { pathgate: READ_STAR } }, async (req) => {
      calls++;
      return req.pathgate?.params;
    });
    const port = await listen(app);
    expect((await request(port, { path: '/late/..%2F..%2Fetc' })).status).toBe(403);
    expect(calls).toBe(0);
    expect((await request(port, { path: '/late/public/a' })).json).toEqual({
      '*': `${root}/public/a`,
    });
  });

  // The app-wide hooks wrap multipart's parts() on a route with body specs; where
  // @fastify/multipart is not registered there is none, and none is made up.
  it('a body route in a context made before the plugin, without multipart: checked, and given no parts()', async () => {
    const app = newApp();
    let early: FastifyInstance | undefined;
    app.register(async (child) => {
      early = child;
    });
    await withPlugin(app);
    const body: RouteGuardOptions = { mode: 'read', paths: [{ body: 'p' }] };
    early?.post(
      '/late',
      { config: { pathgate: body } },
      async (req) => typeof Reflect.get(req, 'parts'),
    );
    const port = await listen(app);
    expect((await postJson(port, '/late', { p: '../x' })).status).toBe(403);
    expect(await postJson(port, '/late', { p: 'public/a' })).toMatchObject({
      status: 200,
      text: 'undefined',
    });
  });

  it('a route declared right after a register() that was not awaited is guarded', async () => {
    const app = newApp();
    const root = sandbox();
    app.register(pathgate, { root, fs: RULES });
    app.get('/now/*', { config: { pathgate: READ_STAR } }, async (req) => req.pathgate?.params);
    const port = await listen(app);
    expect((await request(port, { path: '/now/..%2Fx' })).status).toBe(403);
    expect((await request(port, { path: '/now/public/a' })).json).toEqual({
      '*': `${root}/public/a`,
    });
  });

  it('with the app-wide hooks installed, a route declared after the plugin is checked once', async () => {
    const denials: string[] = [];
    const app = newApp();
    app.get('/early', async () => 'early');
    const root = sandbox();
    await app.register(pathgate, {
      root,
      fs: RULES,
      onDeny: (denial) => {
        denials.push(denial.label);
      },
    });
    app.get('/late/*', { config: { pathgate: READ_STAR } }, async (req) => req.pathgate?.params);
    app.post(
      '/up/:dir',
      { config: { pathgate: UPLOAD_INTO } },
      async (req) => req.pathgate?.params,
    );
    app.register(async (child) => {
      child.get(
        '/child/*',
        { config: { pathgate: READ_STAR } },
        async (req) => req.pathgate?.params,
      );
    });
    const port = await listen(app);
    for (const url of ['/late', '/child']) {
      expect((await request(port, { path: `${url}/..%2Fx` })).status).toBe(403);
      expect((await request(port, { path: `${url}/public/b` })).json).toEqual({
        '*': `${root}/public/b`,
      });
    }
    const up = await postMultipart(port, '/up/..%2F..', [filePart('a.txt')]);
    expect(up.json).toEqual(denied('params.dir', 'path-not-in-allowlist'));
    expect(denials).toEqual(['params.*', 'params.*', 'params.dir']);
  });
});

/** What the route `GET /a/*`, declared next, holds under `name` once pathgate guarded it. */
function copyOptionOfA(app: FastifyInstance, name: 'handler' | 'preHandler'): () => unknown {
  let copied: unknown;
  app.addHook('onRoute', (route) => {
    if (route.url === '/a/*' && route.method === 'GET') copied = route[name];
  });
  return () => copied;
}

/** `GET /b` runs its own `query.p` guard only, and its handler answers `request.pathgate`. */
async function expectOwnQueryGuard(port: number, root: string): Promise<void> {
  const ok = await request(port, { path: '/b?p=public%2Fa' });
  expect(ok.json).toMatchObject({ params: {}, query: { p: `${root}/public/a` } });
  expect((await request(port, { path: '/b?p=..%2F..%2Fx' })).json).toEqual(
    denied('query.p', 'path-not-in-allowlist'),
  );
}

describe('hook order', () => {
  it("the route's own preHandler hooks run after the check, and see its paths", async () => {
    const app = newApp();
    const root = await withPlugin(app);
    const seen: unknown[] = [];
    app.get(
      '/files/*',
      {
        config: { pathgate: READ_STAR },
        preHandler: async (req) => {
          seen.push(req.pathgate?.params);
        },
      },
      async () => 'ok',
    );
    const port = await listen(app);
    expect((await request(port, { path: '/files/..%2Fx' })).status).toBe(403);
    expect((await request(port, { path: '/files/public/a' })).text).toBe('ok');
    expect(seen).toEqual([{ '*': `${root}/public/a` }]);
  });

  it.each([
    ['alone', false],
    ['with the app-wide hooks installed too', true],
  ])(
    'on a route without a preHandler of its own, app and plugin hooks run first, the handler after the check (%s)',
    async (_name, appWide) => {
      const app = newApp();
      if (appWide) app.get('/early', async () => 'early');
      const root = await withPlugin(app);
      const order: string[] = [];
      app.addHook('preHandler', async (req) => {
        order.push(`app hook: ${req.pathgate === null ? 'unchecked' : 'checked'}`);
      });
      app.get('/files/*', { config: { pathgate: READ_STAR } }, async (req) => {
        order.push('handler');
        return req.pathgate?.params;
      });
      const port = await listen(app);
      expect((await request(port, { path: '/files/..%2Fx' })).status).toBe(403);
      expect(order).toEqual(['app hook: unchecked']);
      const ok = await request(port, { path: '/files/public/a' });
      expect(ok.json).toEqual({ '*': `${root}/public/a` });
      expect(order).toEqual(['app hook: unchecked', 'app hook: unchecked', 'handler']);
    },
  );

  it("the guarded handler keeps the handler's this and its return value, sync or async", async () => {
    const app = newApp();
    await withPlugin(app);
    app.decorate('greeting', 'hello');
    app.get('/sync', { config: { pathgate: READ_QUERY } }, function (this: FastifyInstance) {
      return { greeting: (this as FastifyInstance & { greeting: string }).greeting };
    });
    app.get('/async', { config: { pathgate: READ_QUERY } }, async function (this: FastifyInstance) {
      return { greeting: (this as FastifyInstance & { greeting: string }).greeting };
    });
    const port = await listen(app);
    for (const path of ['/sync', '/async']) {
      expect((await request(port, { path: `${path}?p=public%2Fa` })).json).toEqual({
        greeting: 'hello',
      });
      expect((await request(port, { path: `${path}?p=..%2Fa` })).status).toBe(403);
    }
  });

  it("a guarded handler copied from another route's options runs only the route's own guard", async () => {
    const app = newApp();
    const root = await withPlugin(app);
    const copied = copyOptionOfA(app, 'handler');
    app.get('/a/*', { config: { pathgate: READ_STAR } }, async (req) => req.pathgate);
    // `/a/*`'s guard would deny here: `/b` has no `*` param.
    app.get('/b', { config: { pathgate: READ_QUERY } }, copied() as never);
    await expectOwnQueryGuard(await listen(app), root);
  });

  it("another route's options copied whole with a spread: the handler comes along, under the route's own guard", async () => {
    const app = newApp();
    const root = await withPlugin(app);
    let copy: RouteOptions | undefined;
    app.addHook('onRoute', (route) => {
      if (route.url === '/a/*' && route.method === 'GET') copy = { ...route };
    });
    app.get('/a/*', { config: { pathgate: READ_STAR } }, async (req) => req.pathgate);
    app.route({ ...(copy as RouteOptions), url: '/b', config: { pathgate: READ_QUERY } });
    await expectOwnQueryGuard(await listen(app), root);
  });

  it("a preHandler another plugin's onRoute hook adds later runs before the check, the handler after it", async () => {
    const app = newApp();
    await withPlugin(app);
    const seen: unknown[] = [];
    let calls = 0;
    app.addHook('onRoute', (route) => {
      route.preHandler = async (req) => {
        seen.push(req.pathgate);
      };
    });
    app.get('/files/*', { config: { pathgate: READ_STAR } }, async () => {
      calls++;
      return 'ok';
    });
    const port = await listen(app);
    expect((await request(port, { path: '/files/..%2Fx' })).status).toBe(403);
    expect((await request(port, { path: '/files/public/a' })).text).toBe('ok');
    expect(calls).toBe(1);
    expect(seen).toEqual([null, null]);
  });

  it("pathgate hooks copied from another route's options are replaced by the route's own", async () => {
    const app = newApp();
    const root = await withPlugin(app);
    const copied = copyOptionOfA(app, 'preHandler');
    const own = async () => {};
    app.get('/a/*', { config: { pathgate: READ_STAR }, preHandler: own }, async () => 'a');
    const preHandler = copied() as never;
    app.get('/b', { config: { pathgate: READ_QUERY }, preHandler }, async (req) => req.pathgate);
    await expectOwnQueryGuard(await listen(app), root);
  });

  it('an async onSend hook holds the 403 back: nothing after the deny runs, onDeny is called once', async () => {
    const app = newApp();
    await app.register(multipart);
    let calls = 0;
    const handler = async () => {
      calls++;
      return 'ran';
    };
    app.get('/early/*', { config: { pathgate: READ_STAR } }, handler);
    const denials: string[] = [];
    await app.register(pathgate, {
      root: sandbox(),
      fs: RULES,
      onDeny: (denial) => {
        denials.push(denial.label);
      },
    });
    app.addHook('onSend', async (_request, _reply, payload) => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      return payload;
    });
    app.post('/up/:dir', { config: { pathgate: UPLOAD_INTO } }, handler);
    const port = await listen(app);
    const answers = [
      await request(port, { path: '/early/..%2Fx' }),
      await postMultipart(port, '/up/..%2Fx', [filePart('a.txt')]),
      await postJson(port, '/up/uploads%2Fsub', {}),
    ];
    expect(answers.map((res) => res.json)).toEqual([
      denied('params.*', 'path-not-in-allowlist'),
      denied('params.dir', 'path-not-in-allowlist'),
      denied('file *', 'missing-path'),
    ]);
    expect(calls).toBe(0);
    expect(denials).toEqual(['params.*', 'params.dir', 'file *']);
  });

  it("a prefixed plugin's '/' route is guarded at both of its URLs", async () => {
    const app = newApp();
    await withPlugin(app);
    app.register(
      async (api) => {
        api.get('/', { config: { pathgate: READ_QUERY } }, async (req) => req.pathgate?.query);
      },
      { prefix: '/api' },
    );
    const port = await listen(app);
    for (const url of ['/api', '/api/']) {
      expect((await request(port, { path: `${url}?p=..%2F..%2Fx` })).status).toBe(403);
      expect((await request(port, { path: `${url}?p=public%2Fa` })).status).toBe(200);
    }
  });
});
