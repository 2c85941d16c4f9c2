import { denyBody, type GuardDenyReason } from '@pathgate/core';
import express, { type Express, type RequestHandler } from 'express';
import { describe, expect, it } from 'vitest';
import { lazyValues } from '../../../test/lazy-values.js';
import { pathgate } from '../src/index.js';
import { countingErrorHandler, request, withServed } from './helpers.js';

// The shapes Express's parsers give a value (query parser settings, a
// custom parser), over real HTTP. On an allow, the handler's own read of
// the value (`req.query.p`) is what pathgate checked; an unreadable shape
// is a 403, never an error for the error handler (a 500).

const ROOT = '/srv/root';

/** What a request must get: the raw value the handler reads and the checked path(s), or a deny. */
type Want =
  | { raw: unknown; checked: string | string[] }
  | { reason: GuardDenyReason; label: string };

/** One app per query parser setting; its handler answers `req.query.p` and `req.pathgate.query`. */
async function expectQuery(parser: unknown, path: string, want: Want): Promise<void> {
  const gate = pathgate({ root: ROOT, fs: ['docs/**'] });
  const app: Express = express();
  app.set('query parser', parser);
  let calls = 0;
  const handler: RequestHandler = (req, res) => {
    calls += 1;
    res.json({ raw: req.query.p, checked: req.pathgate?.query.p });
  };
  app.get('/q', gate.read({ query: 'p' }), handler);
  const errors = countingErrorHandler();
  app.use(errors.handler);
  const res = await withServed(app, (s) => request(s.port, 'GET', path));
  expect(errors.calls).toEqual([]);
  if ('reason' in want) {
    expect(res.status).toBe(403);
    expect(res.json).toEqual(denyBody({ reason: want.reason, label: want.label }));
    expect(calls).toBe(0);
  } else {
    expect(res.status).toBe(200);
    expect(res.json).toEqual(want);
  }
}

describe('a custom query parser whose value read throws', () => {
  it.each([
    ['a bad escape', '/q?p=docs%2Fa%ZZ'],
    ['a bad escape beside a good value', '/q?x=1&p=%E0%A4%A'],
    ['a list with a bad escape', '/q?p=docs%2Fa&p=%ZZ'],
  ])('%s: 403 not-a-string, not an error', (_name, path) =>
    expectQuery(lazyValues, path, { reason: 'not-a-string', label: 'query.p' }),
  );

  it('good values are read once more by the handler, as checked', async () => {
    await expectQuery(lazyValues, '/q?p=docs%2Fa', { raw: 'docs/a', checked: `${ROOT}/docs/a` });
    await expectQuery(lazyValues, '/q?p=docs%2Fa&p=docs/b', {
      raw: ['docs/a', 'docs/b'],
      checked: [`${ROOT}/docs/a`, `${ROOT}/docs/b`],
    });
  });
});
