import { denyBody } from '@pathgate/core';
import express from 'express';
import supertest from 'supertest';
import { beforeEach, describe, expect, it } from 'vitest';
import { type PathgateLogEntry, type PathgateOptions, pathgate } from '../src/index.js';
import { request, withServed } from './helpers.js';

// A body no parser has read when the gate runs, on a route whose specs read
// the body. Optional specs cannot skip it: a parser after the gate (or the
// handler) would hand over values no one checked.

const ROOT = '/srv/root';
const logs: PathgateLogEntry[] = [];
let calls = 0;

function buildApp(options: Partial<PathgateOptions> = {}): express.Express {
  const gate = pathgate({
    root: ROOT,
    fs: ['rw:uploads/**'],
    log: (entry) => logs.push(entry),
    ...options,
  } as PathgateOptions);
  const app = express();
  const handler: express.RequestHandler = (req, res) => {
    calls += 1;
    res.json({ body: req.body ?? null, pathgate: req.pathgate ?? null });
  };
  const optional = gate.write({ body: 'to', under: 'uploads', optional: true });
  // The mistake: the parser comes after the gate.
  app.post('/late', optional, express.json(), handler);
  app.post('/late-urlencoded', optional, express.urlencoded(), handler);
  // body-parser 1.x (and Express 4-era middleware) sets `req.body = {}` on a body it skips.
  const presetBody: express.RequestHandler = (req, _res, next) => {
    req.body ??= {};
    next();
  };
  app.post('/preset-late', presetBody, optional, express.urlencoded(), handler);
  // Reads the body to its end and keeps it elsewhere (`req.body` stays unset).
  const drain: express.RequestHandler = (req, _res, next) => {
    req.resume();
    req.once('end', () => next());
  };
  app.post('/drained', drain, optional, handler);
  // The right order: a body of a type the parser skips is still unread.
  app.post('/parsed', express.json(), optional, handler);
  // Only an optional file spec: a body of another type can hold no file.
  // Any method: a GET is a request without a body (no length, no transfer encoding).
  app.all('/file-optional', gate.write({ file: 'f', under: 'uploads', optional: true }), handler);
  // A multipart parser of the app's own before the gate, keeping the files
  // where no gate looks (here the raw body itself).
  app.post(
    '/own-multipart',
    express.raw({ type: 'multipart/form-data' }),
    gate.write({ file: 'f', under: 'uploads', optional: true }),
    handler,
  );
  // No body spec: the gate has no reason to look at the body.
  app.post('/query', gate.write({ query: 'to', under: 'uploads' }), express.json(), handler);
  return app;
}

const missing = denyBody({ reason: 'missing-path', label: 'body.to' });

beforeEach(() => {
  calls = 0;
  logs.length = 0;
});

describe('an unparsed body on a route with optional body specs', () => {
  const app = buildApp();
  /** A form whose `to` climbs out: refused as an unread body, never read as empty. */
  const expectFormDenied = async (path: string) => {
    const form = await supertest(app).post(path).type('form').send('to=../../../etc/cron.d/x');
    expect(form.status).toBe(403);
    expect(form.body).toEqual(missing);
  };

  it('a parser after the gate: the traversal it would hand over is denied, not skipped', async () => {
    const json = await supertest(app).post('/late').send({ to: '../../../etc/cron.d/x' });
    expect(json.status).toBe(403);
    expect(json.body).toEqual(missing);
    await expectFormDenied('/late-urlencoded');
    expect(calls).toBe(0);
  });

  it('a req.body set before the gate with the body still unread is no parsed body', async () => {
    await expectFormDenied('/preset-late');
    expect(calls).toBe(0);
  });

  it('a body read to its end with no req.body is unchecked, not parsed: denied', async () => {
    const res = await supertest(app).post('/drained').send({ to: '../../x' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual(missing);
    expect(calls).toBe(0);
  });

  it('even a harmless body is denied there, and the mistake is logged once', async () => {
    const fresh = buildApp();
    for (let i = 0; i < 2; i += 1) {
      const res = await supertest(fresh).post('/late').send({ to: 'a.txt' });
      expect(res.status).toBe(403);
    }
    // No label, reason, path or error: what PathgateLogEntry says of this kind.
    expect(logs).toEqual([
      {
        event: 'misconfigured',
        message: expect.stringContaining('put the body parser before the gate'),
        method: 'POST',
        url: '/late',
      },
    ]);
  });

  it('no body, or an empty one, hides nothing: the optional value is absent', async () => {
    const none = await supertest(app).post('/late');
    expect(none.status).toBe(200);
    expect(none.body.pathgate.body).toEqual({});
    const empty = await supertest(app).post('/late').set('content-type', 'application/json');
    expect(empty.status).toBe(200);
    expect(calls).toBe(2);
  });

  it('a parser before the gate: a parsed body passes, one of a type it skips is denied', async () => {
    const parsed = await supertest(app).post('/parsed').send({ to: 'a.txt' });
    expect(parsed.status).toBe(200);
    expect(parsed.body.pathgate.body).toEqual({ to: `${ROOT}/uploads/a.txt` });
    const absent = await supertest(app).post('/parsed').send({});
    expect(absent.status).toBe(200);
    const text = await supertest(app)
      .post('/parsed')
      .set('content-type', 'text/plain')
      .send('{"to":"../../x"}');
    expect(text.status).toBe(403);
    expect(text.body).toEqual(missing);
    expect(calls).toBe(2);
  });

  it('a chunked body (no content-length) is unread too', async () => {
    const res = await withServed(app, (served) =>
      request(served.port, 'POST', '/late', {
        headers: { 'content-type': 'application/json' },
        body: '{"to":"../../x"}',
        chunked: true,
      }),
    );
    expect(res.status).toBe(403);
    expect(calls).toBe(0);
  });

  it('a route without body specs lets an unread body through to its parser', async () => {
    const res = await supertest(app).post('/query?to=a.txt').send({ to: '../../x' });
    expect(res.status).toBe(200);
    expect(res.body.body).toEqual({ to: '../../x' });
  });

  it('a route with only an optional file spec lets a non-multipart body through', async () => {
    const res = await supertest(app).post('/file-optional').send({ to: '../../x' });
    expect(res.status).toBe(200);
    expect(res.body.pathgate.files).toEqual([]);
    expect(calls).toBe(1);
  });

  it('a route with only an optional file spec lets a request without a body (a GET) through', async () => {
    // req.is() is null there: no body, so no multipart one another parser read.
    const res = await supertest(app).get('/file-optional');
    expect(res.status).toBe(200);
    expect(res.body.pathgate.files).toEqual([]);
    expect([calls, logs]).toEqual([1, []]);
  });

  it('a multipart body another parser read: its files are out of sight, an optional file spec denies', async () => {
    const fresh = buildApp();
    for (const name of ['../../etc/x', 'a.txt']) {
      const res = await supertest(fresh)
        .post('/own-multipart')
        .attach('f', Buffer.from('x'), { filename: name, contentType: 'text/plain' });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(denyBody({ reason: 'missing-path', label: 'file f' }));
    }
    expect(calls).toBe(0);
    expect(logs).toEqual([
      expect.objectContaining({
        event: 'misconfigured',
        message: expect.stringContaining('gate.multer()'),
        url: '/own-multipart',
      }),
    ]);
  });

  it('report-only: the deny is reported and the request goes on', async () => {
    const reports: unknown[] = [];
    const reporting = buildApp({ reportOnly: true, onDeny: (denial) => reports.push(denial) });
    const res = await supertest(reporting).post('/late').send({ to: '../../x' });
    expect(res.status).toBe(200);
    expect(reports).toEqual([{ reason: 'missing-path', label: 'body.to' }]);
  });
});
