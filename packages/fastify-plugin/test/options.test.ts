import { createRequire } from 'node:module';
import { PermissionPolicy } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import pathgate, { pathgate as named, type PathgateOptions } from '../src/index.js';
import { denied, listen, newApp, request, sandbox } from './helpers.js';

// Plugin options are validated once, at registration: a policy, or its parts
// (root, fs, dot, resolve), plus onDeny, reportOnly and the lingering close.
// Every problem stops startup with a TypeError naming the option.

async function registerError(options: unknown): Promise<Error> {
  const app = newApp();
  app.register(pathgate, options as PathgateOptions);
  try {
    await app.ready();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected registration to fail');
}

describe('the plugin', () => {
  it('is the default and the named export, wrapped with fastify-plugin for Fastify 5', () => {
    expect(named).toBe(pathgate);
    const meta = (pathgate as unknown as Record<symbol, unknown>)[Symbol.for('plugin-meta')];
    expect(meta).toMatchObject({ fastify: '5.x', name: '@pathgate/fastify' });
    expect((pathgate as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')]).toBe(
      true,
    );
  });

  it('is registered once per context: a second registration fails at startup, saying why', async () => {
    const app = newApp();
    app.register(pathgate, { fs: [] });
    app.register(pathgate, { fs: [] });
    await expect(app.ready()).rejects.toThrow(
      'pathgate: registered already in this context or one above it',
    );
  });

  it('registered below a context that registered it: startup fails with the same message', async () => {
    // A user rolling out one route in report-only mode tries this first;
    // Fastify's own error names only an internal symbol.
    const app = newApp();
    await app.register(pathgate, { fs: [] });
    app.register(async (child) => {
      await child.register(pathgate, { fs: [], reportOnly: true });
    });
    await expect(app.ready()).rejects.toThrow('a second policy needs a sibling context');
  });

  it('registered above a context that registered its own: startup fails too', async () => {
    // Fastify's decorator check looks up the tree only, so this order used
    // to start: the root's policy then guarded some of that context's values
    // and not others (a file route's body specs went unchecked by it).
    const app = newApp();
    await app.register(async (child) => {
      await child.register(async (grandchild) => {
        await grandchild.register(pathgate, { fs: [] });
      });
    });
    app.register(pathgate, { fs: [] });
    await expect(app.ready()).rejects.toThrow(
      'pathgate: a context inside this one registered pathgate already',
    );
  });

  it('registered below the other build of this package: startup fails, saying how to load it', async () => {
    // An ES module app imports the plugin; a CommonJS plugin of its own requires it.
    const other = createRequire(import.meta.url)('../dist/index.cjs') as {
      pathgate: typeof pathgate;
    };
    const app = newApp();
    await app.register(other.pathgate, { fs: [] });
    app.register(async (child) => {
      await child.register(pathgate, { fs: ['**'] });
      child.get(
        '/a',
        { config: { pathgate: { mode: 'read', paths: [{ query: 'p' }] } } },
        () => '',
      );
    });
    await expect(app.ready()).rejects.toThrow(
      'pathgate: request.pathgate is decorated already in this context or one above it: by another copy of @pathgate/fastify (its ES module and CommonJS builds are two copies',
    );
  });

  it('sibling contexts may each register their own', async () => {
    const app = newApp();
    for (const prefix of ['/a', '/b']) {
      await app.register(async (child) => child.register(pathgate, { fs: [] }), { prefix });
    }
    await expect(app.ready()).resolves.toBe(app);
  });
});

describe('bad options throw at registration', () => {
  const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: [] } });
  const ROWS: readonly (readonly [string, unknown, string])[] = [
    ['no options', {}, 'pathgate: option fs must be an array of rule strings (or give policy)'],
    [
      'fs not an array',
      { fs: './public/**' },
      'pathgate: option fs must be an array of rule strings (or give policy)',
    ],
    [
      'an unknown option',
      { fs: [], permissions: { fs: [] } },
      'pathgate: unknown option "permissions"',
    ],
    ['a misspelled option', { fs: [], reportonly: true }, 'pathgate: unknown option "reportonly"'],
    [
      'a misspelled Fastify register option',
      { fs: [], prefx: '/api' },
      'pathgate: unknown option "prefx"',
    ],
    [
      'policy not a PermissionPolicy',
      { policy: { root: '/' } },
      'pathgate: option policy must be a PermissionPolicy',
    ],
    ['policy and fs', { policy, fs: [] }, 'pathgate: option fs cannot be combined with policy'],
    [
      'policy and root, dot',
      { policy, root: '/srv', dot: true },
      'pathgate: option root cannot be combined with policy',
    ],
    [
      'a relative root',
      { root: 'srv', fs: [] },
      'pathgate: option root must canonicalize to an absolute path (relative-root)',
    ],
    [
      'a bad rule prefix',
      { root: '/srv', fs: ['wr:uploads/*'] },
      'pathgate: rule 1 "wr:uploads/*": unknown prefix "wr" (use "r:" or "rw:")',
    ],
    [
      'a rule outside the root',
      { root: '/srv', fs: ['/etc/**'] },
      'pathgate: rule 1 "/etc/**": lies outside the root',
    ],
    ['root null', { root: null, fs: [] }, 'pathgate: option root must not be null'],
    ['dot not a boolean', { fs: [], dot: 'yes' }, 'pathgate: option dot must be a boolean'],
    [
      'resolve not a function',
      { fs: [], resolve: '/' },
      'pathgate: option resolve must be a function',
    ],
    [
      'onDeny not a function',
      { fs: [], onDeny: 'log' },
      'pathgate: option onDeny must be a function',
    ],
    [
      'reportOnly not a boolean',
      { fs: [], reportOnly: 1 },
      'pathgate: option reportOnly must be a boolean',
    ],
    [
      'lingerMs negative',
      { fs: [], lingerMs: -1 },
      'pathgate: option lingerMs must be a non-negative integer',
    ],
    [
      'lingerMs fractional',
      { fs: [], lingerMs: 1.5 },
      'pathgate: option lingerMs must be a non-negative integer',
    ],
    [
      'lingerBytes a string',
      { fs: [], lingerBytes: '1024' },
      'pathgate: option lingerBytes must be a non-negative integer',
    ],
    [
      'lingerBytes NaN',
      { fs: [], lingerBytes: Number.NaN },
      'pathgate: option lingerBytes must be a non-negative integer',
    ],
  ];

  it.each(ROWS)('%s', async (_name, options, message) => {
    const error = await registerError(options);
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toContain(message);
  });
});

describe('good options', () => {
  async function guarded(options: PathgateOptions) {
    const app = newApp();
    await app.register(pathgate, options);
    app.get(
      '/f/*',
      { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } },
      async (req) => req.pathgate?.params,
    );
    return listen(app);
  }

  it('the policy parts', async () => {
    const root = sandbox();
    const port = await guarded({ root, fs: ['./public/**'], dot: true, resolve: (p) => p });
    expect((await request(port, { path: '/f/public/.env' })).json).toEqual({
      '*': `${root}/public/.env`,
    });
  });

  it('a ready PermissionPolicy', async () => {
    const root = sandbox();
    const policy = new PermissionPolicy({ root, permissions: { fs: ['./public/**'] } });
    const port = await guarded({ policy, reportOnly: false, lingerMs: 0, lingerBytes: 0 });
    expect((await request(port, { path: '/f/public/a' })).json).toEqual({
      '*': `${root}/public/a`,
    });
    expect((await request(port, { path: '/f/public/.env' })).json).toEqual(
      denied('params.*', 'path-not-in-allowlist'),
    );
  });

  it('an own key holding undefined counts as absent', async () => {
    const port = await guarded({
      root: undefined,
      fs: ['./srv/**'],
      onDeny: undefined,
      dot: undefined,
    });
    expect((await request(port, { path: '/f/srv/a' })).json).toEqual({ '*': '/srv/a' });
  });

  it.each([
    ['prefix', { prefix: '/api' }],
    ['logLevel', { logLevel: 'warn' }],
    ['logSerializers', { logSerializers: { req: () => 'request' } }],
  ] as const)("Fastify's register option %s is accepted", async (_name, fastify) => {
    const root = sandbox();
    // And changes nothing: the plugin is not encapsulated, so prefix moves no route.
    const port = await guarded({ root, fs: ['./public/**'], ...fastify });
    expect((await request(port, { path: '/f/public/a' })).json).toEqual({
      '*': `${root}/public/a`,
    });
    expect((await request(port, { path: '/f/..%2Fx' })).json).toEqual(
      denied('params.*', 'path-not-in-allowlist'),
    );
  });

  it('fs: [] denies everything (the default root is /)', async () => {
    const port = await guarded({ fs: [] });
    expect((await request(port, { path: '/f/tmp' })).json).toEqual(
      denied('params.*', 'path-not-in-allowlist'),
    );
  });
});
