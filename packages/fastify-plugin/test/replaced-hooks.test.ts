import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import multipart from '@fastify/multipart';
import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { describe, expect, it } from 'vitest';
import pathgate, { type DenyHandler, type RouteGuardOptions } from '../src/index.js';
import { denied, filesIn, listen, newApp, postJson, postMultipart, sandbox } from './helpers.js';

// Another plugin's onRoute hook, registered after pathgate, runs after
// pathgate's and may replace what it put on the route: the route's hooks or
// its handler. A declared route must still be checked before its handler
// runs, once, or be denied: the guard never depends on those hooks leaving
// pathgate's in place.

const RULES = ['./public/**', 'rw:./uploads/**'];
const READ_N: RouteGuardOptions = { mode: 'read', paths: [{ params: 'n' }] };
const UPLOAD: RouteGuardOptions = {
  mode: 'write',
  paths: [{ params: 'dir' }, { file: true, under: 'uploads' }],
};

/** `READ_N` on a route with a file spec: pathgate's own onRequest hook starts its check. */
const WITH_FILE: RouteGuardOptions = {
  mode: 'read',
  paths: [{ params: 'n' }, { file: true, under: 'uploads', optional: true }],
};

/** Marks the routes the replacing hook acts on, as an auth plugin's option would. */
const AUTH = { auth: true };

type Replace = (route: RouteOptions) => void;

/** An onRoute hook that applies `replace` to the routes marked with `AUTH`. */
const onAuthRoute =
  (replace: Replace) =>
  (route: RouteOptions): void => {
    if ((route.config as { auth?: boolean } | undefined)?.auth) replace(route);
  };

const replacePreHandler: Replace = (route) => {
  route.preHandler = async () => {};
};

/** A pathgate app whose resolver counts the values checked: one call per value, per check. */
async function gatedApp(options: { onDeny?: DenyHandler; reportOnly?: boolean } = {}) {
  const app = newApp();
  const root = sandbox();
  const count = { checks: 0, calls: 0 };
  const resolve = (path: string) => {
    count.checks++;
    return path;
  };
  await app.register(pathgate, { root, fs: RULES, resolve, ...options });
  count.checks = 0; // the root, resolved once at registration
  return { app, root, count };
}

/** `GET /own/:n` with a preHandler of its own, marked for the replacing hook; counts handler calls. */
function declareOwn(app: FastifyInstance, count: { calls: number }): void {
  app.get(
    '/own/:n',
    { preHandler: async () => {}, config: { ...AUTH, pathgate: READ_N } },
    async () => {
      count.calls++;
      return 'ran';
    },
  );
}

async function expectGuarded(app: FastifyInstance, count: { calls: number }): Promise<void> {
  const bad = await app.inject({ method: 'GET', url: '/own/etc' });
  expect(bad.statusCode).toBe(403);
  expect(bad.json()).toEqual(denied('params.n', 'path-not-in-allowlist'));
  expect(count.calls).toBe(0);
  const ok = await app.inject({ method: 'GET', url: '/own/public%2Fa' });
  expect([ok.statusCode, ok.body]).toEqual([200, 'ran']);
  expect(count.calls).toBe(1);
}

describe("another plugin's onRoute hook replaces pathgate's preHandler", () => {
  it('the repro: the route is still checked before its handler, once', async () => {
    const { app, count } = await gatedApp();
    app.addHook('onRoute', onAuthRoute(replacePreHandler));
    declareOwn(app, count);
    await expectGuarded(app, count);
    expect(count.checks).toBe(2); // one value per request, checked once
  });

  it.each<[string, Replace]>([
    ['a function', replacePreHandler],
    [
      'an empty list',
      (route) => {
        route.preHandler = [];
      },
    ],
    ['nothing (deleted)', (route) => void delete route.preHandler],
    ['the list emptied in place', (route) => void (route.preHandler as unknown[]).splice(0)],
    [
      'every hook of every kind removed',
      (route) => {
        for (const name of ['onRequest', 'preHandler', 'onSend'] as const) delete route[name];
      },
    ],
  ])('replaced with %s', async (_name, replace) => {
    const { app, count } = await gatedApp();
    app.addHook('onRoute', onAuthRoute(replace));
    declareOwn(app, count);
    await expectGuarded(app, count);
  });

  it.each<[string, (app: FastifyInstance, count: { calls: number }) => Promise<void> | void]>([
    [
      'from a fastify-plugin plugin registered after pathgate',
      async (app, count) => {
        await app.register(
          fp(async (instance) => {
            instance.addHook('onRoute', onAuthRoute(replacePreHandler));
          }),
        );
        declareOwn(app, count);
      },
    ],
    [
      'in the child context that declares the route',
      (app, count) => {
        app.register(async (child) => {
          child.addHook('onRoute', onAuthRoute(replacePreHandler));
          declareOwn(child, count);
        });
      },
    ],
    [
      'in a parent context of the route',
      (app, count) => {
        app.register(async (parent) => {
          parent.addHook('onRoute', onAuthRoute(replacePreHandler));
          parent.register(async (child) => declareOwn(child, count), { prefix: '' });
        });
      },
    ],
  ])('the replacing hook %s', async (_name, declare) => {
    const { app, count } = await gatedApp();
    await declare(app, count);
    await expectGuarded(app, count);
  });

  it('with the app-wide hooks installed too (a route declared before pathgate)', async () => {
    const app = newApp();
    app.get('/early', async () => 'early');
    await app.register(pathgate, { root: sandbox(), fs: RULES });
    app.addHook('onRoute', onAuthRoute(replacePreHandler));
    const count = { calls: 0 };
    declareOwn(app, count);
    await expectGuarded(app, count);
  });

  it("the app-wide hooks check nothing of a later context's route whose config was rebuilt", async () => {
    // The rebuilt config lost pathgate's mark; the context, made after pathgate,
    // is skipped whole, as every route of its passed the onRoute hook.
    const app = newApp();
    app.get('/early', async () => 'early');
    const count = { checks: 0, calls: 0 };
    const resolve = (path: string) => {
      count.checks++;
      return path;
    };
    await app.register(pathgate, { root: sandbox(), fs: RULES, resolve });
    count.checks = 0; // the root, resolved once at registration
    app.register(async (child) => {
      child.addHook(
        'onRoute',
        onAuthRoute((route) => {
          route.config = { ...AUTH, pathgate: READ_N };
        }),
      );
      declareOwn(child, count);
    });
    await expectGuarded(app, count);
    expect(count.checks).toBe(2); // one value per request, checked once
  });

  it('the app-wide hooks check nothing of a file route the route-level hooks guard', async () => {
    const app = newApp();
    app.get('/early', async () => 'early');
    const count = { checks: 0 };
    const resolve = (path: string) => {
      count.checks++;
      return path;
    };
    await app.register(pathgate, { root: sandbox(), fs: RULES, resolve });
    app.get('/f/:n', { config: { pathgate: WITH_FILE } }, async () => 'ran');
    count.checks = 0; // the root, resolved once at registration
    const ok = await app.inject({ url: '/f/public%2Fa' });
    expect([ok.statusCode, ok.body]).toEqual([200, 'ran']);
    // params.n early (onRequest) and with the rest (preHandler): 2, none by the app-wide hooks.
    expect(count.checks).toBe(2);
  });

  it('the replacing hook registered before pathgate: pathgate sees its preHandler, and guards', async () => {
    const app = newApp();
    app.addHook('onRoute', onAuthRoute(replacePreHandler));
    await app.register(pathgate, { root: sandbox(), fs: RULES });
    const count = { calls: 0 };
    declareOwn(app, count);
    await expectGuarded(app, count);
  });

  it('replaced with a preHandler that answers early: its answer, else the check', async () => {
    const denials: string[] = [];
    const { app, count } = await gatedApp({ onDeny: (denial) => void denials.push(denial.label) });
    app.addHook(
      'onRoute',
      onAuthRoute((route) => {
        route.preHandler = [
          (req, reply, done) => {
            if (req.headers['x-early'] === undefined) return done();
            reply.code(401).send({ early: true });
          },
        ];
      }),
    );
    declareOwn(app, count);
    const early = await app.inject({ url: '/own/etc', headers: { 'x-early': '1' } });
    expect([early.statusCode, early.json()]).toEqual([401, { early: true }]);
    expect([count.calls, count.checks, denials]).toEqual([0, 0, []]);
    const bad = await app.inject({ url: '/own/etc' });
    expect(bad.json()).toEqual(denied('params.n', 'path-not-in-allowlist'));
    expect([count.calls, denials]).toEqual([0, ['params.n']]);
  });
});

describe("another plugin's onRoute hook replaces the handler pathgate guarded", () => {
  /** `GET /plain/:n`, with no preHandler: pathgate's guard lives in its handler alone. */
  function declarePlain(app: FastifyInstance, count: { calls: number }): void {
    app.get('/plain/:n', { config: { ...AUTH, pathgate: READ_N } }, async () => {
      count.calls++;
      return 'ran';
    });
  }

  it.each([
    ['on a route without a preHandler', declarePlain, '/plain'],
    ['on a route with a preHandler of its own, removed too', declareOwn, '/own'],
  ])('a stub handler in its place is guarded too (%s)', async (_name, declare, url) => {
    const { app, count } = await gatedApp();
    let stubbed = 0;
    app.addHook(
      'onRoute',
      onAuthRoute((route) => {
        delete route.preHandler;
        route.handler = async () => {
          stubbed++;
          return 'stub';
        };
      }),
    );
    declare(app, count);
    const bad = await app.inject({ url: `${url}/etc` });
    expect(bad.json()).toEqual(denied('params.n', 'path-not-in-allowlist'));
    const ok = await app.inject({ url: `${url}/public%2Fa` });
    expect([ok.statusCode, ok.body]).toEqual([200, 'stub']);
    expect([stubbed, count.calls, count.checks]).toEqual([1, 0, 2]);
  });

  it.each<[string, Replace]>([
    [
      'the handler property deleted first',
      (route) => {
        delete (route as { handler?: unknown }).handler;
        route.handler = async () => 'stub';
      },
    ],
    [
      'the handler property redefined',
      (route) => {
        Object.defineProperty(route, 'handler', { value: async () => 'stub', writable: true });
      },
    ],
    // As without pathgate: wrapped, it would start, and the route would answer 500 on every allowed path.
    [
      'a value that is not a function in its place',
      (route) => {
        (route as { handler: unknown }).handler = 'ran';
      },
    ],
  ])('%s: startup fails, nothing runs unchecked', async (_name, replace) => {
    const { app, count } = await gatedApp();
    app.addHook('onRoute', onAuthRoute(replace));
    const start = async () => {
      declarePlain(app, count);
      await app.ready();
    };
    await expect(start()).rejects.toThrow(TypeError);
  });

  it('the handler it read set back: the same function stays, still guarded', async () => {
    const { app, count } = await gatedApp();
    const seen: boolean[] = [];
    app.addHook(
      'onRoute',
      onAuthRoute((route) => {
        const read = route.handler;
        route.handler = read;
        seen.push(route.handler === read);
      }),
    );
    declarePlain(app, count);
    const bad = await app.inject({ url: '/plain/etc' });
    expect(bad.json()).toEqual(denied('params.n', 'path-not-in-allowlist'));
    // GET and its HEAD route.
    expect([seen, count.calls]).toEqual([[true, true], 0]);
  });

  it('a wrapper that calls the guarded handler: checked once, the handler called once', async () => {
    const denials: string[] = [];
    const { app, count } = await gatedApp({
      reportOnly: true,
      onDeny: (denial) => void denials.push(denial.label),
    });
    let wrapped = 0;
    app.addHook(
      'onRoute',
      onAuthRoute((route) => {
        const inner = route.handler;
        route.handler = function traced(this: FastifyInstance, req, reply) {
          wrapped++;
          return inner.call(this, req, reply);
        };
      }),
    );
    declarePlain(app, count);
    declareOwn(app, count);
    for (const url of ['/plain/public%2Fa', '/own/public%2Fa', '/plain/etc', '/own/etc']) {
      const res = await app.inject({ url });
      expect([res.statusCode, res.body]).toEqual([200, 'ran']);
    }
    expect([wrapped, count.calls, count.checks]).toEqual([4, 4, 4]);
    expect(denials).toEqual(['params.n', 'params.n']);
  });

  it.each([
    ['without a file spec', READ_N],
    ['with a file spec', WITH_FILE],
  ])(
    "a route's guarded handler (%s) called from another guarded route's: its own guard runs too",
    async (_n, pathgate) => {
      const { app, count } = await gatedApp();
      let target: RouteOptions['handler'] | undefined;
      app.addHook(
        'onRoute',
        onAuthRoute((route) => {
          target = route.handler;
        }),
      );
      app.get('/target/:n', { config: { ...AUTH, pathgate } }, async () => {
        count.calls++;
        return 'ran';
      });
      // `/q` passes its own check, then hands the request to `/target/:n`'s handler.
      app.get(
        '/q',
        { config: { pathgate: { mode: 'read', paths: [{ query: 'p' }] } } },
        function (req, reply) {
          return target?.call(this, req, reply);
        },
      );
      const res = await app.inject({ url: '/q?p=public%2Fa' });
      // `/target/:n`'s guard: this request has no `n` param.
      expect([res.statusCode, res.json()]).toEqual([403, denied('params.n', 'missing-path')]);
      expect(count.calls).toBe(0);
    },
  );
});

describe('routes no other hook touches keep working, checked once', () => {
  it.each([
    ['without a preHandler', false],
    ['with a preHandler of its own', true],
  ])('a route %s: allowed once, denied, report-only reported once', async (_name, own) => {
    for (const reportOnly of [false, true]) {
      const denials: string[] = [];
      const { app, count } = await gatedApp({
        reportOnly,
        onDeny: (denial) => void denials.push(denial.label),
      });
      const preHandler = own ? [async () => {}] : [];
      app.get('/r/:n', { preHandler, config: { pathgate: READ_N } }, async () => {
        count.calls++;
        return 'ran';
      });
      const ok = await app.inject({ url: '/r/public%2Fa' });
      expect([ok.statusCode, ok.body, count.calls, count.checks]).toEqual([200, 'ran', 1, 1]);
      const bad = await app.inject({ url: '/r/etc' });
      expect(bad.statusCode).toBe(reportOnly ? 200 : 403);
      expect([count.calls, count.checks, denials]).toEqual([reportOnly ? 2 : 1, 2, ['params.n']]);
    }
  });
});

describe('on a route with a file spec, the hooks pathgate added are removed', () => {
  /** `POST /up/:dir`, which stores its one file where pathgate says, marked for the hook. */
  async function uploadApp(
    attachFieldsToBody: boolean | 'keyValues',
    replace: Replace,
    pathgate = UPLOAD,
    options: Parameters<typeof gatedApp>[0] = {},
  ) {
    const { app, root, count } = await gatedApp(options);
    await app.register(multipart, { preservePath: true, attachFieldsToBody });
    app.addHook('onRoute', onAuthRoute(replace));
    app.post('/up/:dir', { config: { ...AUTH, pathgate } }, async (req) => {
      count.calls++;
      if (attachFieldsToBody) return 'ran';
      const part = await req.file();
      if (part === undefined) return 'none';
      await pipeline(part.file, createWriteStream(part.pathgatePath as string));
      return 'stored';
    });
    return { port: await listen(app), root, count };
  }

  const without =
    (...names: ('onRequest' | 'preHandler' | 'onSend')[]): Replace =>
    (route) => {
      for (const name of names) delete route[name];
    };
  const part = (filename: string) => [
    { disposition: `name="f"; filename="${filename}"`, data: 'x' },
  ];

  it.each([
    ['every hook', without('onRequest', 'preHandler', 'onSend')],
    ['onRequest and preHandler', without('onRequest', 'preHandler')],
    ['onRequest', without('onRequest')],
    ['preHandler', without('preHandler')],
  ])(
    'streaming, without %s: a denied param or filename is refused, nothing is stored',
    async (_name, replace) => {
      const { port, root, count } = await uploadApp(false, replace);
      const param = await postMultipart(port, '/up/..%2F..', part('a.txt'));
      expect(param.json).toEqual(denied('params.dir', 'path-not-in-allowlist'));
      expect(count.calls).toBe(0);
      // Not multipart: the required file is missing.
      const json = await postJson(port, '/up/uploads', {});
      expect(json.json).toEqual(denied('file *', 'missing-path'));
      expect(count.calls).toBe(0);
      const name = await postMultipart(port, '/up/uploads', part('../../evil.txt'));
      expect([name.status, (name.json as { code: string }).code]).toEqual([403, 'PATHGATE_DENIED']);
      const ok = await postMultipart(port, '/up/uploads', part('good.txt'));
      expect([ok.status, ok.text]).toEqual([200, 'stored']);
      expect(filesIn(root)).toEqual(['uploads/good.txt']);
    },
  );

  it('streaming, without onRequest: the filename deny keeps its full 403 body (its onSend still runs)', async () => {
    const { port } = await uploadApp(false, without('onRequest'));
    const name = await postMultipart(port, '/up/uploads', part('../../evil.txt'));
    expect([name.status, name.json]).toEqual([403, denied('file *', 'path-not-in-allowlist')]);
  });

  it.each([
    ['none removed', () => {}],
    ['onRequest removed', without('onRequest')],
  ])(
    'attachFieldsToBody, %s: a denied query value is the deny, not a denied field, as before the body is read',
    async (_name, replace) => {
      const paths = [
        // Declared first, checked first once the body is read.
        { body: 'note', under: 'uploads' },
        { query: 'to', under: 'uploads' },
        { file: true, under: 'uploads', optional: true },
      ] as const;
      const { port, count } = await uploadApp(true, replace, { mode: 'write', paths });
      const note = [{ disposition: 'name="note"', data: '../../n' }];
      const res = await postMultipart(port, '/up/uploads?to=../../t', note);
      expect(res.json).toEqual(denied('query.to', 'path-not-in-allowlist'));
      expect(count.calls).toBe(0);
    },
  );

  it('none removed: the guarded handler checks nothing again', async () => {
    const { port, count } = await uploadApp(false, () => {});
    const ok = await postMultipart(port, '/up/uploads', part('good.txt'));
    expect([ok.status, ok.text, count.calls]).toEqual([200, 'stored', 1]);
    // params.dir early (onRequest) and with the rest (preHandler), then the filename: 3.
    expect(count.checks).toBe(3);
  });

  it('attachFieldsToBody, every hook removed: files parsed unchecked deny, the handler never runs', async () => {
    const { port, count } = await uploadApp(true, without('onRequest', 'preHandler', 'onSend'));
    const res = await postMultipart(port, '/up/uploads', part('good.txt'));
    expect(res.json).toEqual(denied('file', 'unexpected-file'));
    // No file at all: the required one is missing, though no wrapper saw the parts.
    const none = await postMultipart(port, '/up/uploads', [{ disposition: 'name="a"', data: 'x' }]);
    expect(none.json).toEqual(denied('file *', 'missing-path'));
    expect(count.calls).toBe(0);
  });

  it('report-only, attachFieldsToBody, every hook removed: each deny is reported once', async () => {
    const reports: string[] = [];
    const onDeny: DenyHandler = (denial) => void reports.push(`${denial.label} ${denial.reason}`);
    const hooks = without('onRequest', 'preHandler', 'onSend');
    const { port, count } = await uploadApp(true, hooks, UPLOAD, { reportOnly: true, onDeny });
    const res = await postMultipart(port, '/up/uploads', part('good.txt'));
    expect([res.status, res.text, count.calls]).toEqual([200, 'ran', 1]);
    // Not also as a missing required file: the file is there, only unchecked.
    expect(reports).toEqual(['file unexpected-file']);
    // Not multipart: the required file is missing, reported once.
    const json = await postJson(port, '/up/uploads', {});
    expect([json.status, json.text, count.calls]).toEqual([200, 'ran', 2]);
    expect(reports).toEqual(['file unexpected-file', 'file * missing-path']);
  });

  it("attachFieldsToBody 'keyValues', an optional file spec, onRequest removed: a file parsed unchecked denies", async () => {
    // keyValues turns each file part into a Buffer: the body holds no part to recognise.
    const optional: RouteGuardOptions = {
      mode: 'write',
      paths: [{ file: true, under: 'uploads', optional: true }],
    };
    const { port, count } = await uploadApp('keyValues', without('onRequest'), optional);
    const res = await postMultipart(port, '/up/uploads', part('../../evil.txt'));
    expect(res.json).toEqual(denied('file', 'unexpected-file'));
    expect(count.calls).toBe(0);
    // No file: nothing unchecked, the handler runs.
    const none = await postMultipart(port, '/up/uploads', [{ disposition: 'name="a"', data: 'x' }]);
    expect([none.status, count.calls]).toEqual([200, 1]);
  });

  it("'keyValues' with an onFile that leaves no Buffer, optional, onRequest removed: the request passes, with no checked path", async () => {
    // Known gap (README, registration order): the file left no trace in the body.
    const { app, count } = await gatedApp();
    const seen: (string | undefined)[] = [];
    await app.register(multipart, {
      preservePath: true,
      attachFieldsToBody: 'keyValues',
      async onFile(part) {
        seen.push(part.pathgatePath);
        part.file.resume();
      },
    });
    app.addHook('onRoute', onAuthRoute(without('onRequest')));
    const optional = { mode: 'write', paths: [{ file: true, under: 'uploads', optional: true }] };
    app.post('/up', { config: { ...AUTH, pathgate: optional } as never }, async (req) => {
      count.calls++;
      return { files: req.pathgate?.files };
    });
    const res = await postMultipart(await listen(app), '/up', part('../../evil.txt'));
    expect([res.status, res.json, count.calls]).toEqual([200, { files: [] }, 1]);
    expect(seen).toEqual([undefined]);
  });
});
