import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import express, { type Response } from 'express';
import supertest from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { pathgate } from '../src/index.js';
import { countingErrorHandler } from './helpers.js';

// An onDeny that answers with something that leaves after it returns (a
// view rendered by an async engine, a file sent, a stream piped in): at that
// point res.headersSent is still false. One that writes part of its body and
// ends it later has sent its headers but not ended the response. Had
// pathgate answered too, the late answer would throw ERR_HTTP_HEADERS_SENT
// from its callback, which crashes the process, or the handler would run
// (report-only).

const views = mkdtempSync(join(tmpdir(), 'pathgate-views-'));
writeFileSync(join(views, 'denied.txt'), 'denied page');
afterAll(() => rmSync(views, { recursive: true, force: true }));

const LATE: readonly (readonly [string, (res: Response) => void])[] = [
  ['a view rendered by an async engine', (res) => res.render('denied', { reason: 'x' })],
  ['a file sent', (res) => res.sendFile(join(views, 'denied.txt'))],
  ['a stream piped in', (res) => Readable.from(['denied page']).pipe(res)],
  [
    'a body written now and ended on a later turn (its headers sent, the response not ended)',
    (res) => {
      res.write('denied ');
      setTimeout(() => res.end('page'), 5);
    },
  ],
];

function build(reportOnly: boolean, answer: (res: Response) => void) {
  const app = express();
  // Reads the file on a later turn, as every real engine does.
  app.engine('txt', (_file, _options, done) => setTimeout(() => done(null, 'denied page'), 5));
  app.set('views', views);
  app.set('view engine', 'txt');
  const gate = pathgate({
    root: '/srv/root',
    fs: ['docs/**'],
    reportOnly,
    log: () => {},
    onDeny: (_denial, _req, res) => {
      res.status(451);
      answer(res);
    },
  });
  let calls = 0;
  app.get('/q', gate.read({ query: 'path' }), (_req, res) => {
    calls += 1;
    res.send('handler');
  });
  const errors = countingErrorHandler();
  app.use(errors.handler);
  return { app, calls: () => calls, errors };
}

describe.each([false, true])(
  'reportOnly: %s, an onDeny whose answer leaves later',
  (reportOnly) => {
    it.each(LATE)(
      '%s: its answer goes out alone, and the request ends there',
      async (_, answer) => {
        const { app, calls, errors } = build(reportOnly, answer);
        const res = await supertest(app).get('/q?path=../x');
        expect([res.status, res.text]).toEqual([451, 'denied page']);
        expect(calls()).toBe(0);
        expect(errors.calls).toEqual([]);
      },
    );
  },
);

// A late answer that throws before it begins (bad arguments) began nothing:
// with pathgate answering nothing either, the request would hang.
const REFUSED: readonly (readonly [string, (res: Response) => void])[] = [
  ['a file at a relative path', (res) => res.sendFile('denied.txt')],
  ['a view no engine renders', (res) => res.render('denied.nope')],
];

describe('an onDeny whose late answer throws before it begins', () => {
  it.each(REFUSED)('%s: the default 403 goes out', async (_, answer) => {
    const { app, calls, errors } = build(false, answer);
    const res = await supertest(app).get('/q?path=../x').timeout(2000);
    expect([res.status, res.body.reason, calls(), errors.calls]).toEqual([
      403,
      'path-not-in-allowlist',
      0,
      [],
    ]);
  });

  it.each(REFUSED)('%s: report-only, the handler runs', async (_, answer) => {
    const { app, calls } = build(true, answer);
    const res = await supertest(app).get('/q?path=../x').timeout(2000);
    expect([res.status, res.text, calls()]).toEqual([451, 'handler', 1]);
  });
});
