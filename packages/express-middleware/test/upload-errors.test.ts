import { denyBody } from '@pathgate/core';
import express from 'express';
import multer, { type StorageEngine } from 'multer';
import { describe, expect, it } from 'vitest';
import { withoutUnhandled } from '../../../test/unhandled.js';
import { type PathgateLogEntry, type PathgateMulterOptions, pathgate } from '../src/index.js';
import {
  fieldPart,
  filePart,
  filesUnder,
  type RawPart,
  tempRoot,
  until,
  upload,
  withServed,
} from './helpers.js';

// What reaches the app's error handler from a gate's multer middleware: a
// multer limit is a 413, another multer refusal a 400, both exposed (the
// client's fault); anything else arrives as it was sent.

const FILE = { file: 'f', under: 'uploads' } as const;

/** The error handler the README shows, then the app's catch-all for the rest. */
const exposed: express.ErrorRequestHandler = (err, _req, res, next) => {
  if (err.expose) return res.status(err.status).json({ error: err.message, code: err.code });
  next(err);
};

/** The answer and the errors the app's handlers saw, for one upload to one route's gate.multer(). */
async function uploadTo(
  options: PathgateMulterOptions,
  method: (up: multer.Multer) => express.RequestHandler,
  parts: readonly RawPart[],
) {
  const dir = tempRoot();
  const seen: unknown[] = [];
  const logs: PathgateLogEntry[] = [];
  try {
    const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: (e) => logs.push(e) });
    const app = express();
    app.post('/up', gate.write(FILE), method(gate.multer(options)), (_req, res) => {
      res.json({ ok: true });
    });
    const record: express.ErrorRequestHandler = (err, _req, _res, next) => {
      seen.push(err);
      next(err);
    };
    const internal: express.ErrorRequestHandler = (_err, _req, res, _next) => {
      res.status(500).json({ error: 'internal' });
    };
    app.use(record, exposed, internal);
    const res = await withServed(app, (s) => upload(s.port, '/up', parts));
    return { res, seen, stored: filesUnder(dir.root), logs };
  } finally {
    dir.remove();
  }
}

describe("multer's refusals reach the error handler as the client's fault", () => {
  it('a limit exceeded → 413, exposed', async () => {
    const size = await uploadTo({ limits: { fileSize: 4 } }, (up) => up.single('f'), [
      filePart('f', 'big.txt', 'too big'),
    ]);
    expect([size.res.status, size.res.json]).toEqual([
      413,
      { error: expect.any(String), code: 'LIMIT_FILE_SIZE' },
    ]);
    const count = await uploadTo({ limits: { files: 1 } }, (up) => up.array('f'), [
      filePart('f', 'one.txt'),
      filePart('f', 'two.txt'),
    ]);
    expect([count.res.status, count.res.json]).toEqual([
      413,
      { error: expect.any(String), code: 'LIMIT_FILE_COUNT' },
    ]);
  });

  it.each([
    ['LIMIT_PART_COUNT', { parts: 1 }, [fieldPart('n', 'v'), filePart('f', 'a.txt')]],
    ['LIMIT_FIELD_KEY', { fieldNameSize: 2 }, [fieldPart('long', 'v')]],
    ['LIMIT_FIELD_VALUE', { fieldSize: 2 }, [fieldPart('n', 'long')]],
    ['LIMIT_FIELD_COUNT', { fields: 0 }, [fieldPart('n', 'v')]],
    ['LIMIT_FIELD_NESTING', { fieldNestingDepth: 1 }, [fieldPart('n[a][b]', 'v')]],
    ['LIMIT_FIELD_ARRAY_INDEX', { fieldArrayIndexLimit: 5 }, [fieldPart('n[6]', 'v')]],
  ] as const)('a field or part limit exceeded (%s) → 413, exposed', async (code, limits, parts) => {
    const { res } = await uploadTo({ limits }, (up) => up.single('f'), parts);
    expect([res.status, res.json]).toEqual([413, { error: expect.any(String), code }]);
  });

  it('another multer refusal (a field multer does not expect) → 400, exposed', async () => {
    const { res } = await uploadTo({}, (up) => up.single('f'), [filePart('g', 'x.txt')]);
    expect([res.status, res.json]).toEqual([
      400,
      { error: expect.any(String), code: 'LIMIT_UNEXPECTED_FILE' },
    ]);
  });

  it("a MulterError the app's fileFilter shaped itself (status 415, exposed) keeps its status", async () => {
    const fileFilter: multer.Options['fileFilter'] = (_req, file, cb) =>
      cb(
        Object.assign(new multer.MulterError('LIMIT_UNEXPECTED_FILE', file.fieldname), {
          status: 415,
          expose: true,
        }),
      );
    const { res } = await uploadTo({ fileFilter }, (up) => up.single('f'), [
      filePart('f', 'a.gif'),
    ]);
    expect([res.status, res.json]).toEqual([
      415,
      { error: expect.any(String), code: 'LIMIT_UNEXPECTED_FILE' },
    ]);
  });
});

describe("the app's own errors pass through untouched", () => {
  it("an Error from the user's fileFilter: no status, not exposed, its message not sent", async () => {
    const boom = new Error('database at 10.0.0.7 is down');
    const fileFilter: multer.Options['fileFilter'] = (_req, _file, cb) => cb(boom);
    const { res, seen } = await uploadTo({ fileFilter }, (up) => up.single('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json]).toEqual([500, { error: 'internal' }]);
    expect(seen).toEqual([boom]);
    expect(boom).not.toHaveProperty('expose');
    expect(boom).not.toHaveProperty('status');
  });

  it('a user fileFilter that throws: its error reaches the error handler, the process goes on', async () => {
    const boom = new Error('filter bug');
    const fileFilter: multer.Options['fileFilter'] = () => {
      throw boom;
    };
    const { res, seen } = await uploadTo({ fileFilter }, (up) => up.array('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json]).toEqual([500, { error: 'internal' }]);
    expect(seen).toEqual([boom]);
  });

  it('a user fileFilter that throws after calling back: the error still reaches the handler, nothing stored', async () => {
    const late = new Error('after the callback');
    const fileFilter: multer.Options['fileFilter'] = (_req, _file, cb) => {
      cb(null, true);
      throw late;
    };
    const { res, seen, stored } = await uploadTo({ fileFilter }, (up) => up.array('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json]).toEqual([500, { error: 'internal' }]);
    expect(seen).toEqual([late]);
    expect(stored).toEqual([]);
  });

  it('an async fileFilter that rejects: its error reaches the error handler, nothing unhandled, no hang', async () => {
    const boom = new Error('lookup failed');
    const fileFilter: multer.Options['fileFilter'] = async (_req, _file, _cb) => {
      await Promise.resolve();
      throw boom;
    };
    const { res, seen, stored } = await uploadTo({ fileFilter }, (up) => up.array('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json, seen, stored]).toEqual([500, { error: 'internal' }, [boom], []]);
  });

  it('a fileFilter that throws undefined still fails the request: not read as a refused file', async () => {
    const fileFilter: multer.Options['fileFilter'] = () => {
      throw undefined;
    };
    const { res, seen, stored } = await uploadTo({ fileFilter }, (up) => up.array('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json, seen.length, stored]).toEqual([
      500,
      { error: 'internal' },
      1,
      [],
    ]);
  });

  it('an async streamHandler that rejects before feeding busboy: its error reaches the handler, no hang', async () => {
    const boom = new Error('raw body unavailable');
    const streamHandler = async () => {
      await Promise.resolve();
      throw boom;
    };
    const { res, seen, stored } = await uploadTo({ streamHandler }, (up) => up.array('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json, seen, stored]).toEqual([500, { error: 'internal' }, [boom], []]);
  });

  // multer calls _handleFile inside busboy's events, where nothing catches:
  // a throw ended the process, a rejection went unhandled, and the request hung.
  const hf = new Error('disk gone');
  it.each([
    [
      'throws',
      () => {
        throw hf;
      },
      hf,
    ],
    [
      'throws undefined',
      () => {
        throw undefined;
      },
      // multer sets storageErrors on the error it aborts with
      expect.objectContaining({ message: 'pathgate: an option failed without an error' }),
    ],
    [
      'is async and rejects',
      async () => {
        throw hf;
      },
      hf,
    ],
  ])(
    'a storage engine whose _handleFile %s: its error reaches the handler, no crash, no hang',
    async (_name, handleFile, error) => {
      const storage = {
        _handleFile: handleFile,
        _removeFile: (_req, _file, cb) => cb(null),
      } as StorageEngine;
      const { res, seen, stored } = await withoutUnhandled(() =>
        uploadTo({ storage }, (up) => up.single('f'), [filePart('f', 'a.txt')]),
      );
      expect([res.status, res.json, seen, stored]).toEqual([
        500,
        { error: 'internal' },
        [error],
        [],
      ]);
    },
  );

  it('a storage engine whose _handleFile throws after calling back: the upload goes on, the error is logged', async () => {
    const storage: StorageEngine = {
      _handleFile: (_req, file, cb) => {
        file.stream.resume();
        cb(null, { size: 1 });
        throw hf;
      },
      _removeFile: (_req, _file, cb) => cb(null),
    };
    const { res, seen, logs } = await uploadTo({ storage }, (up) => up.single('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json, seen]).toEqual([200, { ok: true }, []]);
    expect(logs).toEqual([
      expect.objectContaining({
        event: 'hook-failed',
        message: 'storage _handleFile (after it called back) failed: disk gone',
      }),
    ]);
  });

  it('a storage engine that fails with a string: the error handler gets the string', async () => {
    const storage: StorageEngine = {
      _handleFile: (_req, file, cb) => {
        file.stream.resume();
        file.stream.on('end', () => (cb as (error: unknown) => void)('disk quota exceeded'));
      },
      _removeFile: (_req, _file, cb) => cb(null),
    };
    const { res, seen } = await uploadTo({ storage }, (up) => up.single('f'), [
      filePart('f', 'a.txt'),
    ]);
    expect([res.status, res.json]).toEqual([500, { error: 'internal' }]);
    expect(seen).toEqual(['disk quota exceeded']);
  });
});

describe('a user fileFilter that calls back twice: its first answer decides, a later error still aborts', () => {
  it('accepted twice: stored once, the request answered (multer alone stores the spent stream again and hangs)', async () => {
    const fileFilter: multer.Options['fileFilter'] = (_req, _file, cb) => {
      cb(null, true);
      cb(null, true);
    };
    const { res, seen, stored } = await uploadTo({ fileFilter }, (up) => up.array('f'), [
      filePart('f', 'a.txt', 'hello'),
    ]);
    expect([res.status, res.json, seen, stored]).toEqual([
      200,
      { ok: true },
      [],
      ['uploads/a.txt'],
    ]);
  });

  it('refused, then accepted: the file is missing, nothing stored (multer alone writes what is left of the drained part)', async () => {
    const fileFilter: multer.Options['fileFilter'] = (_req, _file, cb) => {
      cb(null, false);
      cb(null, true);
    };
    const { res, stored } = await uploadTo({ fileFilter }, (up) => up.array('f'), [
      filePart('f', 'a.txt', 'hello'.repeat(30_000)),
    ]);
    expect(res.json).toMatchObject({ reason: 'missing-path' });
    expect([res.status, stored]).toEqual([403, []]);
  });

  it('accepted, then its promise rejects after the answer: the stored file stays, the error is logged', async () => {
    const dir = tempRoot();
    const logged: PathgateLogEntry[] = [];
    let rejectLate: () => void = () => {};
    const boom = new Error('audit write failed');
    const fileFilter: multer.Options['fileFilter'] = (_req, _file, cb) => {
      cb(null, true);
      return new Promise((_resolve, reject) => {
        rejectLate = () => reject(boom);
      }) as never;
    };
    try {
      const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: (e) => logged.push(e) });
      const app = express();
      app.post('/up', gate.write(FILE), gate.multer({ fileFilter }).array('f'), (_req, res) => {
        res.json({ ok: true });
      });
      await withServed(app, async (s) => {
        const res = await upload(s.port, '/up', [filePart('f', 'a.txt', 'hello')]);
        expect([res.status, filesUnder(dir.root)]).toEqual([200, ['uploads/a.txt']]);
        rejectLate();
        // multer alone, handed the error now, removes the file the handler was given.
        await until(() => logged.length > 0 || filesUnder(dir.root).length === 0);
        expect([filesUnder(dir.root), logged]).toEqual([
          ['uploads/a.txt'],
          [
            expect.objectContaining({
              event: 'hook-failed',
              message: 'fileFilter (after the upload was read) failed: audit write failed',
              error: boom,
            }),
          ],
        ]);
      });
    } finally {
      dir.remove();
    }
  });
});

// Checked in busboy's event, the body's read threw uncaught: the process ended, the request hung.
describe("a body an app's middleware made a getter that throws, on an upload with a body spec", () => {
  it.each([
    [false, 403, denyBody({ reason: 'not-a-string', label: 'body.d' })],
    [true, 200, { ok: true }],
  ])(
    'reportOnly %s: %s, as a body read that throws is anywhere',
    async (reportOnly, status, body) => {
      const dir = tempRoot();
      try {
        const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], reportOnly, log: () => {} });
        const app = express();
        app.use((req, _res, next) => {
          Object.defineProperty(req, 'body', {
            get() {
              throw new Error('no body here');
            },
          });
          next();
        });
        app.post('/up', gate.write({ body: 'd' }, FILE), gate.multer().single('f'), (_req, res) => {
          res.json({ ok: true });
        });
        // No text field: multer, appending one to that body, would refuse it (400) first.
        const parts = [filePart('f', 'a.txt')];
        const res = await withServed(app, (s) => upload(s.port, '/up', parts));
        expect([res.status, res.json]).toEqual([status, body]);
      } finally {
        dir.remove();
      }
    },
  );
});
