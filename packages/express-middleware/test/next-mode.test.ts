import { denyBody, type PathDenial } from '@pathgate/core';
import express from 'express';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { PathgateDeniedError, type PathgateRuleOptions, pathgate } from '../src/index.js';

// errors: 'next' hands the deny to the app's error handler as an
// http-errors-shaped error (status 403, expose: true, code, reason), once.

const ROOT = '/srv/root';

function buildApp(options: Partial<PathgateRuleOptions>, withHandler = true) {
  const gate = pathgate({ root: ROOT, fs: ['docs/**'], errors: 'next', ...options });
  const app = express();
  const seen: unknown[] = [];
  let calls = 0;
  app.get('/q', gate.read({ query: 'path' }), (_req, res) => {
    calls += 1;
    res.json({ ok: true });
  });
  if (withHandler) {
    app.use(((error, _req, res, _next) => {
      seen.push(error);
      res.status(error.status).json({ rendered: true, code: error.code, reason: error.reason });
    }) as express.ErrorRequestHandler);
  }
  return { app, seen, calls: () => calls };
}

describe("errors: 'next'", () => {
  it('calls the error handler once with a PathgateDeniedError', async () => {
    const { app, seen, calls } = buildApp({});
    const res = await supertest(app).get('/q?path=../../etc/passwd').expect(403);
    expect(res.body).toEqual({
      rendered: true,
      code: 'PATHGATE_DENIED',
      reason: 'path-not-in-allowlist',
    });
    expect(calls()).toBe(0);
    expect(seen).toHaveLength(1);
    const error = seen[0] as PathgateDeniedError;
    expect(error).toBeInstanceOf(PathgateDeniedError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: 'PathgateDeniedError',
      status: 403,
      statusCode: 403,
      expose: true,
      code: 'PATHGATE_DENIED',
      reason: 'path-not-in-allowlist',
      label: 'query.path',
      message: 'query.path: path denied (path-not-in-allowlist)',
    });
    expect(error.message).toBe(denyBody(error.denial).message);
  });

  it('keeps the canonical path off its enumerable fields (safe to serialize), on .denial for logs', async () => {
    const { app, seen } = buildApp({});
    await supertest(app).get('/q?path=../../etc/passwd').expect(403);
    const error = seen[0] as PathgateDeniedError;
    expect(Object.keys(error).sort()).toEqual([
      'code',
      'expose',
      'label',
      'name',
      'reason',
      'status',
      'statusCode',
    ]);
    expect(JSON.stringify(error)).not.toContain('/etc');
    expect(error.denial.result).toMatchObject({ outcome: 'deny', path: '/etc/passwd' });
  });

  it('missing values go the same way', async () => {
    const { app, seen } = buildApp({});
    await supertest(app).get('/q').expect(403);
    expect(seen[0]).toMatchObject({ reason: 'missing-path', label: 'query.path' });
  });

  it("Express's default handler renders it as a 403 (expose: true)", async () => {
    const { app, calls } = buildApp({}, false);
    const res = await supertest(app).get('/q?path=../x').expect(403);
    expect(res.text).toContain('query.path: path denied (path-not-in-allowlist)');
    expect(res.text).not.toContain(ROOT);
    expect(calls()).toBe(0);
  });

  it('onDeny runs first; when it answers, next(err) is not called', async () => {
    const denials: PathDenial[] = [];
    const answering = buildApp({
      onDeny: (denial, _req, res) => {
        denials.push(denial);
        if (denial.reason === 'missing-path') res.status(418).json({ teapot: true });
      },
    });
    await supertest(answering.app).get('/q').expect(418, { teapot: true });
    expect(answering.seen).toHaveLength(0);
    await supertest(answering.app).get('/q?path=../x').expect(403);
    expect(answering.seen).toHaveLength(1);
    expect(denials.map((d) => d.reason)).toEqual(['missing-path', 'path-not-in-allowlist']);
  });
});
