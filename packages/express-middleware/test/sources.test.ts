import { denyBody, type GuardDenyReason } from '@pathgate/core';
import express, { type Express } from 'express';
import supertest from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { type PathgateLogEntry, type PathgateOptions, pathgate } from '../src/index.js';

// Every source (params, query, body, headers), each deny reason, missing and
// optional values, and modes, through supertest. The handler counts its
// calls: a deny never reaches it.

const ROOT = '/srv/root';
const FS = ['rw:uploads/**', 'docs/**', 'rw:reports/**'];

let calls = 0;

function buildApp(options: Partial<PathgateOptions> = {}): Express {
  const gate = pathgate({ root: ROOT, fs: FS, ...options } as PathgateOptions);
  const app = express();
  app.use(express.json());
  const handler: express.RequestHandler = (req, res) => {
    calls += 1;
    res.json({ pathgate: req.pathgate, query: req.query });
  };
  app.get('/files/*path', gate.read({ params: 'path' }), handler);
  app.get('/doc/:name', gate.read({ params: 'name', under: 'docs' }), handler);
  app.get('/q', gate.read({ query: 'path' }), handler);
  app.get('/q-write', gate.write({ query: 'path' }), handler);
  app.get(
    '/opt',
    gate.read({ query: 'a', optional: true }, { query: 'b', optional: true }),
    handler,
  );
  app.get('/h', gate.read({ headers: 'X-File' }), handler);
  app.get('/qh', gate.read({ query: 'path' }, { headers: 'x-file' }), handler);
  // Without gate.multer(): a JSON request's file is missing, once its other values pass.
  app.post('/qf', gate.write({ query: 'to' }, { file: 'avatar', under: 'uploads' }), handler);
  app.post('/move', gate.write({ body: 'from' }, { body: 'to' }), handler);
  app.post('/deep', gate.write({ body: ['files', 0, 'path'] }), handler);
  app.post('/under', gate.write({ body: 'name', under: 'uploads' }), handler);
  app.post('/list', gate.write({ body: 'paths' }), handler);
  app.post(
    '/mixed',
    gate.write({ params: 'x', optional: true }, { query: 'q' }, { body: 'b' }),
    handler,
  );
  return app;
}

const denied = (reason: GuardDenyReason, label: string) => denyBody({ reason, label });

beforeEach(() => {
  calls = 0;
});

describe('allowed values: the canonical paths go to req.pathgate', () => {
  const app = buildApp();

  it('params: a named wildcard is one path, its segments joined with /', async () => {
    const res = await supertest(app).get('/files/docs/a/b.txt').expect(200);
    expect(res.body.pathgate).toEqual({
      mode: 'read',
      params: { path: `${ROOT}/docs/a/b.txt` },
      query: {},
      body: {},
      headers: {},
      files: [],
    });
  });

  it('params with under: the value is a name inside docs/', async () => {
    const res = await supertest(app).get('/doc/report.pdf').expect(200);
    expect(res.body.pathgate.params).toEqual({ name: `${ROOT}/docs/report.pdf` });
  });

  it('query: req.query keeps the raw text, req.pathgate the canonical path', async () => {
    const res = await supertest(app).get('/q?path=docs/./x/../y.txt').expect(200);
    expect(res.body.query).toEqual({ path: 'docs/./x/../y.txt' });
    expect(res.body.pathgate.query).toEqual({ path: `${ROOT}/docs/y.txt` });
  });

  it('query: a repeated key is a list of paths, each checked', async () => {
    const res = await supertest(app).get('/q?path=docs/a&path=uploads/b').expect(200);
    expect(res.body.pathgate.query).toEqual({ path: [`${ROOT}/docs/a`, `${ROOT}/uploads/b`] });
  });

  it('headers: the name is case-insensitive', async () => {
    const res = await supertest(app).get('/h').set('x-FILE', 'docs/h.txt').expect(200);
    expect(res.body.pathgate.headers).toEqual({ 'x-file': `${ROOT}/docs/h.txt` });
  });

  it('query and headers on one route: both are read and checked', async () => {
    const res = await supertest(app).get('/qh?path=docs/q').set('x-file', 'docs/h').expect(200);
    expect(res.body.pathgate).toMatchObject({
      query: { path: `${ROOT}/docs/q` },
      headers: { 'x-file': `${ROOT}/docs/h` },
    });
  });

  it('body: two keys, an absolute value inside the root, a key/index selector', async () => {
    const move = await supertest(app)
      .post('/move')
      .send({ from: 'uploads/a.txt', to: `${ROOT}/reports/q3.csv` })
      .expect(200);
    expect(move.body.pathgate.body).toEqual({
      from: `${ROOT}/uploads/a.txt`,
      to: `${ROOT}/reports/q3.csv`,
    });
    const deep = await supertest(app)
      .post('/deep')
      .send({ files: [{ path: 'uploads/x' }] })
      .expect(200);
    expect(deep.body.pathgate.body).toEqual({ 'files.0.path': `${ROOT}/uploads/x` });
  });

  it('body with under: a leading / is still a name inside uploads/', async () => {
    const res = await supertest(app).post('/under').send({ name: '/avatar.png' }).expect(200);
    expect(res.body.pathgate.body).toEqual({ name: `${ROOT}/uploads/avatar.png` });
  });

  it('body: an array of paths is checked element by element', async () => {
    const res = await supertest(app)
      .post('/list')
      .send({ paths: ['uploads/a', 'reports/b'] })
      .expect(200);
    expect(res.body.pathgate.body).toEqual({ paths: [`${ROOT}/uploads/a`, `${ROOT}/reports/b`] });
    expect(calls).toBe(1);
  });
});

describe('each deny reason: 403, the core body, and the handler is not called', () => {
  const app = buildApp();
  const ROWS: readonly (readonly [string, () => supertest.Test, GuardDenyReason, string])[] = [
    [
      'query ../../etc/passwd',
      () => supertest(app).get('/q?path=../../etc/passwd'),
      'path-not-in-allowlist',
      'query.path',
    ],
    [
      'a header on a route that reads the query too',
      () => supertest(app).get('/qh?path=docs/q').set('x-file', '../../etc/passwd'),
      'path-not-in-allowlist',
      'headers.x-file',
    ],
    [
      'a query on a route that takes a file: the bad value, not the missing file',
      () => supertest(app).post('/qf?to=../../app.js').send({}),
      'path-not-in-allowlist',
      'query.to',
    ],
    [
      'params traversal',
      () => supertest(app).get('/doc/..%2F..%2Fsecret'),
      'path-not-in-allowlist',
      'params.name',
    ],
    [
      'write on an r: rule',
      () => supertest(app).get('/q-write?path=docs/a'),
      'mode-not-permitted',
      'query.path',
    ],
    [
      'body: a number',
      () => supertest(app).post('/move').send({ from: 42, to: 'uploads/a' }),
      'not-a-string',
      'body.from',
    ],
    [
      'body: null',
      () => supertest(app).post('/move').send({ from: null, to: 'uploads/a' }),
      'not-a-string',
      'body.from',
    ],
    [
      'body: an object',
      () =>
        supertest(app)
          .post('/move')
          .send({ from: { path: 'x' }, to: 'x' }),
      'not-a-string',
      'body.from',
    ],
    [
      'body: a nested array',
      () =>
        supertest(app)
          .post('/list')
          .send({ paths: [['uploads/a']] }),
      'not-a-string',
      'body.paths',
    ],
    [
      'body: NUL',
      () => supertest(app).post('/move').send({ from: 'uploads/a\u0000.txt', to: 'uploads/b' }),
      'nul-byte',
      'body.from',
    ],
    ['query: %00', () => supertest(app).get('/q?path=docs/a%00.txt'), 'nul-byte', 'query.path'],
    [
      'body: a lone surrogate',
      () =>
        supertest(app)
          .post('/move')
          .set('content-type', 'application/json')
          .send('{"from":"uploads/\\ud800","to":"uploads/b"}'),
      'invalid-unicode',
      'body.from',
    ],
    [
      'second key denied',
      () => supertest(app).post('/move').send({ from: 'uploads/a', to: 'docs/b' }),
      'mode-not-permitted',
      'body.to',
    ],
    [
      'one bad element of a list',
      () =>
        supertest(app)
          .post('/list')
          .send({ paths: ['uploads/a', '../x'] }),
      'path-not-in-allowlist',
      'body.paths',
    ],
    [
      'one bad value of a repeated query key',
      () => supertest(app).get('/q?path=docs/a&path=../../etc'),
      'path-not-in-allowlist',
      'query.path',
    ],
    [
      'header traversal',
      () => supertest(app).get('/h').set('X-File', '../../../etc/shadow'),
      'path-not-in-allowlist',
      'headers.x-file',
    ],
    [
      'under: no escaping uploads/',
      () => supertest(app).post('/under').send({ name: '../../etc/cron.d/x' }),
      'path-not-in-allowlist',
      'body.name',
    ],
    [
      'under: .. out of uploads/ into an r: rule',
      () => supertest(app).post('/under').send({ name: '../docs/a' }),
      'mode-not-permitted',
      'body.name',
    ],
  ];
  it.each(ROWS)('%s', async (_name, send, reason, label) => {
    const res = await send().expect(403).expect('content-type', /json/);
    expect(res.body).toEqual(denied(reason, label));
    expect(res.text).not.toContain(ROOT);
    expect(calls).toBe(0);
  });

  it('resolve-failed: a resolver that throws denies', async () => {
    const failing = buildApp({
      resolve: (path: string) => {
        if (path.includes('boom')) throw new Error('EACCES');
        return path;
      },
    });
    const res = await supertest(failing).get('/q?path=docs/boom').expect(403);
    expect(res.body).toEqual(denied('resolve-failed', 'query.path'));
    await supertest(failing).get('/q?path=docs/fine').expect(200);
  });
});

describe('missing and optional values', () => {
  const app = buildApp();
  const ROWS: readonly (readonly [string, () => supertest.Test, string])[] = [
    ['query key absent', () => supertest(app).get('/q'), 'query.path'],
    ['query key empty', () => supertest(app).get('/q?path='), 'query.path'],
    ['query key bare', () => supertest(app).get('/q?path'), 'query.path'],
    ['header absent', () => supertest(app).get('/h'), 'headers.x-file'],
    ['no JSON body', () => supertest(app).post('/move'), 'body.from'],
    [
      'JSON body of the wrong type',
      () => supertest(app).post('/move').set('content-type', 'text/plain').send('from=x'),
      'body.from',
    ],
    ['body key absent', () => supertest(app).post('/move').send({ to: 'uploads/a' }), 'body.from'],
    [
      'body is an array',
      () =>
        supertest(app)
          .post('/move')
          .send([{ from: 'uploads/a' }]),
      'body.from',
    ],
    ['empty list', () => supertest(app).post('/list').send({ paths: [] }), 'body.paths'],
    [
      'index past the end',
      () => supertest(app).post('/deep').send({ files: [] }),
      'body.files.0.path',
    ],
    [
      'prototype key',
      () => supertest(app).post('/move').send({ to: 'uploads/a', constructor: 'x' }),
      'body.from',
    ],
  ];
  it.each(ROWS)('%s → missing-path', async (_name, send, label) => {
    const res = await send().expect(403);
    expect(res.body).toEqual(denied('missing-path', label));
    expect(calls).toBe(0);
  });

  it('optional values may be absent (and are left out of req.pathgate), not wrong', async () => {
    const none = await supertest(app).get('/opt').expect(200);
    expect(none.body.pathgate.query).toEqual({});
    const one = await supertest(app).get('/opt?b=docs/b').expect(200);
    expect(one.body.pathgate.query).toEqual({ b: `${ROOT}/docs/b` });
    const bad = await supertest(app).get('/opt?a=../../x').expect(403);
    expect(bad.body).toEqual(denied('path-not-in-allowlist', 'query.a'));
    expect(calls).toBe(2);
  });

  it('a route mixing sources: an optional param absent from the route pattern is skipped', async () => {
    const res = await supertest(app)
      .post('/mixed?q=reports/q')
      .send({ b: 'uploads/b' })
      .expect(200);
    expect(res.body.pathgate).toMatchObject({
      params: {},
      query: { q: `${ROOT}/reports/q` },
      body: { b: `${ROOT}/uploads/b` },
    });
  });
});

describe('modes', () => {
  const app = buildApp();
  it('read passes on r: and rw: rules, write only on rw:', async () => {
    await supertest(app).get('/q?path=docs/a').expect(200);
    await supertest(app).get('/q?path=uploads/a').expect(200);
    await supertest(app).get('/q-write?path=uploads/a').expect(200);
    const res = await supertest(app).get('/q-write?path=docs/a').expect(403);
    expect(res.body.reason).toBe('mode-not-permitted');
  });

  it('fs: [] denies everything', async () => {
    const closed = buildApp({ fs: [] });
    const res = await supertest(closed).get('/q?path=docs/a').expect(403);
    expect(res.body).toEqual(denied('path-not-in-allowlist', 'query.path'));
  });
});

describe('a route reads only the request parts its specs name', () => {
  /** An app whose req.query getter counts its reads (Express 5 parses the URL on each). */
  function countingApp() {
    const counter = { query: 0 };
    const gate = pathgate({ root: ROOT, fs: FS });
    const app = express();
    app.use(express.json());
    app.use((req, _res, next) => {
      const query = req.query;
      Object.defineProperty(req, 'query', {
        configurable: true,
        get: () => {
          counter.query += 1;
          return query;
        },
      });
      next();
    });
    const handler: express.RequestHandler = (req, res) => {
      calls += 1;
      res.json({ pathgate: req.pathgate, params: req.params });
    };
    app.get('/p/:name', gate.read({ params: 'name', under: 'docs' }), handler);
    app.get('/q', gate.read({ query: 'path' }, { query: 'other', optional: true }), handler);
    app.post('/b', gate.write({ body: 'to' }), handler);
    app.post(
      '/qb',
      gate.write({ query: 'path' }, { query: 'other', optional: true }, { body: 'to' }),
      handler,
    );
    app.get(
      '/two/:top/*rest',
      gate.read({ params: 'top', under: 'docs' }, { params: 'rest', under: 'docs' }),
      handler,
    );
    app.get('/index/*path', gate.read({ params: ['path', 0] }), handler);
    return { app, counter };
  }

  it('req.query is never read without a query spec, and once with two, beside a body spec too', async () => {
    const { app, counter } = countingApp();
    await supertest(app).get('/p/a.txt?path=../../x').expect(200);
    await supertest(app).post('/b?path=../../x').send({ to: 'uploads/a' }).expect(200);
    expect(counter.query).toBe(0);
    const res = await supertest(app).get('/q?path=docs/a&other=docs/b').expect(200);
    expect(res.body.pathgate.query).toEqual({ path: `${ROOT}/docs/a`, other: `${ROOT}/docs/b` });
    expect(counter.query).toBe(1);
    // With a body spec beside them: still once.
    const mixed = await supertest(app)
      .post('/qb?path=uploads/a&other=uploads/b')
      .send({ to: 'uploads/c' })
      .expect(200);
    expect(mixed.body.pathgate.body).toEqual({ to: `${ROOT}/uploads/c` });
    expect(counter.query).toBe(2);
  });

  it('a named wildcard and a named param on one route: the wildcard joined, req.params untouched', async () => {
    const { app } = countingApp();
    const res = await supertest(app).get('/two/a/b/c.txt').expect(200);
    expect(res.body.pathgate.params).toEqual({
      top: `${ROOT}/docs/a`,
      rest: `${ROOT}/docs/b/c.txt`,
    });
    expect(res.body.params).toEqual({ top: 'a', rest: ['b', 'c.txt'] });
    const denied403 = await supertest(app).get('/two/a/..%2F..%2F..%2Fetc/passwd').expect(403);
    expect(denied403.body).toEqual(denied('path-not-in-allowlist', 'params.rest'));
  });

  it('a named wildcard is one path: an index into it selects nothing', async () => {
    const { app } = countingApp();
    const res = await supertest(app).get('/index/docs/a.txt').expect(403);
    expect(res.body).toEqual(denied('missing-path', 'params.path.0'));
    expect(calls).toBe(0);
  });
});

describe('a required params spec naming no parameter of the route', () => {
  it('denies (missing-path) and logs the mistake once per gate, naming the route', async () => {
    const logs: PathgateLogEntry[] = [];
    const gate = pathgate({ root: ROOT, fs: FS, log: (entry) => logs.push(entry) });
    const app = express();
    const ok: express.RequestHandler = (_req, res) => {
      res.json({ ok: true });
    };
    app.get('/typo/:file', gate.read({ params: 'fiel', under: 'docs' }), ok);
    app.use('/mounted', gate.read({ params: 'path' }), ok);
    app.get('/right/:file', gate.read({ params: 'file', under: 'docs' }), ok);
    for (const path of ['/typo/a.txt', '/typo/b.txt', '/mounted/a', '/right/..%2F..%2Fx']) {
      await supertest(app).get(path).expect(403);
    }
    expect(logs.map((entry) => [entry.event, entry.message, entry.url])).toEqual([
      [
        'misconfigured',
        'params "fiel" is missing on route /typo/:file: a parameter the route does not have denies every request; one in an optional segment, the requests without it (mark its spec optional)',
        '/typo/a.txt',
      ],
      [
        'misconfigured',
        'params "path" is missing: a gate outside a route (in app.use() or router.use()) gets only the params of its mount path; use it in the route',
        '/mounted/a',
      ],
    ]);
  });

  it('a gate in app.use() gets the params of its mount path, and only those', async () => {
    const logs: PathgateLogEntry[] = [];
    const gate = pathgate({ root: ROOT, fs: FS, log: (entry) => logs.push(entry) });
    const app = express();
    const ok: express.RequestHandler = (req, res) => {
      res.json({ checked: req.pathgate?.params });
    };
    app.use('/users/:id', gate.read({ params: 'id', under: 'docs' }));
    app.get('/users/:id/files', ok);
    // An earlier route that passes the request on leaves req.route behind.
    app.get('/stale/:name', (_req, _res, next) => next());
    app.use('/stale', gate.read({ params: 'name', under: 'docs' }), ok);
    const allowed = await supertest(app).get('/users/a/files').expect(200);
    expect(allowed.body).toEqual({ checked: { id: '/srv/root/docs/a' } });
    await supertest(app).get('/users/..%2F..%2Fx/files').expect(403);
    const stale = await supertest(app).get('/stale/a').expect(403);
    expect(stale.body).toEqual(denied('missing-path', 'params.name'));
    expect(logs.map((entry) => entry.message)).toEqual([
      'params "name" is missing: a gate outside a route (in app.use() or router.use()) gets only the params of its mount path; use it in the route',
    ]);
  });

  it('a parameter of an optional segment is not called a typo', async () => {
    const logs: PathgateLogEntry[] = [];
    const gate = pathgate({ root: ROOT, fs: FS, log: (entry) => logs.push(entry) });
    const app = express();
    app.get('/list{/:dir}', gate.read({ params: 'dir', under: 'docs' }), (req, res) => {
      res.json({ checked: req.pathgate?.params });
    });
    const allowed = await supertest(app).get('/list/a').expect(200);
    expect(allowed.body).toEqual({ checked: { dir: '/srv/root/docs/a' } });
    const without = await supertest(app).get('/list').expect(403);
    expect(without.body).toEqual(denied('missing-path', 'params.dir'));
    expect(logs.map((entry) => entry.message)).toEqual([
      'params "dir" is missing on route /list{/:dir}: a parameter the route does not have denies every request; one in an optional segment, the requests without it (mark its spec optional)',
    ]);
  });
});
