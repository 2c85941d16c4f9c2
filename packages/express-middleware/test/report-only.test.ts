import { Readable } from 'node:stream';
import { denyBody, type PathDenial, type PathSource } from '@pathgate/core';
import express from 'express';
import type multer from 'multer';
import supertest from 'supertest';
import { describe, expect, it, vi } from 'vitest';
import type { Answer } from '../../../test/answer.js';
import {
  type PathgateLogEntry,
  type PathgateRuleOptions,
  type PathSpec,
  pathgate,
} from '../src/index.js';
import { fieldPart, filePart, filesUnder, onApp, request, upload } from './helpers.js';

// reportOnly logs what would be denied (the canonical path in the log only)
// and lets the request through; onDeny sees every deny and may shape the 403.

const ROOT = '/srv/root';

function buildApp(options: Partial<PathgateRuleOptions>) {
  const logs: PathgateLogEntry[] = [];
  const gate = pathgate({
    root: ROOT,
    fs: ['docs/**'],
    log: (entry) => logs.push(entry),
    ...options,
  });
  const app = express();
  let calls = 0;
  app.get('/q', gate.read({ query: 'path' }, { query: 'other', optional: true }), (req, res) => {
    calls += 1;
    res.json({ pathgate: req.pathgate ?? null });
  });
  return { app, logs, calls: () => calls };
}

describe('reportOnly: true', () => {
  it('logs the deny with its label, reason and canonical path, and calls the handler', async () => {
    const { app, logs, calls } = buildApp({ reportOnly: true });
    const res = await supertest(app).get('/q?path=../../etc/passwd').expect(200);
    expect(calls()).toBe(1);
    expect(res.text).not.toContain('/etc/passwd');
    expect(logs).toEqual([
      {
        event: 'report-only',
        message: 'would deny query.path (path-not-in-allowlist)',
        method: 'GET',
        url: '/q?path=../../etc/passwd',
        label: 'query.path',
        reason: 'path-not-in-allowlist',
        path: '/etc/passwd',
      },
    ]);
  });

  it('logs at most the start of a long canonical path, and none of a 1 MB value', async () => {
    const logs: PathgateLogEntry[] = [];
    const gate = pathgate({
      root: ROOT,
      fs: ['docs/**'],
      reportOnly: true,
      log: (e) => logs.push(e),
    });
    const app = express();
    app.post('/move', express.json({ limit: '2mb' }), gate.write({ body: 'to' }), (_req, res) => {
      res.send('ran');
    });
    // 4,088 characters, under the guard's cap: checked, and its canonical path logged cut short.
    for (const length of [4_080, 1_000_000]) {
      await supertest(app)
        .post('/move')
        .send({ to: `uploads/${'a'.repeat(length)}` })
        .expect(200, 'ran');
    }
    expect(logs.map((entry) => [entry.reason, JSON.stringify(entry).length < 2048])).toEqual([
      ['path-not-in-allowlist', true],
      ['path-too-long', true],
    ]);
    expect(logs[0]?.path).toMatch(/^\/srv\/root\/uploads\/a+… \(\d+ more characters\)$/);
    expect(logs[1]?.path).toBeUndefined();
  });

  it('a deny without a canonical path logs none', async () => {
    const { app, logs } = buildApp({ reportOnly: true });
    await supertest(app).get('/q').expect(200);
    expect(logs).toEqual([
      expect.objectContaining({ reason: 'missing-path', label: 'query.path' }),
    ]);
    expect(logs[0]).not.toHaveProperty('path');
  });

  it('an allowed request logs nothing and gets req.pathgate', async () => {
    const { app, logs } = buildApp({ reportOnly: true });
    const res = await supertest(app).get('/q?path=docs/a').expect(200);
    expect(res.body.pathgate.query).toEqual({ path: `${ROOT}/docs/a` });
    expect(logs).toEqual([]);
  });

  it('every value that would be denied is logged, and every one that passed is recorded', async () => {
    const logs: PathgateLogEntry[] = [];
    const gate = pathgate({
      root: ROOT,
      fs: ['rw:uploads/**'],
      reportOnly: true,
      log: (e) => logs.push(e),
    });
    const app = express();
    app.post(
      '/c',
      express.json(),
      gate.write({ body: 'a' }, { body: 'b' }, { body: 'c' }),
      (req, res) => {
        res.json({ body: req.pathgate?.body });
      },
    );
    const res = await supertest(app)
      .post('/c')
      .send({ a: 'secret/1', b: 'uploads/2', c: '../../etc/passwd' })
      .expect(200);
    expect(res.body).toEqual({ body: { b: `${ROOT}/uploads/2` } });
    expect(logs.map((e) => [e.label, e.reason])).toEqual([
      ['body.a', 'path-not-in-allowlist'],
      ['body.c', 'path-not-in-allowlist'],
    ]);
  });

  it("a list's first denied element is logged, once however many follow; the list is not recorded", async () => {
    const seen: string[] = [];
    const { app, logs } = buildApp({ reportOnly: true, onDeny: (d) => void seen.push(d.label) });
    const many = Array(500).fill('path=secret/y').join('&');
    const res = await supertest(app)
      .get(`/q?path=docs/a&path=secret/x&path=docs/%00&${many}&other=docs/b`)
      .expect(200);
    expect(res.body.pathgate.query).toEqual({ other: `${ROOT}/docs/b` });
    expect(logs.map((e) => [e.reason, e.path])).toEqual([
      ['path-not-in-allowlist', `${ROOT}/secret/x`],
    ]);
    expect(seen).toEqual(['query.path']);
  });

  it('onDeny is called, its return value ignored', async () => {
    const seen: string[] = [];
    const { app, calls } = buildApp({
      reportOnly: true,
      onDeny: (denial) => {
        seen.push(denial.reason);
        return { custom: true };
      },
    });
    await supertest(app).get('/q?path=../x').expect(200);
    expect(seen).toEqual(['path-not-in-allowlist']);
    expect(calls()).toBe(1);
  });

  it("the watch on onDeny for a piped answer ends with it: the handler's own pipe finds no listener left", async () => {
    const gate = pathgate({
      root: ROOT,
      fs: ['docs/**'],
      reportOnly: true,
      log: () => {},
      onDeny: () => {},
    });
    const app = express();
    let listeners = -1;
    app.get('/q', gate.read({ query: 'path' }), (_req, res) => {
      listeners = res.listenerCount('pipe');
      Readable.from(['handled']).pipe(res);
    });
    const res = await supertest(app).get('/q?path=../x').expect(200);
    expect([res.text, listeners]).toEqual(['handled', 0]);
  });
});

describe('onDeny', () => {
  it('sees the denial (with the canonical path, for logs) and the request', async () => {
    const seen: [PathDenial, string][] = [];
    const { app, calls } = buildApp({
      onDeny: (denial, req) => {
        seen.push([denial, req.originalUrl]);
      },
    });
    const res = await supertest(app).get('/q?path=../secret').expect(403);
    expect(res.body).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }));
    expect(seen).toHaveLength(1);
    expect(seen[0]?.[0]).toMatchObject({ reason: 'path-not-in-allowlist', label: 'query.path' });
    expect(seen[0]?.[0].result?.path).toBe('/srv/secret');
    expect(seen[0]?.[1]).toBe('/q?path=../secret');
    expect(calls()).toBe(0);
  });

  it('may set headers and return the 403 body', async () => {
    const { app } = buildApp({
      onDeny: (denial, _req, res) => {
        res.setHeader('x-denied-by', 'pathgate');
        return { error: 'nope', why: denial.reason };
      },
    });
    const res = await supertest(app).get('/q?path=../x').expect(403);
    expect(res.headers['x-denied-by']).toBe('pathgate');
    expect(res.body).toEqual({ error: 'nope', why: 'path-not-in-allowlist' });
  });

  it('may answer itself: pathgate then sends nothing more', async () => {
    const { app, calls } = buildApp({
      onDeny: (_denial, _req, res) => {
        res.redirect(303, '/login');
      },
    });
    await supertest(app).get('/q?path=../x').expect(303).expect('location', '/login');
    expect(calls()).toBe(0);
  });

  it('an async onDeny is no body: the default 403 goes out; a rejection is logged, not unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { app, logs, calls } = buildApp({
        onDeny: async () => {
          throw new Error('metrics down');
        },
      });
      const res = await supertest(app).get('/q?path=../x').expect(403);
      expect(res.body).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(logs).toEqual([
        expect.objectContaining({
          event: 'hook-failed',
          message: 'onDeny failed: metrics down',
          url: '/q?path=../x',
        }),
      ]);
      expect(unhandled).toEqual([]);
      expect(calls()).toBe(0);
      // A rejection that cannot even be printed is logged too, never thrown again.
      const unprintable = buildApp({
        onDeny: async () => {
          throw Object.create(null);
        },
      });
      await supertest(unprintable.app).get('/q?path=../x').expect(403);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(unprintable.logs).toEqual([
        expect.objectContaining({ message: 'onDeny failed: a value that cannot be printed' }),
      ]);
      expect(unhandled).toEqual([]);
      const resolved = buildApp({ onDeny: async () => ({ late: true }) });
      const late = await supertest(resolved.app).get('/q?path=../x').expect(403);
      expect(late.body).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('a throwing onDeny is handled as a rejecting one: logged, the default 403, no error handler', async () => {
    const { app, logs, calls } = buildApp({
      onDeny: () => {
        throw new Error('audit sink down');
      },
    });
    const errors: unknown[] = [];
    app.use(((error, _req, res, _next) => {
      errors.push(error);
      res.status(500).json({ error: 'handled' });
    }) as express.ErrorRequestHandler);
    const res = await supertest(app).get('/q?path=../x').expect(403);
    expect(res.body).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }));
    expect(logs).toEqual([
      expect.objectContaining({ event: 'hook-failed', message: 'onDeny failed: audit sink down' }),
    ]);
    expect(errors).toEqual([]);
    expect(calls()).toBe(0);
  });

  it('an onDeny that returns the response (res.set(…) chained) sets its header: no body, nothing logged as failed', async () => {
    const { app, logs } = buildApp({
      onDeny: (denial, _req, res) => res.set('x-denied', denial.reason),
    });
    const res = await supertest(app).get('/q?path=../x').expect(403);
    expect(res.headers['x-denied']).toBe('path-not-in-allowlist');
    expect(res.body).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }));
    expect(logs).toEqual([]);
  });

  it('report-only: a throwing onDeny is logged, and the request still goes on', async () => {
    const { app, logs, calls } = buildApp({
      reportOnly: true,
      onDeny: () => {
        throw new Error('audit sink down');
      },
    });
    await supertest(app).get('/q?path=../x').expect(200);
    // Each kind with the fields its type says it always carries, and no other.
    const request = { method: 'GET', url: '/q?path=../x' };
    expect(logs).toEqual([
      {
        event: 'hook-failed',
        message: 'onDeny failed: audit sink down',
        ...request,
        error: new Error('audit sink down'),
      },
      {
        event: 'report-only',
        message: 'would deny query.path (path-not-in-allowlist)',
        ...request,
        label: 'query.path',
        reason: 'path-not-in-allowlist',
        path: '/srv/x',
      },
    ]);
    expect(calls()).toBe(1);
  });
});

describe('log', () => {
  it('defaults to console.warn, with the message after "pathgate: " and the entry', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const { app } = buildApp({ reportOnly: true, log: undefined });
      await supertest(app).get('/q?path=../x').expect(200);
      expect(warn.mock.calls).toEqual([
        [
          'pathgate: would deny query.path (path-not-in-allowlist)',
          expect.objectContaining({
            event: 'report-only',
            label: 'query.path',
            url: '/q?path=../x',
          }),
        ],
      ]);
    } finally {
      warn.mockRestore();
    }
  });

  // An async log's type fits `log` (it returns void): its rejection, unhandled, ended the process.
  it.each([
    [
      'throwing',
      () => {
        throw new Error('log sink down');
      },
    ],
    ['rejecting', async () => Promise.reject(new Error('log sink down'))],
  ])(
    'a %s log neither crashes nor changes the answer: its error goes to stderr',
    async (_, log) => {
      const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        const { app, calls } = buildApp({ reportOnly: true, log });
        await supertest(app).get('/q?path=../x').expect(200);
        expect(calls()).toBe(1);
        expect(stderr).toHaveBeenCalledWith(
          'pathgate: the log option failed',
          new Error('log sink down'),
        );
      } finally {
        stderr.mockRestore();
      }
    },
  );
});

describe('a report-only gate beside an enforcing one', () => {
  // A rollout adds a report-only gate to a route that enforces: it reports,
  // and changes nothing the handler gets, as it decides nothing for a file.

  /** Each other source: its route, its spec (named `to`), and a request sending `app.js` there. */
  const OTHER_SOURCES: [PathSource, string, PathSpec, (port: number) => Promise<Answer>][] = [
    ['params', '/params/:to', { params: 'to' }, (port) => request(port, 'GET', '/params/app.js')],
    ['query', '/query', { query: 'to' }, (port) => request(port, 'GET', '/query?to=app.js')],
    [
      'headers',
      '/headers',
      { headers: 'to' },
      (port) => request(port, 'GET', '/headers', { headers: { to: 'app.js' } }),
    ],
  ];

  /** The enforcing gate writes `to` under uploads/; a report-only gate that allows anything reads it. */
  const build = (root: string, app: express.Express) => {
    const enforcing = pathgate({ root, fs: ['rw:uploads/**'] });
    const audit = pathgate({ root, fs: ['rw:**'], reportOnly: true, log: () => {} });
    const write = enforcing.write({ body: 'to', under: 'uploads' });
    const read = audit.read({ body: 'to' });
    const answer: express.RequestHandler = (req, res) => void res.json(req.pathgate);
    app.post('/json', express.json(), write, read, answer);
    app.post('/form', write, read, enforcing.multer().none(), answer);
    // A second report-only gate after the first still finds the enforced path under it.
    app.post(
      '/json-audited-twice',
      express.json(),
      write,
      read,
      audit.write({ body: 'to' }),
      answer,
    );
    // Frozen locals: the request itself holds the record, joined by the same rule.
    const freezeLocals: express.RequestHandler = (_req, res, next) => {
      res.locals = Object.freeze({});
      next();
    };
    app.post('/frozen-locals', express.json(), freezeLocals, write, read, answer);
    for (const [, url, spec] of OTHER_SOURCES) {
      app.get(url, enforcing.write({ ...spec, under: 'uploads' }), audit.read(spec), answer);
    }
    app.post(
      '/audits',
      express.json(),
      audit.write({ body: 'to', under: 'uploads' }),
      read,
      answer,
    );
  };

  const postJson = (port: number, path: string) =>
    request(port, 'POST', path, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'app.js' }),
    });

  it.each([
    ['a JSON body', (port: number) => postJson(port, '/json')],
    ['a multipart field', (port: number) => upload(port, '/form', [fieldPart('to', 'app.js')])],
    ['a second report-only gate', (port: number) => postJson(port, '/json-audited-twice')],
    ['frozen res.locals', (port: number) => postJson(port, '/frozen-locals')],
  ])("%s: the handler gets the enforced path and mode, not the report-only gate's", (_name, send) =>
    onApp(build, async (port, root) => {
      const res = await send(port);
      expect(res.status).toBe(200);
      // <root>/app.js, outside uploads/, was never checked by the enforcing policy.
      expect(res.json).toMatchObject({ mode: 'write', body: { to: `${root}/uploads/app.js` } });
    }),
  );

  it.each(OTHER_SOURCES)(
    "%s: the handler gets the enforced path, not the report-only gate's",
    (source, _url, _spec, send) =>
      onApp(build, async (port, root) => {
        const res = await send(port);
        expect(res.status).toBe(200);
        expect(res.json).toMatchObject({ [source]: { to: `${root}/uploads/app.js` } });
      }),
  );

  it('report-only gates alone: the later path and mode win, as between enforcing gates', () =>
    onApp(build, async (port, root) => {
      const res = await postJson(port, '/audits');
      expect(res.json).toMatchObject({ mode: 'read', body: { to: `${root}/app.js` } });
    }));
});

describe('reportOnly with multer', () => {
  interface Reports {
    readonly seen: PathDenial[];
    readonly logs: PathgateLogEntry[];
  }

  /** Answers each file's name and checked path. */
  const answerFiles: express.RequestHandler = (req, res) => {
    const files = req.files as Express.Multer.File[];
    res.json(files.map((f) => ({ file: f.originalname, path: f.pathgatePath ?? null })));
  };

  /** `POST /up`: a report-only gate and `gate.multer().array('a')`, then `answerFiles`. */
  function onUploads(run: (port: number, root: string, reports: Reports) => Promise<void>) {
    const reports: Reports = { seen: [], logs: [] };
    return onApp(
      (root, app) => {
        const gate = pathgate({
          root,
          fs: ['rw:uploads/*.png'],
          reportOnly: true,
          log: (entry) => reports.logs.push(entry),
          onDeny: (denial) => {
            reports.seen.push(denial);
          },
        });
        app.post(
          '/up',
          gate.write({ file: 'a', under: 'uploads' }),
          gate.multer().array('a'),
          answerFiles,
        );
      },
      (port, root) => run(port, root, reports),
    );
  }

  /**
   * `POST /orphan`: a report-only gate's multer middleware with no gate
   * middleware before it (`POST /guarded`: behind `gate.write` of file `a`
   * under uploads/); `filtered` names the files the app's own fileFilter saw.
   */
  function onFilteredUploads(
    onDeny: PathgateRuleOptions['onDeny'],
    run: (port: number, root: string, filtered: string[]) => Promise<void>,
  ) {
    const filtered: string[] = [];
    return onApp(
      (root, app) => {
        const gate = pathgate({
          root,
          fs: ['rw:uploads/**'],
          reportOnly: true,
          log: () => {},
          onDeny,
        });
        const fileFilter: multer.Options['fileFilter'] = (_req, file, cb) => {
          filtered.push(file.originalname);
          cb(null, true);
        };
        const up = gate.multer({ fileFilter }).any();
        app.post('/orphan', up, answerFiles);
        app.post('/guarded', gate.write({ file: 'a', under: 'uploads' }), up, answerFiles);
      },
      (port, root) => run(port, root, filtered),
    );
  }

  it('gate.multer() without a gate middleware: the file is reported unexpected, then arrives unchecked', async () => {
    const seen: PathDenial[] = [];
    await onFilteredUploads(
      (denial) => void seen.push(denial),
      async (port, root, filtered) => {
        const res = await upload(port, '/orphan', [filePart('a', 'ok.txt')]);
        expect([res.status, res.json]).toEqual([200, [{ file: 'ok.txt', path: null }]]);
        expect(seen.map((d) => [d.label, d.reason])).toEqual([['file', 'unexpected-file']]);
        expect([filtered, filesUnder(root)]).toEqual([['ok.txt'], []]);
      },
    );
  });

  it('gate.multer() without a gate middleware: an onDeny that answers itself stops the upload there', async () => {
    await onFilteredUploads(
      (_denial, _req, res) => void res.status(451).json({ mine: true }),
      async (port, root, filtered) => {
        const res = await upload(port, '/orphan', [filePart('a', 'ok.txt', 'y'.repeat(100_000))]);
        expect([res.status, res.json]).toEqual([451, { mine: true }]);
        // The app's fileFilter never sees the part: the upload was aborted before it.
        expect([filtered, filesUnder(root)]).toEqual([[], []]);
      },
    );
  });

  it.each([
    ['a would-be denied name', filePart('a', '../evil.txt', 'y'.repeat(100_000))],
    ['a field no gate declares', filePart('b', 'ok.txt', 'y'.repeat(100_000))],
  ])('%s: an onDeny that answers itself stops the upload there', async (_name, part) => {
    await onFilteredUploads(
      (_denial, _req, res) => void res.status(451).json({ mine: true }),
      async (port, root, filtered) => {
        const res = await upload(port, '/guarded', [part]);
        expect([res.status, res.json]).toEqual([451, { mine: true }]);
        expect([filtered, filesUnder(root)]).toEqual([[], []]);
      },
    );
  });

  it("a would-be denied part reported already still goes to the enforcing gate after it: each one stored at that gate's path", async () => {
    const seen: string[] = [];
    await onApp(
      (root, app) => {
        const watching = pathgate({
          root,
          fs: ['rw:uploads/*.png'],
          reportOnly: true,
          log: () => {},
          onDeny: (denial) => void seen.push(denial.label),
        });
        const enforcing = pathgate({ root, fs: ['rw:uploads/**'] });
        const a = { file: 'a', under: 'uploads' } as const;
        app.post(
          '/up',
          watching.write(a),
          enforcing.write(a),
          enforcing.multer().array('a'),
          answerFiles,
        );
      },
      async (port, root) => {
        const res = await upload(port, '/up', [filePart('a', 'one.exe'), filePart('a', 'two.exe')]);
        expect([res.status, res.json]).toEqual([
          200,
          [
            { file: 'one.exe', path: `${root}/uploads/one.exe` },
            { file: 'two.exe', path: `${root}/uploads/two.exe` },
          ],
        ]);
        expect([seen, filesUnder(root)]).toEqual([
          ['file a'],
          ['uploads/one.exe', 'uploads/two.exe'],
        ]);
      },
    );
  });

  it.each([
    ['before', 0],
    ['after', 1],
  ])(
    "a report-only gate's would-be deny %s another report-only gate's allow: the file goes on unchecked, not stored at the allowed path",
    async (_where, at) => {
      const seen: string[] = [];
      await onApp(
        (root, app) => {
          const rollout = (fs: string[]) =>
            pathgate({
              root,
              fs,
              reportOnly: true,
              log: () => {},
              onDeny: (d) => void seen.push(d.label),
            });
          const a = { file: 'a', under: 'uploads' } as const;
          const gates = [rollout(['rw:uploads/**']).write(a)];
          const narrow = rollout(['rw:uploads/*.png']);
          gates.splice(at, 0, narrow.write(a));
          app.post('/up', ...gates, narrow.multer().array('a'), answerFiles);
        },
        async (port, root) => {
          // The wide gate checked uploads/x.exe, a path the narrow one, enforcing, would refuse.
          const res = await upload(port, '/up', [filePart('a', 'x.exe')]);
          expect([res.status, res.json]).toEqual([200, [{ file: 'x.exe', path: null }]]);
          expect([seen, filesUnder(root)]).toEqual([['file a'], []]);
        },
      );
    },
  );

  it('the only file, would-be denied, is reported once, not as missing too', async () => {
    await onUploads(async (port, _root, { seen, logs }) => {
      const res = await upload(port, '/up', [filePart('a', '../../evil.js')]);
      expect(res.json).toEqual([{ file: '../../evil.js', path: null }]);
      expect(seen.map((d) => [d.label, d.reason])).toEqual([['file a', 'path-not-in-allowlist']]);
      expect(logs.map((l) => l.reason)).toEqual(['path-not-in-allowlist']);
    });
  });

  it('a file spec is reported once, by its first denied part, however many follow; each part still arrives', async () => {
    await onUploads(async (port, root, { seen, logs }) => {
      const names = Array.from({ length: 300 }, (_, i) => `virus-${i}.exe`);
      const parts = [...names, 'ok.png', 'x.gif'].map((name) => filePart('a', name));
      const res = await upload(port, '/up', parts);
      expect(res.status).toBe(200);
      expect(res.json).toEqual([
        ...names.map((file) => ({ file, path: null })),
        { file: 'ok.png', path: `${root}/uploads/ok.png` },
        { file: 'x.gif', path: null },
      ]);
      expect(seen.map((d) => [d.label, d.reason])).toEqual([['file a', 'path-not-in-allowlist']]);
      expect(logs.map((l) => l.label)).toEqual(['file a']);
    });
  });
});
