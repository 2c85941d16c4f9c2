import { denyBody, type GuardDenyReason } from '@pathgate/core';
import express, {
  type ErrorRequestHandler,
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import multer from 'multer';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { pathgate } from '../src/index.js';
import { filePart, MULTIPART, multipart, multipartPost, request, withServed } from './helpers.js';

// How the app is put together, rather than what the client sends: sub-apps
// with their own settings, nested routers, app.route(), arrays of
// middlewares, app.param, next('route'), an error handler that swallows a
// deny, HEAD and OPTIONS, two gates and two policies on one route. For each,
// what the handler sees against what the gate checked.

const ROOT = '/srv/root';
const gate = pathgate({ root: ROOT, fs: ['docs/**', 'rw:uploads/**'] });
const denied = (label: string, reason: GuardDenyReason = 'path-not-in-allowlist') =>
  denyBody({ reason, label });

/** The handler: counts its calls, answers what it sees. */
function handler() {
  let calls = 0;
  const answer = (req: Request, res: Response) => {
    calls += 1;
    res.json({ pathgate: req.pathgate ?? null, params: req.params, query: req.query });
  };
  return { answer, calls: () => calls };
}

const toNextRoute = (_req: Request, _res: Response, next: NextFunction) => next('route');

describe('sub-apps mounted with app.use keep their own settings', () => {
  it("a gate in the sub-app's route checks the sub-app's query parse, and its handler gets the paths", async () => {
    const { answer } = handler();
    const sub = express();
    sub.set('query parser', 'extended');
    sub.get('/q', gate.read({ query: 'p' }), answer);
    const app = express();
    app.use('/v1', sub);
    const { body } = await supertest(app).get('/v1/q?p[]=docs/a&p[]=docs/b').expect(200);
    expect(body.pathgate.query).toEqual({ p: [`${ROOT}/docs/a`, `${ROOT}/docs/b`] });
    const res = await supertest(app).get('/v1/q?p[]=docs/a&p[]=../../etc/passwd').expect(403);
    expect(res.body).toEqual(denied('query.p'));
  });

  it("a gate in the parent's app.use checks the parent's parse: the sub-app's handler reads another", async () => {
    // By design (README): req.query is parsed by the app that reads it. The
    // parent's parser reads `p[]` as its own key, so the optional `p` is
    // skipped, and req.pathgate holds no path the gate did not check.
    const { answer } = handler();
    const sub = express();
    sub.set('query parser', 'extended');
    sub.get('/q', answer);
    const app = express();
    app.use('/v1', gate.read({ query: 'p', optional: true }), sub);
    const { body } = await supertest(app).get('/v1/q?p[]=../../etc/passwd').expect(200);
    expect(body.query).toEqual({ p: ['../../etc/passwd'] });
    expect(body.pathgate.query).toEqual({});
  });

  it('case-sensitive and strict routing in a sub-app: the trailing slash is an empty segment, checked', async () => {
    const { answer, calls } = handler();
    const sub = express();
    sub.set('case sensitive routing', true);
    sub.set('strict routing', true);
    sub.get('/F/*path', gate.read({ params: 'path' }), answer);
    const app = express();
    app.use('/v', sub);
    const { body } = await supertest(app).get('/V/F/docs/a/').expect(200);
    expect(body.params.path).toEqual(['docs', 'a', '']);
    expect(body.pathgate.params).toEqual({ path: `${ROOT}/docs/a` });
    await supertest(app).get('/v/f/docs/a/').expect(404);
    await supertest(app).get('/v/F/docs/..%2F..%2Fetc/').expect(403);
    expect(calls()).toBe(1);
  });
});

describe('routers and route shapes', () => {
  it('a nested router without mergeParams: the parent param is missing, so every request is denied', async () => {
    const { answer, calls } = handler();
    const specs = [
      { params: 'dir', under: 'docs' },
      { params: 'name', under: 'docs' },
    ];
    const merged = express.Router({ mergeParams: true }).get('/:name', gate.read(...specs), answer);
    const alone = express.Router().get('/:name', gate.read(...specs), answer);
    const app = express();
    app.use('/merged/:dir', merged);
    app.use('/alone/:dir', alone);
    const { body } = await supertest(app).get('/merged/x/y').expect(200);
    expect(body.pathgate.params).toEqual({ dir: `${ROOT}/docs/x`, name: `${ROOT}/docs/y` });
    await supertest(app).get('/merged/..%2F..%2Fetc/passwd').expect(403);
    const res = await supertest(app).get('/alone/x/y').expect(403);
    expect(res.body).toEqual(denied('params.dir', 'missing-path'));
    expect(calls()).toBe(1);
  });

  it('app.route() with one gate on two methods, twice on one, and a gate in an array of middlewares', async () => {
    const { answer, calls } = handler();
    const read = gate.read({ params: 'path' });
    const app = express();
    app.route('/r/*path').get(read, answer).post(read, read, answer);
    app.put('/r/*path', [gate.write({ params: 'path' }), answer]);
    await supertest(app).get('/r/docs/a').expect(200);
    const { body } = await supertest(app).post('/r/docs/a').expect(200);
    expect(body.pathgate).toMatchObject({ mode: 'read', params: { path: `${ROOT}/docs/a` } });
    await supertest(app).post('/r/..%2Fetc').expect(403);
    await supertest(app).put('/r/docs/a').expect(403);
    await supertest(app).put('/r/uploads/a').expect(200);
    expect(calls()).toBe(3);
  });

  it('an array of paths: the params of the one that matched are checked', async () => {
    const { answer, calls } = handler();
    const app = express();
    app.get(
      ['/a/:p', '/b/*p', /^\/c\/(?<p>.*)$/],
      gate.read({ params: 'p', under: 'docs' }),
      answer,
    );
    for (const path of ['/a/x', '/b/x', '/c/x']) {
      const { body } = await supertest(app).get(path).expect(200);
      expect(body.pathgate.params).toEqual({ p: `${ROOT}/docs/x` });
    }
    for (const path of ['/a/..%2F..%2Fx', '/b/..%2F..%2Fx', '/c/../../x', '/c/..%2F..%2Fx']) {
      expect((await supertest(app).get(path).expect(403)).body).toEqual(denied('params.p'));
    }
    expect(calls()).toBe(3);
  });

  it('app.param rewrites the param before the route: the gate checks the rewritten value', async () => {
    const { answer, calls } = handler();
    const app = express();
    app.param('name', (req, _res, next, value) => {
      req.params.name = `../${value}`;
      next();
    });
    app.get('/n/:name', gate.read({ params: 'name', under: 'docs' }), answer);
    const res = await supertest(app).get('/n/a').expect(403);
    expect(res.body).toEqual(denied('params.name'));
    expect(calls()).toBe(0);
  });

  it("app.all('*splat'): every method is checked, OPTIONS included; the splat starts with an empty segment", async () => {
    const { answer, calls } = handler();
    const app = express();
    app.all('/rel*splat', gate.read({ params: 'splat', under: '.' }), answer);
    app.all('*splat', gate.read({ params: 'splat' }), answer);
    for (const method of ['get', 'post', 'delete', 'options'] as const) {
      await supertest(app)[method]('/..%2Fetc/passwd').expect(403);
      await supertest(app)[method]('/rel/..%2F..%2Fetc/passwd').expect(403);
    }
    // `/docs/a` gives ['', 'docs', 'a']: the absolute /docs/a, outside the root, unless under joins it.
    const { body } = await supertest(app).options('/docs/a').expect(403);
    expect(body).toEqual(denied('params.splat'));
    const rel = await supertest(app).options('/rel/docs/a').expect(200);
    expect(rel.body.params.splat).toEqual(['', 'docs', 'a']);
    expect(rel.body.pathgate.params).toEqual({ splat: `${ROOT}/docs/a` });
    expect(calls()).toBe(1);
  });

  it('HEAD on a GET route runs its gate; the automatic OPTIONS answer reaches no handler', async () => {
    const { answer, calls } = handler();
    const app = express();
    app.get('/f/*path', gate.read({ params: 'path' }), answer);
    await supertest(app).head('/f/..%2F..%2Fetc').expect(403);
    await supertest(app).head('/f/docs/a').expect(200);
    const res = await supertest(app).options('/f/..%2F..%2Fetc').expect(200);
    expect(res.headers.allow).toBe('GET, HEAD');
    expect(calls()).toBe(1);
  });
});

describe('req.url rewritten by a middleware', () => {
  /** Points `req.url` at `to`, as a rewriting middleware does. */
  const rewrite =
    (from: RegExp, to: string): RequestHandler =>
    (req, _res, next) => {
      req.url = req.url.replace(from, to);
      next();
    };

  it('before the route: the params and query of the new URL are routed and checked', async () => {
    const { answer, calls } = handler();
    const app = express();
    app.use(rewrite(/^\/old\//, '/f/'));
    app.get('/f/*path', gate.read({ params: 'path' }, { query: 'q', optional: true }), answer);
    const { body } = await supertest(app).get('/old/docs/a?q=docs/b').expect(200);
    expect(body.pathgate).toMatchObject({
      params: { path: `${ROOT}/docs/a` },
      query: { q: `${ROOT}/docs/b` },
    });
    expect((await supertest(app).get('/old/..%2F..%2Fx').expect(403)).body).toEqual(
      denied('params.path'),
    );
    await supertest(app).get('/old/docs/a?q=../x').expect(403);
    expect(calls()).toBe(1);
  });

  it('between the gate and the handler: req.query is parsed again from the new URL, unchecked (README)', async () => {
    const { answer } = handler();
    const app = express();
    app.get('/f', gate.read({ query: 'q' }), rewrite(/\?.*/, '?q=../../etc/passwd'), answer);
    const { body } = await supertest(app).get('/f?q=docs/a').expect(200);
    expect(body.query).toEqual({ q: '../../etc/passwd' });
    expect(body.pathgate.query).toEqual({ q: `${ROOT}/docs/a` });
  });
});

describe('HEAD with a multipart body on a route with gate.multer()', () => {
  /** A HEAD to /up whose multipart body carries one file part named `name`. */
  const headUpload = (app: Express, name: string) =>
    withServed(app, (served) =>
      request(served.port, 'HEAD', '/up', {
        headers: { 'content-type': MULTIPART },
        body: multipart([filePart('f', name)]),
      }),
    );

  it('the gate sees the multer middleware that runs for HEAD, as the GET one does', async () => {
    const { answer, calls } = handler();
    const app = express();
    const up = gate.multer({ storage: multer.memoryStorage() });
    app.get('/up', gate.read({ file: 'f', under: 'docs' }), up.single('f'), answer);
    const head = (name: string) => headUpload(app, name);
    expect((await head('a.txt')).status).toBe(200);
    expect((await head('../../etc/passwd')).status).toBe(403);
    expect(calls()).toBe(1);
  });

  it("on a route with HEAD layers of its own, the gate sees that route's HEAD multer middleware", async () => {
    const { answer, calls } = handler();
    const app = express();
    const up = gate.multer({ storage: multer.memoryStorage() });
    app.route('/up').head(gate.read({ file: 'f', under: 'docs' }), up.single('f'), answer);
    const head = (name: string) => headUpload(app, name);
    expect((await head('a.txt')).status).toBe(200);
    expect((await head('../../etc/passwd')).status).toBe(403);
    expect(calls()).toBe(1);
  });
});

describe("next('route') after an allow", () => {
  it("the next route's own gate still checks, in its own mode", async () => {
    const { answer, calls } = handler();
    const app = express();
    app.get('/f/*path', gate.read({ params: 'path' }), toNextRoute);
    app.get('/f/*path', gate.write({ params: 'path' }), answer);
    const res = await supertest(app).get('/f/docs/a').expect(403);
    expect(res.body).toEqual(denied('params.path', 'mode-not-permitted'));
    const { body } = await supertest(app).get('/f/uploads/a').expect(200);
    expect(body.pathgate).toMatchObject({ mode: 'write', params: { path: `${ROOT}/uploads/a` } });
    expect(calls()).toBe(1);
  });

  it('a next route without a gate sees what the first recorded (README: check with its own gate)', async () => {
    const { answer } = handler();
    const app = express();
    app.get('/f/*path', gate.read({ params: 'path' }), toNextRoute);
    app.get('/f/*path', answer);
    const { body } = await supertest(app).get('/f/docs/a').expect(200);
    expect(body.pathgate).toMatchObject({ mode: 'read', params: { path: `${ROOT}/docs/a` } });
    // Denied on the first route: the second is never reached.
    await supertest(app).get('/f/..%2Fetc').expect(403);
  });
});

describe("errors: 'next' and an error handler in the route that swallows the deny", () => {
  const nextGate = pathgate({ root: ROOT, fs: ['docs/**', 'rw:uploads/**'], errors: 'next' });
  const swallow: ErrorRequestHandler = (_error, _req, _res, next) => next();

  it('the handler runs without req.pathgate: nothing unchecked is handed over', async () => {
    const { answer, calls } = handler();
    const app = express();
    app.get('/f/*path', nextGate.read({ params: 'path' }), swallow, answer);
    const { body } = await supertest(app).get('/f/..%2F..%2Fetc').expect(200);
    expect(body.pathgate).toBeNull();
    expect(calls()).toBe(1);
  });

  it("after an earlier gate allowed: only that gate's paths, in its mode", async () => {
    const { answer } = handler();
    const app = express();
    app.post(
      '/copy',
      express.json(),
      nextGate.read({ body: 'from' }),
      nextGate.write({ body: 'to' }),
      swallow,
      answer,
    );
    const { body } = await supertest(app)
      .post('/copy')
      .send({ from: 'docs/a', to: 'docs/b' })
      .expect(200);
    expect(body.pathgate).toMatchObject({ mode: 'read', body: { from: `${ROOT}/docs/a` } });
    expect(body.pathgate.body).not.toHaveProperty('to');
  });

  it('a file part denied inside multer: the handler, once, without req.pathgate or the denied file', async () => {
    let calls = 0;
    const app = express();
    const upload = nextGate.multer({ storage: multer.memoryStorage() }).any();
    app.post(
      '/up',
      nextGate.write({ file: true, under: 'uploads' }),
      upload,
      swallow,
      (req: Request, res: Response) => {
        calls += 1;
        res.json({ pathgate: req.pathgate ?? null, files: req.files ?? null });
      },
    );
    const parts = [filePart('f', 'ok.txt'), filePart('f', '../../../etc/x')];
    const res = await withServed(app, (s) =>
      request(s.port, 'POST', '/up', {
        headers: { 'content-type': MULTIPART },
        body: multipart(parts),
      }),
    );
    expect(res.status).toBe(200);
    // multer lists what it took before the abort: only the checked file, never the denied one.
    expect(res.json).toEqual({
      pathgate: null,
      files: [
        expect.objectContaining({ originalname: 'ok.txt', pathgatePath: `${ROOT}/uploads/ok.txt` }),
      ],
    });
    expect(calls).toBe(1);
  });
});

describe('two gates of two policies on one route', () => {
  it('each checks with its own policy, and both must allow', async () => {
    const { answer, calls } = handler();
    const narrow = pathgate({ root: ROOT, fs: ['docs/public/**'] });
    const app = express();
    app.get('/f/*path', gate.read({ params: 'path' }), narrow.read({ params: 'path' }), answer);
    await supertest(app).get('/f/docs/public/a').expect(200);
    const res = await supertest(app).get('/f/docs/secret').expect(403);
    expect(res.body).toEqual(denied('params.path'));
    await supertest(app).get('/f/uploads/a').expect(403);
    expect(calls()).toBe(1);
  });
});

describe('a gate after a middleware that sent the headers (an event stream)', () => {
  /** Starts a 200 event stream, as a server-sent events route does before its checks. */
  const startStream = (_req: Request, res: Response, next: NextFunction) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: open\n\n');
    next();
  };

  it('report-only: the deny is logged and the handler still runs (no hang)', async () => {
    const logged: unknown[] = [];
    const watching = pathgate({
      root: ROOT,
      fs: ['docs/**'],
      reportOnly: true,
      log: (entry) => logged.push(entry.event),
    });
    const app = express();
    app.get('/events', startStream, watching.read({ query: 'p' }), (_req, res) => {
      res.end('data: handled\n\n');
    });
    const res = await withServed(app, (s) => request(s.port, 'GET', '/events?p=../x'));
    expect(res.text).toBe('data: open\n\ndata: handled\n\n');
    expect(logged).toEqual(['report-only']);
  });

  /** The stream, then `guard`, on GET and POST; every error noted, then handed to Express's default handler. */
  function streamApp(guard: RequestHandler) {
    const errors: unknown[] = [];
    const app = express();
    app.all('/events', startStream, guard, (_req, res) => {
      res.end('data: handled\n\n');
    });
    app.use(((error, _req, _res, next) => {
      errors.push(error);
      next(error);
    }) as ErrorRequestHandler);
    return { app, errors };
  }

  const deniedError = expect.objectContaining({
    status: 403,
    label: 'query.p',
    reason: 'path-not-in-allowlist',
  });

  it('enforced: no 403 can go out, so the deny goes to the error handler (the default one closes the connection)', async () => {
    const { app, errors } = streamApp(gate.read({ query: 'p' }));
    const res = await withServed(app, (s) =>
      request(s.port, 'GET', '/events?p=../x').catch((error: Error) => error.message),
    );
    expect(res).toBe('aborted');
    expect(errors).toEqual([deniedError]);
  });

  it('enforced, the body still arriving: still the deny goes to the error handler (no Connection header after the headers)', async () => {
    const { app, errors } = streamApp(gate.read({ query: 'p' }));
    const res = await withServed(app, (s) => {
      const req = multipartPost(s.port, '/events?p=../x', 1000);
      req.write('--');
      return new Promise<string>((resolve) => {
        req.on('response', (answer) => answer.on('error', (error) => resolve(error.message)));
        req.on('error', (error) => resolve(error.message));
      }).finally(() => req.destroy());
    });
    expect(res).toBe('aborted');
    expect(errors).toEqual([deniedError]);
  });

  /** A gate whose onDeny ends the stream itself. */
  const ending = pathgate({
    root: ROOT,
    fs: ['docs/**'],
    onDeny: (_denial, _req, res) => {
      res.end('data: denied\n\n');
    },
  });

  it('enforced: an onDeny that ends the stream answered: the error handler is not called', async () => {
    const { app, errors } = streamApp(ending.read({ query: 'p' }));
    const res = await withServed(app, (s) => request(s.port, 'GET', '/events?p=../x'));
    expect(res.text).toBe('data: open\n\ndata: denied\n\n');
    expect(errors).toEqual([]);
  });
  // The body still arriving, the connection closed after the stream's end:
  // test/connection.test.ts, for both adapters.
});
