import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate, { type RouteGuardOptions } from '../src/index.js';
import { denied, listen, newApp, postMultipart } from './helpers.js';

// A not-found handler takes a `config` too (Fastify passes it to the
// handler's context, though its types leave it out), but no `onRoute` hook
// sees it: a `config.pathgate` there is guarded all the same, whatever the
// registration order, and a bad one stops startup.

const ROOT = '/srv/root';
const READ_STAR: RouteGuardOptions = { mode: 'read', paths: [{ params: '*' }] };
/** `setNotFoundHandler` typed with the `config` Fastify accepts. */
type NotFoundOptions = Parameters<FastifyInstance['setNotFoundHandler']>[0] & {
  config?: { pathgate: RouteGuardOptions };
};

const answer = async (request: FastifyRequest) => ({
  params: request.params,
  pathgate: request.pathgate?.params ?? null,
});

function declare(app: FastifyInstance, options: NotFoundOptions = {}): void {
  app.setNotFoundHandler({ config: { pathgate: READ_STAR }, ...options }, answer);
}

async function expectGuarded(app: FastifyInstance, prefix = ''): Promise<void> {
  const out = await app.inject({ url: `${prefix}/..%2F..%2Fetc%2Fpasswd` });
  expect(out.json()).toEqual(denied('params.*', 'path-not-in-allowlist'));
  expect(out.statusCode).toBe(403);
  const ok = await app.inject({ url: `${prefix}/docs/a` });
  expect(ok.json()).toEqual({ params: { '*': 'docs/a' }, pathgate: { '*': `${ROOT}/docs/a` } });
}

const withPlugin = (app: FastifyInstance) =>
  app.register(pathgate, { root: ROOT, fs: ['docs/**'] });

describe('a not-found handler that declares paths', () => {
  it('set after the plugin, with no other route: guarded', async () => {
    const app = newApp();
    await withPlugin(app);
    declare(app);
    await expectGuarded(app);
  });

  it('set before the plugin: guarded', async () => {
    const app = newApp();
    declare(app);
    await withPlugin(app);
    await expectGuarded(app);
  });

  it('in a prefixed context made before or after the plugin: guarded there', async () => {
    const app = newApp();
    const scope = (prefix: string) =>
      app.register(async (child) => declare(child), { prefix: `/${prefix}` });
    await scope('early');
    await withPlugin(app);
    await scope('late');
    await expectGuarded(app, '/early');
    await expectGuarded(app, '/late');
  });

  it('set before the plugin in a context without a prefix, the plugin registered there: guarded', async () => {
    // Such a context has no not-found flag of its own: Fastify marks the
    // handler set on the prefixed context above it (here the root).
    const app = newApp();
    await app.register(async (child) => {
      declare(child);
      await withPlugin(child);
    });
    await expectGuarded(app);
  });

  it('with a preHandler of its own: that hook runs after the check', async () => {
    const app = newApp();
    await withPlugin(app);
    let preHandlers = 0;
    declare(app, { preHandler: [async () => void preHandlers++] });
    await expectGuarded(app);
    expect(preHandlers).toBe(1);
  });

  it('the prefix itself has no `*`: required denies it, optional lets it through unchecked', async () => {
    const app = newApp();
    await withPlugin(app);
    declare(app);
    await app.register(
      async (child) => {
        const paths = [{ params: '*', optional: true }] as const;
        const options: NotFoundOptions = { config: { pathgate: { mode: 'read', paths } } };
        child.setNotFoundHandler(options, answer);
      },
      { prefix: '/opt' },
    );
    const root = await app.inject({ url: '/' });
    expect(root.json()).toEqual(denied('params.*', 'missing-path'));
    const optional = await app.inject({ url: '/opt' });
    expect(optional.json()).toEqual({ params: {}, pathgate: {} });
  });

  it.each(['before', 'after'])(
    'set %s the plugin, reached by reply.callNotFound(): checked there, which skips its onRequest hooks',
    async (order) => {
      const app = newApp();
      const declare = () => {
        const pathgate = { mode: 'read', paths: [{ query: 'file' }] } as const;
        app.setNotFoundHandler({ config: { pathgate } } as NotFoundOptions, async (request) => ({
          raw: (request.query as { file?: string }).file,
          pathgate: request.pathgate?.query ?? null,
        }));
      };
      const callNotFound = async (_request: unknown, reply: FastifyReply) => reply.callNotFound();
      // One route unguarded, one declared before the plugin (the app-wide hooks checked it).
      app.get(
        '/early/:p',
        { config: { pathgate: { mode: 'read', paths: [{ params: 'p' }] } } },
        callNotFound,
      );
      if (order === 'before') declare();
      await withPlugin(app);
      if (order === 'after') declare();
      app.get('/plain', callNotFound);
      for (const url of ['/plain', '/early/docs']) {
        const out = await app.inject({ url: `${url}?file=..%2Fetc%2Fpasswd` });
        expect(out.json()).toEqual(denied('query.file', 'path-not-in-allowlist'));
        const ok = await app.inject({ url: `${url}?file=docs%2Fa` });
        expect(ok.json()).toEqual({ raw: 'docs/a', pathgate: { file: `${ROOT}/docs/a` } });
      }
      const early = await app.inject({ url: '/early/..%2Fetc?file=docs%2Fa' });
      expect(early.json()).toEqual(denied('params.p', 'path-not-in-allowlist'));
    },
  );

  it('set before the plugin with a file spec, reached by reply.callNotFound(): each filename checked', async () => {
    const app = newApp();
    const paths = [{ file: 'avatar', under: 'uploads' }] as const;
    app.setNotFoundHandler(
      { config: { pathgate: { mode: 'write', paths } } } as NotFoundOptions,
      async (request) => {
        const part = await request.file();
        part?.file.resume();
        return { files: request.pathgate?.files ?? null };
      },
    );
    await app.register(pathgate, { root: ROOT, fs: ['rw:uploads/**'] });
    await app.register(multipart, { preservePath: true });
    app.post('/up', async (_request, reply) => reply.callNotFound());
    const port = await listen(app);
    const post = (filename: string) =>
      postMultipart(port, '/up', [
        { disposition: `name="avatar"; filename="${filename}"`, data: 'x' },
      ]);
    const out = await post('../etc/passwd');
    expect(out.json).toEqual(denied('file avatar', 'path-not-in-allowlist'));
    const ok = await post('a.txt');
    const file = { field: 'avatar', filename: 'a.txt', path: `${ROOT}/uploads/a.txt` };
    expect(ok.json).toEqual({ files: [file] });
  });

  it('a bad declaration stops startup, naming the handler', async () => {
    const app = newApp();
    await withPlugin(app);
    const pathgate = { mode: 'read', paths: [{ params: 'p' }] } as const;
    const set = () => app.setNotFoundHandler({ config: { pathgate } } as NotFoundOptions, answer);
    expect(set).toThrow(
      'pathgate: route not-found /*: params "p" is not a parameter of this route',
    );
  });
});

describe('a not-found handler left to Fastify', () => {
  it('set with one argument or options without pathgate: runs unchecked', async () => {
    const app = newApp();
    await withPlugin(app);
    app.setNotFoundHandler(answer);
    await app.register(
      async (child) => child.setNotFoundHandler({ config: {} } as NotFoundOptions, answer),
      { prefix: '/plain' },
    );
    // No options at all, which Fastify takes as none.
    await app.register(async (child) => child.setNotFoundHandler(undefined as never, answer), {
      prefix: '/none',
    });
    for (const prefix of ['', '/plain', '/none']) {
      const out = await app.inject({ url: `${prefix}/..%2Fetc` });
      expect(out.json()).toEqual({ params: { '*': '../etc' }, pathgate: null });
    }
  });

  it('a declaration without a handler stops startup: nothing would check it', async () => {
    const app = newApp();
    await withPlugin(app);
    // Fastify takes options alone (its types do not), and its own 404 handler then.
    const set = () => app.setNotFoundHandler({ config: { pathgate: READ_STAR } } as never);
    expect(set).toThrow(
      'pathgate: route not-found /*: config.pathgate needs the handler it guards; pass the handler, or leave config.pathgate out',
    );
  });

  it('a declaration with a handler that is not a function stops startup the same way', async () => {
    // Fastify sets its own 404 handler for a null one, and fails on a truthy
    // one with an error that does not name the route: both are refused here.
    for (const handler of [null, 'answer']) {
      const app = newApp();
      await withPlugin(app);
      const set = () =>
        app.setNotFoundHandler({ config: { pathgate: READ_STAR } } as never, handler as never);
      expect(set).toThrow(
        'pathgate: route not-found /*: config.pathgate needs the handler it guards',
      );
    }
  });
});
