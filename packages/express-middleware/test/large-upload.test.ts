import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { denyBody } from '@pathgate/core';
import express from 'express';
import type multer from 'multer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HeldUpload, heldUpload, STREAMED_AT_MOST } from '../../../test/held-upload.js';
import { type PathgateOptions, pathgate } from '../src/index.js';
import {
  countingErrorHandler,
  filesUnder,
  type Served,
  serve,
  sleep,
  tempRoot,
} from './helpers.js';
import { fetchUpload, httpUpload, type UploadOutcome } from './upload-clients.js';

// A denied 50 MB upload is answered at once: a 403 within a bound, with
// Connection: close, nothing written, bounded memory, no hang (the server's
// connections drop back to 0), and the app's error handler not asked twice.
// Set PATHGATE_REPORT=1 to print the figures.

const SIZE_MB = 50;
const MB = 1024 * 1024;
const BOUND_MS = 5000;
const DENIED = JSON.stringify(denyBody({ reason: 'path-not-in-allowlist', label: 'file avatar' }));
const report = (label: string, outcome: UploadOutcome) => {
  if (!process.env.PATHGATE_REPORT) return;
  const { status, msToResponse, sentAtResponse, error } = outcome;
  console.info(label, {
    status,
    ms: msToResponse?.toFixed(1),
    sentMB: sentAtResponse?.toFixed(1),
    error,
  });
};

interface Setup {
  served: Served;
  root: string;
  errors: ReturnType<typeof countingErrorHandler>;
  calls: () => number;
  remove: () => void;
}

async function setup(options: Partial<PathgateOptions> = {}): Promise<Setup> {
  const { root, remove } = tempRoot();
  const gate = pathgate({ root, fs: ['rw:uploads/**'], ...options } as PathgateOptions);
  const upload = gate.multer({ limits: { fileSize: 100 * 1024 * 1024 } });
  const errors = countingErrorHandler();
  const app = express();
  let calls = 0;
  const handler: express.RequestHandler = (req, res) => {
    calls += 1;
    res.json({ path: req.file?.path, size: req.file?.size });
  };
  app.post(
    '/avatar',
    gate.write({ file: 'avatar', under: 'uploads' }),
    upload.single('avatar'),
    handler,
  );
  app.post(
    '/q',
    gate.write({ query: 'to', under: 'uploads' }, { file: 'avatar', under: 'uploads' }),
    upload.single('avatar'),
    handler,
  );
  app.use(errors.handler);
  return { served: await serve(app), root, errors, calls: () => calls, remove };
}

async function teardown(s: Setup) {
  await s.served.close();
  s.remove();
}

/** No hang: the server's connections drop back to 0 (the linger ends on the client's FIN). */
async function connectionsDrain(s: Setup, within = 3000) {
  const start = Date.now();
  while ((await s.served.connections()) > 0) {
    if (Date.now() - start > within) break;
    await sleep(25);
  }
  return s.served.connections();
}

function expectPrompt403(outcome: UploadOutcome, body = DENIED) {
  expect(outcome.error, 'client error before the response').toBeUndefined();
  expect(outcome.status).toBe(403);
  expect(outcome.connection).toBe('close');
  expect(outcome.body).toBe(body);
  expect(outcome.msToResponse).toBeLessThan(BOUND_MS);
}

describe(`a denied ${SIZE_MB} MB upload`, () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setup();
  });
  afterAll(() => teardown(s));

  it('node:http, full speed: prompt 403, nothing written, no hang, no error-handler call', async () => {
    const outcome = await httpUpload({
      port: s.served.port,
      path: '/avatar',
      filename: '../../etc/passwd',
      sizeMB: SIZE_MB,
    });
    report('http ∞', outcome);
    expectPrompt403(outcome);
    expect(await connectionsDrain(s)).toBe(0);
    expect(filesUnder(s.root)).toEqual([]);
    expect(s.errors.calls).toEqual([]);
    expect(s.calls()).toBe(0);
  });

  it('fetch, full speed, 5 times: every client sees its 403 (lingering close, no EPIPE)', async () => {
    for (let i = 0; i < 5; i += 1) {
      const outcome = await fetchUpload({
        port: s.served.port,
        path: '/avatar',
        filename: '../x',
        sizeMB: SIZE_MB,
      });
      report(`fetch ∞ #${i}`, outcome);
      expectPrompt403(outcome);
    }
    expect(await connectionsDrain(s)).toBe(0);
    expect(filesUnder(s.root)).toEqual([]);
    expect(s.errors.calls).toEqual([]);
  });

  it('node:http at 25 MB/s: answered after the first part header, long before the body ends', async () => {
    const outcome = await httpUpload({
      port: s.served.port,
      path: '/avatar',
      filename: '../x',
      sizeMB: SIZE_MB,
      rate: 25,
    });
    report('http 25 MB/s', outcome);
    expectPrompt403(outcome);
    expect(outcome.msToResponse).toBeLessThan(500);
    expect(outcome.sentAtResponse).toBeLessThan(10);
    expect(await connectionsDrain(s)).toBe(0);
  });

  it('a query deny before multer runs (body unread): the same prompt close', async () => {
    const outcome = await httpUpload({
      port: s.served.port,
      path: '/q?to=../../x',
      filename: 'ok.bin',
      sizeMB: SIZE_MB,
    });
    report('http query deny', outcome);
    expectPrompt403(
      outcome,
      JSON.stringify(denyBody({ reason: 'path-not-in-allowlist', label: 'query.to' })),
    );
    expect(await connectionsDrain(s)).toBe(0);
    expect(filesUnder(s.root)).toEqual([]);
  });

  it('memory stays bounded over repeated denied uploads', async () => {
    global.gc?.();
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 4; i += 1) {
      expectPrompt403(
        await httpUpload({
          port: s.served.port,
          path: '/avatar',
          filename: '../m',
          sizeMB: SIZE_MB,
        }),
      );
    }
    const grown = (process.memoryUsage().rss - before) / 1024 / 1024;
    if (process.env.PATHGATE_REPORT) console.info('rss growth MB', grown.toFixed(1));
    expect(grown).toBeLessThan(64);
  });
});

describe('the allowed upload and the next-mode deny', () => {
  it(`an allowed ${SIZE_MB} MB file is stored whole`, async () => {
    const s = await setup();
    try {
      const outcome = await fetchUpload({
        port: s.served.port,
        path: '/avatar',
        filename: 'big.bin',
        sizeMB: SIZE_MB,
      });
      expect(outcome.status).toBe(200);
      const stored = readFileSync(join(s.root, 'uploads', 'big.bin'));
      expect(stored.length).toBe(SIZE_MB * 1024 * 1024);
      const expected = createHash('sha256')
        .update(Buffer.alloc(SIZE_MB * 1024 * 1024, 0x61))
        .digest('hex');
      expect(createHash('sha256').update(stored).digest('hex')).toBe(expected);
    } finally {
      await teardown(s);
    }
  });

  it("errors: 'next': the error handler answers at once, exactly once", async () => {
    const s = await setup({ errors: 'next' });
    try {
      const outcome = await httpUpload({
        port: s.served.port,
        path: '/avatar',
        filename: '../../x',
        sizeMB: SIZE_MB,
      });
      report('http next-mode', outcome);
      expectPrompt403(
        outcome,
        JSON.stringify({
          status: 403,
          code: 'PATHGATE_DENIED',
          message: 'file avatar: path denied (path-not-in-allowlist)',
        }),
      );
      expect(await connectionsDrain(s)).toBe(0);
      await sleep(200);
      expect(s.errors.calls).toHaveLength(1);
      expect(filesUnder(s.root)).toEqual([]);
    } finally {
      await teardown(s);
    }
  });
});

/** A route whose storage holds each file stream until `release`, then stores it with the gate's disk storage. */
async function holdingSetup() {
  const { root, remove } = tempRoot();
  const gate = pathgate({ root, fs: ['rw:uploads/**'] });
  const disk = gate.diskStorage();
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = { count: 0 };
  const holding: multer.StorageEngine = {
    _handleFile(req, file, callback) {
      held.count += 1;
      released.then(() => disk._handleFile(req, file, callback));
    },
    _removeFile: (req, file, callback) => disk._removeFile(req, file, callback),
  };
  const app = express();
  app.post(
    '/held',
    gate.write({ file: 'avatar', under: 'uploads' }),
    gate.multer({ storage: holding, limits: { fileSize: 100 * MB } }).single('avatar'),
    (req, res) => res.json({ size: req.file?.size }),
  );
  return { served: await serve(app), root, remove, held, release };
}

describe(`an allowed ${SIZE_MB} MB upload`, () => {
  it('streams to its storage intact, without buffering', async () => {
    const h = await holdingSetup();
    let upload: HeldUpload | undefined;
    try {
      upload = await heldUpload(h.served.port, '/held', {
        field: 'avatar',
        filename: 'big.bin',
        size: SIZE_MB * MB,
      });
      if (process.env.PATHGATE_REPORT) console.info('held upload: taken MB', upload.taken / MB);
      // A server that buffered would take all 50 MB (test/held-upload.ts).
      expect(upload.taken).toBeLessThan(STREAMED_AT_MOST);
      expect(h.held.count).toBe(1);
      h.release();
      expect(await upload.finish()).toMatchObject({ status: 200, json: { size: SIZE_MB * MB } });
      const stored = readFileSync(join(h.root, 'uploads', 'big.bin'));
      expect(stored.equals(Buffer.alloc(SIZE_MB * MB, 0x61))).toBe(true);
    } finally {
      upload?.abort();
      h.release();
      await h.served.close();
      h.remove();
    }
  });
});
