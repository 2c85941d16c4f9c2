import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PathgateInfo } from '@pathgate/core';
import express, { type NextFunction, type Request, type Response } from 'express';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { type ExpressPathgateInfo, pathgate } from '../src/index.js';

// `req.pathgate` is an accessor on Express's request prototype that reads the
// checked paths from `res.locals` (src/request-info.ts says why). These tests
// try to make the handler see paths other than the ones its gate checked.

const ROOT = '/srv/root';
const gate = pathgate({ root: ROOT, fs: ['docs/**', 'rw:uploads/**'] });
const read = gate.read({ params: 'path' });

const sendInfo = (req: Request, res: Response) => {
  res.json({ pathgate: req.pathgate ?? null });
};

describe('req.pathgate', () => {
  it('a value the app put there before the gate never stands in for the checked paths', async () => {
    const app = express();
    const forge = (req: Request, _res: Response, next: NextFunction) => {
      req.pathgate = { params: { path: '/etc/passwd' } } as unknown as ExpressPathgateInfo;
      next();
    };
    app.get('/files/*path', forge, read, sendInfo);
    const { body } = await supertest(app).get('/files/docs/a.txt').expect(200);
    expect(body.pathgate.params).toEqual({ path: `${ROOT}/docs/a.txt` });
  });

  it("an app's own pathgate on its request prototype never hides the checked paths", async () => {
    const app = express();
    Object.defineProperty(app.request, 'pathgate', { value: { params: { path: '/etc/passwd' } } });
    app.get('/files/*path', read, sendInfo);
    const { body } = await supertest(app).get('/files/docs/a.txt').expect(200);
    expect(body.pathgate.params).toEqual({ path: `${ROOT}/docs/a.txt` });
  });

  it('lives in res.locals behind an accessor on express.request: no request of any app gets its own', async () => {
    const seen: unknown[] = [];
    const report = (req: Request, res: Response) => {
      seen.push({ own: Object.hasOwn(req, 'pathgate'), params: req.pathgate?.params });
      res.end();
    };
    // Two apps: two request prototypes, one accessor on the express.request they share.
    for (const app of [express(), express()]) {
      app.get('/files/*path', read, report);
      await supertest(app).get('/files/docs/a.txt').expect(200);
    }
    const expected = { own: false, params: { path: `${ROOT}/docs/a.txt` } };
    expect(seen).toEqual([expected, expected]);
    expect(typeof Object.getOwnPropertyDescriptor(express.request, 'pathgate')?.get).toBe(
      'function',
    );
  });

  it("an app's own pathgate on express.request itself is left alone, and never hides the checked paths", async () => {
    const before = Object.getOwnPropertyDescriptor(express.request, 'pathgate');
    const appDefault = { params: { path: '/etc/passwd' } };
    Object.defineProperty(express.request, 'pathgate', {
      value: appDefault,
      writable: true,
      configurable: true,
    });
    try {
      const app = express();
      app.get('/files/*path', read, sendInfo);
      app.get('/open', sendInfo);
      const { body } = await supertest(app).get('/files/docs/a.txt').expect(200);
      expect(body.pathgate.params).toEqual({ path: `${ROOT}/docs/a.txt` });
      // A route without a gate still reads the app's own value.
      const open = await supertest(app).get('/open').expect(200);
      expect(open.body.pathgate).toEqual(appDefault);
    } finally {
      if (before === undefined) delete (express.request as { pathgate?: unknown }).pathgate;
      else Object.defineProperty(express.request, 'pathgate', before);
    }
  });

  it('when res.locals is not where the accessor reads, or takes no key, the request itself holds the paths', async () => {
    const app = express();
    const elsewhere: Record<string, (req: Request, res: Response, next: NextFunction) => void> = {
      // The gate called with a response other than req.res (a wrapper with its own locals).
      '/wrapped': (req, res, next) =>
        read(req, Object.assign(Object.create(res), { locals: {} }), next),
      '/undefined': (req, res, next) => {
        (res as { locals: unknown }).locals = undefined;
        read(req, res, next);
      },
      '/null': (req, res, next) => {
        (res as { locals: unknown }).locals = null;
        read(req, res, next);
      },
      // An app's frozen or sealed locals take no key (a throw there was a 500).
      '/frozen': (req, res, next) => {
        res.locals = Object.freeze({ user: 'x' });
        read(req, res, next);
      },
      '/sealed': (req, res, next) => {
        Object.preventExtensions(res.locals);
        read(req, res, next);
      },
      // A proxy that refuses the key (its set trap says no: a TypeError in strict code).
      '/refusing-proxy': (req, res, next) => {
        res.locals = new Proxy({}, { set: () => false });
        read(req, res, next);
      },
      // A proxy whose reads throw: the paths must not hang on them.
      // A proxy that takes the key and forgets it (its reads answer nothing): no throw to catch.
      '/forgetful-proxy': (req, res, next) => {
        res.locals = new Proxy({}, { get: () => undefined });
        read(req, res, next);
      },
      '/throwing-proxy': (req, res, next) => {
        const fail = () => {
          throw new Error('no reads');
        };
        res.locals = new Proxy({}, { get: fail, has: fail });
        read(req, res, next);
      },
    };
    for (const [prefix, gated] of Object.entries(elsewhere))
      app.get(`${prefix}/*path`, gated, sendInfo);
    for (const prefix of Object.keys(elsewhere)) {
      const { body } = await supertest(app).get(`${prefix}/docs/a.txt`).expect(200);
      expect([prefix, body.pathgate.params]).toEqual([prefix, { path: `${ROOT}/docs/a.txt` }]);
    }
  });

  it('reaches the handler on a plain node:http server (an express.Router, no express.request)', async () => {
    const router = express.Router();
    router.get('/files/*path', read, (req, res) => {
      res.end(JSON.stringify(req.pathgate?.params ?? null));
    });
    const server = http.createServer((req, res) => {
      // What a framework around the router might set, as Express does: req.res and res.locals.
      Object.assign(req, { res });
      Object.assign(res, { locals: {} });
      router(req as Request, res as Response, (error?: unknown) => {
        res.statusCode = error === undefined ? 404 : 500;
        res.end(String(error));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await new Promise<Answer>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/files/docs/a.txt', agent: false }, (res) =>
            readAnswer(res).then(resolve, reject),
          )
          .on('error', reject);
      });
      expect([answer.status, answer.json]).toEqual([200, { path: `${ROOT}/docs/a.txt` }]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('the app may still assign it after the gate', async () => {
    const app = express();
    const replace = (req: Request, _res: Response, next: NextFunction) => {
      req.pathgate = { mode: 'write' } as ExpressPathgateInfo;
      next();
    };
    app.get('/files/*path', read, replace, sendInfo);
    const { body } = await supertest(app).get('/files/docs/a.txt').expect(200);
    expect(body.pathgate).toEqual({ mode: 'write' });
  });

  it('res.locals replaced after the gate: a copy keeps the paths, a new object drops them', async () => {
    const app = express();
    app.get(
      '/copy/*path',
      read,
      (_req, res, next) => {
        res.locals = { ...res.locals, user: 'x' };
        next();
      },
      sendInfo,
    );
    app.get(
      '/fresh/*path',
      read,
      (_req, res, next) => {
        res.locals = {};
        next();
      },
      sendInfo,
    );
    const copied = await supertest(app).get('/copy/docs/a.txt').expect(200);
    expect(copied.body.pathgate.params).toEqual({ path: `${ROOT}/docs/a.txt` });
    const fresh = await supertest(app).get('/fresh/docs/a.txt').expect(200);
    expect(fresh.body).toEqual({ pathgate: null });
  });

  it('an assignment is an ordinary property: listed, and deleting it brings the checked paths back', async () => {
    const app = express();
    app.get('/files/*path', read, (req, res) => {
      req.pathgate = { mode: 'write' } as ExpressPathgateInfo;
      const listed = Object.keys(req).includes('pathgate');
      const assigned = req.pathgate;
      delete req.pathgate;
      // Read through a fresh reference: TypeScript narrows req.pathgate to undefined after delete.
      const after = (req as Request).pathgate?.params ?? null;
      res.json({ listed, assigned, after });
    });
    const { body } = await supertest(app).get('/files/docs/a.txt').expect(200);
    expect(body).toEqual({
      listed: true,
      assigned: { mode: 'write' },
      after: { path: `${ROOT}/docs/a.txt` },
    });
  });

  it('is undefined on a route without a gate, even after a guarded request', async () => {
    const app = express();
    app.get('/files/*path', read, sendInfo);
    app.get('/open', sendInfo);
    await supertest(app).get('/files/docs/a.txt').expect(200);
    const { body } = await supertest(app).get('/open').expect(200);
    expect(body.pathgate).toBeNull();
  });

  it('reaches a handler inside a mounted sub-app (another request prototype)', async () => {
    const sub = express();
    sub.get('/files/*path', sendInfo);
    const app = express();
    app.use('/api', express.Router().get('/files/*path', read, sub));
    const { body } = await supertest(app).get('/api/files/docs/a.txt').expect(200);
    expect(body.pathgate.params).toEqual({ path: `${ROOT}/docs/a.txt` });
  });

  it('two gates on one route: req.pathgate gathers both, the later mode and value winning', async () => {
    const app = express();
    app.post(
      '/copy',
      express.json(),
      gate.read({ body: 'from' }, { body: 'note', optional: true }),
      gate.write({ body: 'to' }, { body: 'note', optional: true }),
      sendInfo,
    );
    const { body } = await supertest(app)
      .post('/copy')
      .send({ from: 'docs/a.txt', to: 'uploads/b.txt', note: 'uploads/n.txt' })
      .expect(200);
    expect(body.pathgate).toEqual({
      mode: 'write',
      params: {},
      query: {},
      body: {
        from: `${ROOT}/docs/a.txt`,
        to: `${ROOT}/uploads/b.txt`,
        note: `${ROOT}/uploads/n.txt`,
      },
      headers: {},
      files: [],
    });
    // The first gate's mode still applies to its own value: docs/ is read-only.
    await supertest(app).post('/copy').send({ from: 'docs/a', to: 'docs/b' }).expect(403);
  });

  it("two gates whose selectors share a key ('to.x', ['to', 'x']): the later gate's path is recorded", async () => {
    const app = express();
    app.post(
      '/copy',
      express.json(),
      gate.write({ body: 'to.x' }),
      gate.read({ body: ['to', 'x'] }),
      sendInfo,
    );
    const { body } = await supertest(app)
      .post('/copy')
      .send({ 'to.x': 'uploads/a', to: { x: 'docs/b' } })
      .expect(200);
    expect(body.pathgate.body).toEqual({ 'to.x': `${ROOT}/docs/b` });
  });

  it('one gate declaring both of such a pair throws at startup, naming both specs', () => {
    expect(() => gate.write({ body: 'to.x' }, { body: ['to', 'x'] })).toThrow(
      /^pathgate: route gate\.write\(\) #\d+: paths\[0\] \(body "to\.x"\) and paths\[1\] \(body \["to","x"\]\) select different values/,
    );
  });

  it('two gates: a source neither declares is still the shared frozen empty record', async () => {
    const app = express();
    app.post(
      '/copy',
      express.json(),
      gate.read({ body: 'from' }),
      gate.write({ body: 'to' }),
      (req, res) => {
        const info = req.pathgate as PathgateInfo;
        res.json([info.params, info.query, info.headers].map((record) => Object.isFrozen(record)));
      },
    );
    const { body } = await supertest(app)
      .post('/copy')
      .send({ from: 'docs/a.txt', to: 'uploads/b.txt' })
      .expect(200);
    expect(body).toEqual([true, true, true]);
  });

  it('gathering never crosses requests: a first gate alone leaves the next request clean', async () => {
    const app = express();
    app.get('/one/*path', read, sendInfo);
    app.post('/two', express.json(), gate.write({ body: 'to' }), sendInfo);
    await supertest(app).get('/one/docs/a.txt').expect(200);
    const { body } = await supertest(app).post('/two').send({ to: 'uploads/x' }).expect(200);
    expect(body.pathgate.params).toEqual({});
    expect(body.pathgate.body).toEqual({ to: `${ROOT}/uploads/x` });
  });

  it("on the request's own property too, a record from another request is never joined", async () => {
    const app = express();
    // An own pathgate on the app's request prototype: gates fall back to the request itself.
    Object.defineProperty(app.request, 'pathgate', { value: undefined, writable: true });
    let saved: unknown;
    app.get(
      '/j',
      gate.read({ query: 'a' }),
      (req, _res, next) => {
        if (saved === undefined) saved = req.pathgate;
        else (req as { pathgate?: unknown }).pathgate = saved;
        next();
      },
      gate.read({ query: 'b' }),
      sendInfo,
    );
    await supertest(app).get('/j?a=docs/one&b=docs/x').expect(200);
    const { body } = await supertest(app).get('/j?a=docs/two&b=docs/y').expect(200);
    expect(body.pathgate.query).toEqual({ b: `${ROOT}/docs/y` });
  });

  it('keeps requests in flight apart (each response holds its own)', async () => {
    const app = express();
    app.get('/files/*path', read, (req, res) => {
      // Answer out of order, so later requests are checked while earlier ones wait.
      setTimeout(() => res.json({ path: req.pathgate?.params.path }), Math.random() * 20);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as { port: number };
      const names = Array.from({ length: 24 }, (_, i) => `docs/n${i}.txt`);
      const answers = await Promise.all(
        names.map((name) => fetch(`http://127.0.0.1:${port}/files/${name}`).then((r) => r.json())),
      );
      expect(answers).toEqual(names.map((name) => ({ path: `${ROOT}/${name}` })));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('outside Express (no app prototype, no res.locals) is set on the request itself', () => {
    const req = { params: { path: 'docs/a.txt' }, headers: {} } as unknown as Request;
    let nexts = 0;
    read(req, {} as Response, () => {
      nexts += 1;
    });
    expect(nexts).toBe(1);
    expect(Object.getOwnPropertyDescriptor(req, 'pathgate')?.value?.params).toEqual({
      path: `${ROOT}/docs/a.txt`,
    });
    // A second gate joins its paths to the first gate's there too.
    Object.assign(req, { body: { to: 'uploads/b.txt' } });
    gate.write({ body: 'to' })(req, {} as Response, () => {
      nexts += 1;
    });
    expect(nexts).toBe(2);
    const joined = Object.getOwnPropertyDescriptor(req, 'pathgate')?.value as PathgateInfo;
    expect([joined.mode, joined.params, joined.body]).toEqual([
      'write',
      { path: `${ROOT}/docs/a.txt` },
      { to: `${ROOT}/uploads/b.txt` },
    ]);
  });
});
