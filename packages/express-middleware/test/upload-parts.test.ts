import { Readable } from 'node:stream';
import { denyBody } from '@pathgate/core';
import type express from 'express';
import type { StorageEngine } from 'multer';
import { describe, expect, it } from 'vitest';
import { withoutUnhandled } from '../../../test/unhandled.js';
import { type PathgateLogEntry, type PathgateOptions, pathgate } from '../src/index.js';
import {
  fieldPart,
  filePart,
  filesUnder,
  onApp,
  type RawPart,
  sleep,
  until,
  upload,
} from './helpers.js';

// One multipart body, part by part: a part without a filename (seen on
// busboy itself), a report-only deny that lets a part through or an onDeny
// that answers in the middle of the body, and what the storage gets to see.

/** A file part with no filename at all: multer drops it without calling fileFilter. */
const nameless = (field: string): RawPart => ({
  headers: `Content-Disposition: form-data; name="${field}"\r\nContent-Type: application/octet-stream`,
  body: 'x',
});

const answer: express.RequestHandler = (req, res) => {
  res.json({ files: ((req.files ?? []) as Express.Multer.File[]).map((f) => f.originalname) });
};

/** A gate on `root` allowing writes below uploads/. */
const gateOn = (root: string, options: Partial<PathgateOptions> = {}) =>
  pathgate({ root, fs: ['rw:uploads/**'], log: () => {}, ...options } as PathgateOptions);

describe('a file part without a filename', () => {
  it('is denied like a bad name: the files stored before it are removed', async () => {
    await onApp(
      (root, app) => {
        const gate = gateOn(root);
        app.post('/up', gate.write({ file: 'doc', under: 'uploads' }), gate.multer().any(), answer);
      },
      async (port, root) => {
        const res = await upload(port, '/up', [
          filePart('doc', 'first.txt', 'x'.repeat(64 * 1024)),
          nameless('doc'),
        ]);
        expect(res.json).toEqual(denyBody({ reason: 'missing-path', label: 'file doc' }));
        await sleep(100);
        expect(filesUnder(root)).toEqual([]);
      },
    );
  });

  it('report-only: reported once and let through, the next parts are still stored', async () => {
    const seen: PathgateLogEntry[] = [];
    await onApp(
      (root, app) => {
        const ro = gateOn(root, { reportOnly: true, log: (entry) => seen.push(entry) });
        app.post('/up', ro.write({ file: 'doc', under: 'uploads' }), ro.multer().any(), answer);
      },
      async (port, root) => {
        const res = await upload(port, '/up', [
          nameless('doc'),
          nameless('other'),
          filePart('doc', 'kept.txt'),
        ]);
        expect(res.status).toBe(200);
        expect(res.json).toEqual({ files: ['kept.txt'] });
        expect(seen.map((e) => [e.event, e.label, e.reason])).toEqual([
          ['report-only', 'file doc', 'missing-path'],
          ['report-only', 'file', 'unexpected-file'],
        ]);
        expect(filesUnder(root)).toEqual(['uploads/kept.txt']);
      },
    );
  });
});

describe('an empty file input (filename="", no bytes) of an optional field', () => {
  const EMPTY_INPUT = filePart('avatar', '', '');
  /** The gate's verdict as the handler sees it: the file multer kept, and the checked paths. */
  const seen: express.RequestHandler = (req, res) => {
    const files = (req.files ?? (req.file ? [req.file] : [])) as Express.Multer.File[];
    res.json({ stored: files.map((f) => f.originalname), pathgate: req.pathgate });
  };
  const routes = (root: string, app: express.Express) => {
    const gate = gateOn(root);
    const avatar = { file: 'avatar', under: 'uploads', optional: true } as const;
    const name = { body: 'name', under: 'uploads' } as const;
    app.post('/single', gate.write(avatar, name), gate.multer().single('avatar'), seen);
    app.post('/any', gate.write(avatar), gate.multer().any(), seen);
    app.post('/required', gate.write({ ...avatar, optional: false }), gate.multer().any(), seen);
  };

  it.each([
    ['filename=""', EMPTY_INPUT],
    ['no filename at all', nameless('avatar')],
  ])('%s: the request goes on without a file, its fields checked', async (_, input) => {
    await onApp(routes, async (port, root) => {
      const res = await upload(port, '/single', [fieldPart('name', 'bob.txt'), input]);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        stored: [],
        pathgate: {
          mode: 'write',
          params: {},
          query: {},
          headers: {},
          body: { name: `${root}/uploads/bob.txt` },
          files: [],
        },
      });
      expect(filesUnder(root)).toEqual([]);
    });
  });

  it('a real file after it is still checked and stored; a bad one still denied', async () => {
    await onApp(routes, async (port, root) => {
      const ok = await upload(port, '/any', [EMPTY_INPUT, filePart('avatar', 'me.png', 'png')]);
      expect(ok.json).toMatchObject({ stored: ['me.png'] });
      expect(filesUnder(root)).toEqual(['uploads/me.png']);
      const bad = await upload(port, '/any', [EMPTY_INPUT, filePart('avatar', '../me.png')]);
      expect(bad.json).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'file avatar' }));
    });
  });

  it('report-only: nothing to report, the part is dropped and the request goes on', async () => {
    const seen: PathgateLogEntry[] = [];
    await onApp(
      (root, app) => {
        const ro = gateOn(root, { reportOnly: true, log: (entry) => seen.push(entry) });
        const avatar = { file: 'avatar', under: 'uploads', optional: true } as const;
        app.post('/ro', ro.write(avatar), ro.multer().any(), answer);
      },
      async (port, root) => {
        const res = await upload(port, '/ro', [EMPTY_INPUT, nameless('avatar')]);
        expect(res.json).toEqual({ files: [] });
        expect(seen).toEqual([]);
        expect(filesUnder(root)).toEqual([]);
      },
    );
  });

  it('a required field: missing-path, as before', async () => {
    await onApp(routes, async (port) => {
      const res = await upload(port, '/required', [EMPTY_INPUT]);
      expect(res.json).toEqual(denyBody({ reason: 'missing-path', label: 'file avatar' }));
    });
  });
});

describe("a report-only gate whose route uses another gate's multer", () => {
  it("reports a file no gate declares with its own deny, not the multer gate's", async () => {
    const seen: PathgateLogEntry[] = [];
    await onApp(
      (root, app) => {
        const ro = gateOn(root, { reportOnly: true, log: (entry) => seen.push(entry) });
        const enforcing = gateOn(root);
        app.post(
          '/up',
          ro.write({ file: 'doc', under: 'uploads', optional: true }),
          enforcing.multer().any(),
          answer,
        );
      },
      async (port, root) => {
        const res = await upload(port, '/up', [filePart('other', 'x.txt'), nameless('other')]);
        expect(res.status).toBe(200);
        expect(res.json).toEqual({ files: ['x.txt'] });
        // Once for both parts: a spec is reported by its first denied part.
        expect(seen.map((e) => [e.label, e.reason])).toEqual([['file', 'unexpected-file']]);
        // Let through unchecked: no checked path, so the safe storage writes nothing.
        expect(filesUnder(root)).toEqual([]);
      },
    );
  });
});

describe('a report-only onDeny that answers in the middle of the body', () => {
  const cases: readonly (readonly [string, RawPart])[] = [
    ['a denied name', filePart('doc', '../evil.txt')],
    ['a part without a filename', nameless('doc')],
  ];
  it.each(cases)('at %s: the body stops, and the file stored before is removed', async (_, bad) => {
    let answered = 0;
    await onApp(
      (root, app) => {
        const ro = gateOn(root, {
          reportOnly: true,
          onDeny: (_denial, _req, res) => {
            answered += 1;
            res.status(451).json({ error: 'unavailable' });
          },
        });
        app.post('/up', ro.write({ file: 'doc', under: 'uploads' }), ro.multer().any(), answer);
      },
      async (port, root) => {
        const res = await upload(port, '/up', [
          filePart('doc', 'first.txt', 'x'.repeat(64 * 1024)),
          bad,
          filePart('doc', 'after.txt'),
        ]);
        expect(res.status).toBe(451);
        // onDeny answered before the removal: the file goes after the answer.
        expect(await until(() => filesUnder(root).length === 0)).toBe(true);
        await sleep(50); // a second onDeny call would show here
        expect(answered).toBe(1);
      },
    );
  });
});

/**
 * A storage that keeps nothing and records what it was handed; removal takes
 * `removeMs`, and throws at once for a file named `throwsFor` (a buggy engine).
 */
function recordingStorage(removeMs: number, throwsFor?: string, rejects = false) {
  const handled: string[] = [];
  const removed: unknown[] = [];
  const storage: StorageEngine = {
    _handleFile(_req, file, cb) {
      handled.push(file.originalname);
      file.stream.resume();
      file.stream.on('end', () => cb(null, { size: 1 }));
    },
    _removeFile(_req, file, cb) {
      if (throwsFor !== undefined && file.originalname === throwsFor) {
        // An async one's rejection went unhandled: the process ended.
        if (rejects) return Promise.reject(new Error('remove failed')) as never;
        throw new Error('remove failed');
      }
      setTimeout(() => {
        removed.push(file.originalname);
        cb(null);
      }, removeMs);
    },
  };
  return { storage, handled, removed };
}

describe('what the storage engine sees', () => {
  it('a deny after multer removes the stored files before answering, and only those', async () => {
    const { storage, handled, removed } = recordingStorage(150);
    await onApp(
      (root, app) => {
        const gate = gateOn(root);
        const spec = [
          { file: 'doc', under: 'uploads', optional: true },
          { body: 'to', under: 'uploads' },
        ] as const;
        app.post('/up', gate.write(...spec), gate.multer({ storage }).single('doc'), answer);
      },
      async (port) => {
        const res = await upload(port, '/up', [filePart('doc', 'a.txt'), fieldPart('to', '../x')]);
        expect(res.json).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'body.to' }));
        // Removed before the 403 went out, not after.
        expect(removed).toEqual(['a.txt']);
        const none = await upload(port, '/up', [fieldPart('to', '../y')]);
        expect(none.status).toBe(403);
        await sleep(200);
        // Nothing was stored for the second request: nothing to remove.
        expect(removed).toEqual(['a.txt']);
        expect(handled).toEqual(['a.txt']);
      },
    );
  });

  it.each([
    ['throws', false],
    ['rejects', true],
  ])(
    'a removal that %s: the deny still answers once the others are removed, nothing unhandled',
    async (_name, rejects) => {
      const { storage, removed } = recordingStorage(100, 'bad.txt', rejects);
      await withoutUnhandled(() =>
        onApp(
          (root, app) => {
            const gate = gateOn(root);
            const spec = [
              { file: 'doc', under: 'uploads' },
              { body: 'to', under: 'uploads' },
            ] as const;
            app.post('/up', gate.write(...spec), gate.multer({ storage }).array('doc'), answer);
          },
          async (port) => {
            const res = await upload(port, '/up', [
              filePart('doc', 'bad.txt'),
              filePart('doc', 'good.txt'),
              fieldPart('to', '../x'),
            ]);
            expect(res.json).toEqual(
              denyBody({ reason: 'path-not-in-allowlist', label: 'body.to' }),
            );
            expect(removed).toEqual(['good.txt']);
          },
        ),
      );
    },
  );

  it('no part after a denied one reaches the storage', async () => {
    const { storage, handled } = recordingStorage(0);
    await onApp(
      (root, app) => {
        const gate = gateOn(root);
        app.post(
          '/up',
          gate.write({ file: 'doc', under: 'uploads' }),
          gate.multer({ storage }).any(),
          answer,
        );
      },
      async (port) => {
        const res = await upload(port, '/up', [nameless('doc'), filePart('doc', 'late.txt')]);
        expect(res.json).toEqual(denyBody({ reason: 'missing-path', label: 'file doc' }));
        await sleep(50);
        expect(handled).toEqual([]);
      },
    );
  });
});

describe("multer's streamHandler option", () => {
  it("feeds busboy through the app's handler; a part without a filename is decided once", async () => {
    const seen: PathgateLogEntry[] = [];
    let fed = 0;
    await onApp(
      (root, app) => {
        const ro = gateOn(root, { reportOnly: true, log: (entry) => seen.push(entry) });
        const up = ro.multer({
          // Counts, then feeds the body as multer's default does.
          streamHandler: (req, parser) => {
            fed += 1;
            req.pipe(parser as NodeJS.WritableStream);
          },
        });
        app.post('/up', ro.write({ file: 'doc', under: 'uploads' }), up.any(), answer);
      },
      async (port, root) => {
        const res = await upload(port, '/up', [nameless('doc'), filePart('doc', 's.txt')]);
        expect(res.json).toEqual({ files: ['s.txt'] });
        expect(fed).toBe(1);
        expect(seen.map((e) => [e.label, e.reason])).toEqual([['file doc', 'missing-path']]);
        expect(filesUnder(root)).toEqual(['uploads/s.txt']);
      },
    );
  });
});

describe('req.pipe, which the multer middleware catches for one call', () => {
  it("is the request's own again afterwards: an app's wrapper stays, none is added", async () => {
    const piped: string[] = [];
    const traced = function traced(this: express.Request, ...args: Parameters<Readable['pipe']>) {
      piped.push(args[0].constructor.name);
      return Readable.prototype.pipe.apply(this, args);
    };
    await onApp(
      (root, app) => {
        const gate = gateOn(root);
        app.post(
          '/up',
          (req, _res, next) => {
            if (req.headers['x-trace']) req.pipe = traced as never;
            next();
          },
          gate.write({ file: 'doc', under: 'uploads' }),
          gate.multer().single('doc'),
          (req, res) => {
            res.json({ own: Object.hasOwn(req, 'pipe'), traced: req.pipe === traced });
          },
        );
      },
      async (port) => {
        const traceOn = await upload(port, '/up', [filePart('doc', 'a.txt')], { 'x-trace': '1' });
        expect(traceOn.json).toEqual({ own: true, traced: true });
        expect(piped).toHaveLength(1);
        const plain = await upload(port, '/up', [filePart('doc', 'b.txt')]);
        expect(plain.json).toEqual({ own: false, traced: false });
      },
    );
  });
});
