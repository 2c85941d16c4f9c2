import http from 'node:http';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { denyBody, UNEXPECTED_FILE } from '@pathgate/core';
import express from 'express';
import multer from 'multer';
import { describe, expect, it, vi } from 'vitest';
import { type Pathgate, type PathgateLogEntry, pathgate } from '../src/index.js';
import {
  entriesUnder,
  fieldPart,
  filePart,
  filesUnder,
  MULTIPART,
  multipart,
  multipartPost,
  onApp,
  request,
  tempRoot,
  upload,
  withServed,
} from './helpers.js';

// Where a gate and a gate.multer() middleware may sit: only a gate.multer()
// that comes after the gate on the request's own route, for its method,
// reads the body the gate defers to it. Anything else fails closed.

const FILE = { file: 'f', under: 'uploads' } as const;

/** A gate on a fresh root, an app wired by `wire`, served for `run`; the handler counts. */
async function wired(
  wire: (app: express.Express, gate: Pathgate, answer: express.RequestHandler) => void,
  run: (port: number, root: string, reached: () => number) => Promise<void>,
): Promise<void> {
  let reached = 0;
  const answer: express.RequestHandler = (req, res) => {
    reached += 1;
    res.json({ file: req.file?.path ?? null, pathgate: req.pathgate ?? null });
  };
  await onApp(
    (root, app) => wire(app, pathgate({ root, fs: ['rw:uploads/**'], log: () => {} }), answer),
    (port, root) => run(port, root, () => reached),
  );
}

const plain = () => multer({ storage: multer.memoryStorage() }).any();
const missingFile = denyBody({ reason: 'missing-path', label: 'file f' });

describe('a gate that no gate.multer() follows denies a multipart body', () => {
  it('used with app.use before any route (no req.route): 403, not a 500', async () => {
    await wired(
      (app, gate, answer) => {
        app.use('/early', gate.write(FILE));
        app.post('/early', plain(), answer);
      },
      async (port, _root, reached) => {
        const res = await upload(port, '/early', [filePart('f', 'a.txt')]);
        expect(res.json).toEqual(missingFile);
        expect(reached()).toBe(0);
      },
    );
  });

  it("used with app.use after a route that next('route') left: that route's gate.multer() never runs", async () => {
    await wired(
      (app, gate, answer) => {
        app
          .route('/v')
          .all((_req, _res, next) => next('route'))
          .post(gate.multer().any(), answer);
        // req.route is still the /v route above, whose POST gate.multer() was skipped.
        app.use('/v', gate.write(FILE));
        app.post('/v', plain(), answer);
      },
      async (port, _root, reached) => {
        const res = await upload(port, '/v', [filePart('f', '../../evil')]);
        expect(res.json).toEqual(missingFile);
        expect(reached()).toBe(0);
      },
    );
  });

  it('a gate.multer() before the gate on its route does not count', async () => {
    await wired(
      (app, gate, answer) => {
        const fail: express.RequestHandler = (_req, _res, next) => next(new Error('skip'));
        const recover: express.ErrorRequestHandler = (_err, _req, _res, next) => next();
        // The error skips gate.multer(); the route's error handler recovers before the gate.
        app.post('/late', fail, gate.multer().any(), recover, gate.write(FILE), answer);
      },
      async (port, _root, reached) => {
        const res = await upload(port, '/late', [filePart('f', '../../evil')]);
        expect(res.json).toEqual(missingFile);
        expect(reached()).toBe(0);
      },
    );
  });
});

describe('a gate.multer() middleware called from a function of the app', () => {
  it("multer's own error-handling pattern: not seen on the route, so 403, and the log says where it goes", async () => {
    const logs: PathgateLogEntry[] = [];
    let reached = 0;
    await onApp(
      (root, app) => {
        const gate = pathgate({ root, fs: ['rw:uploads/**'], log: (entry) => logs.push(entry) });
        const single = gate.multer().single('f');
        const wrapped: express.RequestHandler = (req, res, next) =>
          single(req, res, (error?: unknown) => (error ? res.status(400).end() : next()));
        app.post('/wrapped', gate.write(FILE), wrapped, (_req, res) => {
          reached += 1;
          res.end();
        });
      },
      async (port, root) => {
        const res = await upload(port, '/wrapped', [filePart('f', 'a.txt')]);
        expect([res.json, reached, filesUnder(root)]).toEqual([missingFile, 0, []]);
        expect(logs).toEqual([
          expect.objectContaining({
            event: 'misconfigured',
            message: expect.stringContaining('a middleware of the route itself'),
          }),
        ]);
      },
    );
  });
});

/** Posts `body` through `agent`; resolves with the status once the answer is read. */
function postThrough(agent: http.Agent, port: number, body: Buffer): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = multipartPost(port, '/up', body.length, agent);
    req.on('response', (res) => res.resume().on('end', () => resolve(res.statusCode)));
    req.on('error', reject);
    req.end(body);
  });
}

describe('uploads one after another on a kept-alive connection', () => {
  // The gate watches the connection while multer reads each body: a watch
  // left behind per upload would pile up on a connection that carries many.
  it('leave no listener of theirs on its socket', async () => {
    const sockets = new Set<Socket>();
    await wired(
      (app, gate, answer) => {
        app.use((req, _res, next) => {
          sockets.add(req.socket);
          next();
        });
        app.post('/up', gate.write(FILE), gate.multer().single('f'), answer);
      },
      async (port) => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const listening = () => [...sockets].map((socket) => socket.listenerCount('close'));
        const send = (i: number) =>
          postThrough(agent, port, multipart([filePart('f', `${i}.txt`)]));
        try {
          const statuses = [await send(0)];
          const after = listening();
          for (let i = 1; i <= 12; i++) statuses.push(await send(i));
          expect(new Set(statuses)).toEqual(new Set([200]));
          expect(after).toHaveLength(1); // one connection carried them all
          expect(listening()).toEqual(after);
        } finally {
          agent.destroy();
        }
      },
    );
  });
});

describe('a gate.multer() that follows the gate', () => {
  it('in .all() (no method): reads and checks the upload', async () => {
    await wired(
      (app, gate, answer) => {
        app.all('/all', gate.write(FILE), gate.multer().single('f'), answer);
        app.route('/route-all').all(gate.write(FILE), gate.multer().single('f')).put(answer);
      },
      async (port, root) => {
        const all = await upload(port, '/all', [filePart('f', 'a.txt')]);
        expect(all.json).toMatchObject({ file: join(root, 'uploads', 'a.txt') });
        const put = await request(port, 'PUT', '/route-all', {
          headers: { 'content-type': MULTIPART },
          body: multipart([filePart('f', 'b.txt')]),
        });
        expect(put.json).toMatchObject({ file: join(root, 'uploads', 'b.txt') });
        const bad = await upload(port, '/all', [filePart('f', '../../evil')]);
        expect(bad.json).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'file f' }));
        expect(filesUnder(root)).toEqual(['uploads/a.txt', 'uploads/b.txt']);
      },
    );
  });
});

// Express (type-is 2) reads these as multipart, so the gate leaves the body
// to gate.multer(); multer (type-is 1) does not, and calls back without
// reading it. The body specs were then never checked: denied, optional too.
const MULTER_SKIPS = [`${MULTIPART};`, `${MULTIPART}; x`, MULTIPART.replace(';', '\t;')];

describe('a multipart body gate.multer() skips without reading it', () => {
  it('is denied like one no parser read (missing-path), optional specs too', async () => {
    await wired(
      (app, gate, answer) => {
        const optional = { optional: true, under: 'uploads' } as const;
        app.post('/body', gate.write({ body: 'to', ...optional }), gate.multer().none(), answer);
        app.post('/file', gate.write({ file: 'f', ...optional }), gate.multer().any(), answer);
        app.post(
          '/d/:dir',
          gate.write({ params: 'dir', under: 'uploads' }),
          gate.multer().any(),
          answer,
        );
      },
      async (port, _root, reached) => {
        const body = multipart([fieldPart('to', '../../evil')]);
        for (const type of MULTER_SKIPS) {
          const sent = { headers: { 'content-type': type }, body };
          const refused = [
            (await request(port, 'POST', '/body', sent)).json,
            (await request(port, 'POST', '/file', sent)).json,
          ];
          expect(refused).toEqual([
            denyBody({ reason: 'missing-path', label: 'body.to' }),
            denyBody({ reason: 'missing-path', label: 'file f' }),
          ]);
          // A route that declares nothing from the body goes on.
          expect((await request(port, 'POST', '/d/a', sent)).status).toBe(200);
        }
        expect(reached()).toBe(MULTER_SKIPS.length);
      },
    );
  });
});

describe('gate.multer().none() with app.use, before every route', () => {
  it('parses the fields first; the gates then check them like a JSON body', async () => {
    await wired(
      (app, gate, answer) => {
        app.use(gate.multer().none());
        app.post('/fields', gate.write({ body: 'target', under: 'uploads' }), answer);
      },
      async (port, root, reached) => {
        const ok = await upload(port, '/fields', [fieldPart('target', 'a.txt')]);
        expect(ok.json).toMatchObject({
          pathgate: { body: { target: join(root, 'uploads/a.txt') } },
        });
        const bad = await upload(port, '/fields', [fieldPart('target', '../../x')]);
        expect(bad.json).toEqual(
          denyBody({ reason: 'path-not-in-allowlist', label: 'body.target' }),
        );
        expect(reached()).toBe(1);
      },
    );
  });
});

describe('a gate after the gate.multer() that stored the files', () => {
  it('denies a body value: the files multer stored are removed before the 403, as its own denies do', async () => {
    await wired(
      (app, gate, answer) => {
        const after = gate.read({ body: 't', under: 'uploads' });
        app.post('/late', gate.write(FILE), gate.multer().single('f'), after, answer);
      },
      async (port, root, reached) => {
        const bad = await upload(port, '/late', [filePart('f', 'a.txt'), fieldPart('t', '../x')]);
        expect(bad.json).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'body.t' }));
        expect(filesUnder(root)).toEqual([]);
        const ok = await upload(port, '/late', [filePart('f', 'b.txt'), fieldPart('t', 'x')]);
        expect(ok.json).toMatchObject({ file: join(root, 'uploads', 'b.txt') });
        expect(filesUnder(root)).toEqual(['uploads/b.txt']);
        expect(reached()).toBe(1);
      },
    );
  });

  it('sees no files: its required file spec is missing, and the stored file is removed', async () => {
    await wired(
      (app, gate, answer) => {
        app.post('/twice', gate.write(FILE), gate.multer().single('f'), gate.write(FILE), answer);
      },
      async (port, root, reached) => {
        const res = await upload(port, '/twice', [filePart('f', 'a.txt')]);
        expect(res.json).toEqual(denyBody({ reason: 'missing-path', label: 'file f' }));
        expect(filesUnder(root)).toEqual([]);
        expect(reached()).toBe(0);
      },
    );
  });

  it('an optional file spec cannot check the stored files either: denied, never passed unchecked', async () => {
    await wired(
      (app, gate, answer) => {
        const narrow = pathgate({ root: gate.policy.root, fs: ['rw:uploads/public/**'] });
        const late = narrow.write({ ...FILE, optional: true });
        app.post('/narrow', gate.write(FILE), gate.multer().single('f'), late, answer);
        // Another parser's files (here plain multer's) are as unchecked.
        app.post('/plain', plain(), gate.write({ ...FILE, optional: true }), answer);
      },
      async (port, root, reached) => {
        const narrow = await upload(port, '/narrow', [filePart('f', 'secret.txt')]);
        expect(narrow.json).toEqual(missingFile);
        expect(filesUnder(root)).toEqual([]);
        const plainFile = await upload(port, '/plain', [filePart('f', '../../../evil')]);
        expect(plainFile.json).toEqual(missingFile);
        // Without a file too: the gate cannot tell a parser that lists no
        // file from one that keeps its files elsewhere (as Fastify's plugin
        // denies a body its multipart did not parse).
        const none = await upload(port, '/plain', [fieldPart('t', 'x')]);
        expect(none.json).toEqual(missingFile);
        expect(reached()).toBe(0);
      },
    );
  });
});

describe('a gate after the gate.multer() that read a body without files', () => {
  // gate.multer() read it, so no file sits out of sight: nothing to deny.
  it('passes its optional file spec', async () => {
    await wired(
      (app, gate, answer) => {
        const optional = gate.write({ ...FILE, optional: true });
        app.post('/fields', optional, gate.multer().single('f'), optional, answer);
      },
      async (port, _root, reached) => {
        const res = await upload(port, '/fields', [fieldPart('t', 'x')]);
        expect(res.status).toBe(200);
        expect(reached()).toBe(1);
      },
    );
  });
});

describe('a second gate.multer() on a request whose body one already read', () => {
  it('is skipped: no second parse of the spent body (a 400 that left the files stored)', async () => {
    await wired(
      (app, gate, answer) => {
        const upload = gate.multer();
        app.post('/two', gate.write(FILE), upload.single('f'), upload.single('f'), answer);
        const field = gate.write({ body: 't', under: 'uploads' });
        app.post('/fields', gate.write(FILE), upload.single('f'), field, upload.none(), answer);
      },
      async (port, root, reached) => {
        const two = await upload(port, '/two', [filePart('f', 'a.txt')]);
        expect(two.json).toMatchObject({ file: join(root, 'uploads', 'a.txt') });
        const bad = await upload(port, '/fields', [filePart('f', 'b.txt'), fieldPart('t', '../x')]);
        expect(bad.json).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'body.t' }));
        const ok = await upload(port, '/fields', [filePart('f', 'c.txt'), fieldPart('t', 'x')]);
        expect(ok.json).toMatchObject({ file: join(root, 'uploads', 'c.txt') });
        expect(filesUnder(root)).toEqual(['uploads/a.txt', 'uploads/c.txt']);
        expect(reached()).toBe(2);
      },
    );
  });

  it("not after next('route'): the next route never gets files its own gates did not decide", async () => {
    await wired(
      (app, gate, answer) => {
        const upload = gate.multer();
        app.post('/r', gate.write(FILE), upload.single('f'), (_req, _res, next) => next('route'));
        app.post('/r', gate.write({ body: 't', optional: true }), upload.none(), answer);
      },
      async (port, _root, reached) => {
        // Parsed again, the spent body ends too soon: multer's 400.
        const res = await upload(port, '/r', [filePart('f', 'a.txt')]);
        expect(res.status).toBe(400);
        expect(reached()).toBe(0);
      },
    );
  });
});

describe('a report-only gate after gate.multer() whose onDeny answers itself', () => {
  it('no handler runs, so the files multer stored are removed', async () => {
    await onApp(
      (root, app) => {
        const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
        const watching = pathgate({
          root,
          fs: ['rw:uploads/**'],
          reportOnly: true,
          log: () => {},
          onDeny: (_denial, _req, res) => {
            res.status(451).json({ error: 'unavailable' });
          },
        });
        const after = watching.read({ body: 't', under: 'uploads' });
        app.post('/late', gate.write(FILE), gate.multer().single('f'), after, (_req, res) => {
          res.json({ reached: true });
        });
      },
      async (port, root) => {
        const res = await upload(port, '/late', [filePart('f', 'a.txt'), fieldPart('t', '../x')]);
        expect(res.status).toBe(451);
        // onDeny answered before the removal could finish: it follows the answer.
        await vi.waitFor(() => expect(filesUnder(root)).toEqual([]), { timeout: 2000 });
      },
    );
  });
});

describe('the checked path on the file object (file.pathgatePath)', () => {
  it('a user fileFilter cannot move it: the safe storage writes only where the check looked', async () => {
    await wired(
      (app, gate, answer) => {
        const redirect = gate.multer({
          fileFilter: (_req, file, cb) => {
            // App code, but a mistake here must not write outside the checked path.
            Object.assign(file, { pathgatePath: join(gate.policy.root, 'docs', 'planted') });
            cb(null, true);
          },
        });
        app.post('/moved', gate.write(FILE), redirect.single('f'), answer);
      },
      async (port, root) => {
        const res = await upload(port, '/moved', [filePart('f', 'a.txt')]);
        // The assignment throws: the filter's error reaches the app's error handler.
        expect(res.status).toBe(500);
        expect(filesUnder(root)).toEqual([]);
      },
    );
  });
});

describe("multer's own middleware on a gate.multer() instance, without the gate's wrapper", () => {
  it('its fileFilter cannot answer early, so it refuses every file: a 403, nothing stored', async () => {
    type Raw = { _makeMiddleware(fields: object[], strategy: string): express.RequestHandler };
    await wired(
      (app, gate, answer) => {
        // multer's private maker, which single() calls: reachable from app code all the same.
        const raw = (gate.multer() as unknown as Raw)._makeMiddleware([{ name: 'f' }], 'VALUE');
        app.post('/raw', raw, answer);
      },
      async (port, root, reached) => {
        const res = await upload(port, '/raw', [filePart('f', 'a.txt')]);
        expect(res.json).toMatchObject({ status: 403, message: denyBody(UNEXPECTED_FILE).message });
        expect(reached()).toBe(0);
        expect(filesUnder(root)).toEqual([]);
      },
    );
  });
});

describe('gate.diskStorage() given to a plain multer(), no gate.multer()', () => {
  // Its files have no checked path: dropped as report-only's are, every
  // upload would be a 200 with nothing stored.
  it("fails each file (a 500 from Express's own error handler), stores nothing, and warns once", async () => {
    const dir = tempRoot();
    const logs: PathgateLogEntry[] = [];
    let reached = 0;
    try {
      const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: (e) => logs.push(e) });
      const storing = multer({ storage: gate.diskStorage() });
      const app = express();
      const answer: express.RequestHandler = (_req, res) => {
        reached += 1;
        res.json({});
      };
      app.post('/alone', storing.single('f'), answer);
      // A gate after it checks the fields, never the files (see above).
      app.post('/before', storing.any(), gate.write({ body: 't', under: 'uploads' }), answer);
      await withServed(app, async ({ port }) => {
        const alone = await upload(port, '/alone', [filePart('f', 'a.txt', 'lost?')]);
        expect(alone.status).toBe(500);
        expect(alone.text).toContain('gate.multer({ storage })');
        const parts = [fieldPart('t', 'x'), filePart('f', 'b.txt')];
        expect((await upload(port, '/before', parts)).status).toBe(500);
        expect(alone.text).not.toContain(dir.root);
      });
      // No file, no temporary one, no folder made for them.
      expect(entriesUnder(dir.root)).toEqual([]);
      expect(reached).toBe(0);
      expect(logs).toEqual([
        expect.objectContaining({
          event: 'misconfigured',
          message: expect.stringContaining('not to multer()'),
          url: '/alone',
        }),
      ]);
    } finally {
      dir.remove();
    }
  });
});
