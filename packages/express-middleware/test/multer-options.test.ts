import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { withoutUnhandled } from '../../../test/unhandled.js';
import { pathgate } from '../src/index.js';
import { readMulterOptions } from '../src/multer-options.js';
import { filePart, onApp, upload } from './helpers.js';

// gate.multer(options) is validated when it is called: options that are not
// an object, a key neither multer nor pathgate reads, or limits of a shape
// multer would ignore are a TypeError naming them. A typo must never leave
// an upload without the limit it was meant to set.

const gate = pathgate({ root: '/srv', fs: ['rw:uploads/**'] });

/** The TypeError message `gate.multer(options)` throws. */
function thrown(options: unknown): string {
  try {
    gate.multer(options as never);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as Error).message;
  }
  throw new Error('expected a TypeError');
}

describe('gate.multer(options) that are not an object', () => {
  const ROWS: readonly (readonly [string, unknown])[] = [
    ['a string', 'uploads'],
    ['a number', 42],
    ['a boolean', true],
    ['a function', () => ({})],
    ['an array', [{ limits: { fileSize: 1 } }]],
  ];
  it.each(ROWS)('%s → TypeError', (_name, options) => {
    expect(thrown(options)).toBe('pathgate: gate.multer(): options must be an object');
  });
});

describe('gate.multer(options): a key neither multer nor pathgate reads', () => {
  const ROWS: readonly (readonly [string, unknown, string])[] = [
    [
      'limit (for limits)',
      { limit: { fileSize: 1e6 } },
      'unknown option "limit" (did you mean limits?)',
    ],
    [
      'filefilter',
      { filefilter: () => {} },
      'unknown option "filefilter" (did you mean fileFilter?)',
    ],
    [
      'Storage',
      { Storage: gate.diskStorage() },
      'unknown option "Storage" (did you mean storage?)',
    ],
    ['maxFileSize', { maxFileSize: 1e6 }, 'unknown option "maxFileSize"'],
    ['beside valid ones', { limits: { files: 1 }, overwrite: true }, 'unknown option "overwrite"'],
  ];
  it.each(ROWS)('%s → TypeError naming it', (_name, options, message) => {
    expect(thrown(options)).toBe(`pathgate: gate.multer(): ${message}`);
  });
});

describe('gate.multer(options): limits multer would ignore', () => {
  const SHAPE = 'option limits must be an object or a function';
  const ROWS: readonly (readonly [string, unknown, string])[] = [
    ['a number', 1e6, SHAPE],
    ['a string', '1mb', SHAPE],
    ['true', true, SHAPE],
    ['null', null, SHAPE],
    ['an array', [1e6], SHAPE],
    ['filesize', { filesize: 1e6 }, 'unknown limit "filesize" (did you mean fileSize?)'],
    ['file (for files)', { file: 1 }, 'unknown limit "file" (did you mean files?)'],
    ['fileSizes', { fileSizes: 1 }, 'unknown limit "fileSizes" (did you mean fileSize?)'],
    ['maxSize', { maxSize: 1e6 }, 'unknown limit "maxSize"'],
  ];
  it.each(ROWS)('limits %s → TypeError', (_name, limits, message) => {
    expect(thrown({ limits })).toBe(`pathgate: gate.multer(): ${message}`);
  });
});

describe('gate.multer(options): a highWaterMark or charset busboy cannot take, or ignores', () => {
  // fileHwm -1 threw from inside busboy's parser on the first file part: an
  // uncaught exception, the request never answered. A string limits nothing.
  it.each([
    ['fileHwm', -1],
    ['fileHwm', 1.5],
    ['fileHwm', '16kb'],
    ['highWaterMark', -1],
    ['highWaterMark', Number.POSITIVE_INFINITY],
    ['highWaterMark', '64kb'],
  ])('%s %s → TypeError naming it', (key, value) => {
    expect(thrown({ [key]: value })).toBe(
      `pathgate: gate.multer(): option ${key} must be a non-negative integer`,
    );
  });

  // Threw the same way, on the first text field: busboy lowercases it.
  it.each([5, {}])('defCharset %o → TypeError naming it', (defCharset) => {
    expect(thrown({ defCharset })).toBe(
      'pathgate: gate.multer(): option defCharset must be a string',
    );
  });
});

describe("gate.multer(options): multer 2.x's documented options are taken", () => {
  it('each option multer reads and pathgate does not set', () => {
    const options = {
      storage: gate.diskStorage(),
      fileFilter: () => {},
      limits: {
        fieldNameSize: 100,
        fieldSize: 1024,
        fields: 10,
        fileSize: 1024,
        files: 2,
        parts: 12,
        headerPairs: 100,
        fieldNestingDepth: 2,
        fieldArrayIndexLimit: 10,
      },
      defCharset: 'utf8',
      highWaterMark: 64 * 1024,
      fileHwm: 16 * 1024,
      streamHandler: () => {},
    };
    expect(typeof gate.multer(options).single).toBe('function');
  });

  it('a key holding undefined counts as absent, known or not', () => {
    expect(typeof gate.multer({ limit: undefined, limits: undefined } as never).any).toBe(
      'function',
    );
  });

  it('limits given as a function of the request still limit each upload', async () => {
    const status = await onApp(
      (_root, app) => {
        const perRequest = pathgate({ root: '/srv', fs: ['rw:uploads/**'] });
        const small = perRequest.multer({ limits: () => ({ fileSize: 4 }) });
        app.post('/up', perRequest.write({ file: 'f', under: 'uploads' }), small.single('f'));
      },
      async (port, _root, errors) => {
        const res = await upload(port, '/up', [filePart('f', 'big.txt', 'x'.repeat(100))]);
        expect(errors).toHaveLength(1);
        return res.json;
      },
    );
    expect(status).toMatchObject({ code: 'LIMIT_FILE_SIZE' });
  });

  // "an object or undefined": undefined is no limits for that request, as an absent `limits` is.
  it('a limits function returning undefined takes the upload, limited by nothing', async () => {
    await onApp(
      (root, app) => {
        const perRequest = pathgate({ root, fs: ['rw:uploads/**'] });
        const unlimited = perRequest.multer({ limits: () => undefined });
        const spec = perRequest.write({ file: 'f', under: 'uploads' });
        app.post('/up', spec, unlimited.single('f'), (_req, res) => res.sendStatus(201));
      },
      async (port, root, errors) => {
        const res = await upload(port, '/up', [filePart('f', 'big.txt', 'x'.repeat(100))]);
        expect(res.status).toBe(201);
        expect(errors).toEqual([]);
        expect(readdirSync(`${root}/uploads`)).toEqual(['big.txt']);
      },
    );
  });

  // multer reads these as no limit at all: the 100-byte file was stored.
  it.each([
    ['a misspelt limit', { filesize: 4 }, 'unknown limit "filesize" (did you mean fileSize?)'],
    ['a number', 4, 'the limits function must return an object or undefined'],
  ])(
    'a limits function returning %s fails the request (500), nothing stored',
    async (_name, limits, message) => {
      await onApp(
        (root, app) => {
          const perRequest = pathgate({ root, fs: ['rw:uploads/**'] });
          const small = perRequest.multer({ limits: () => limits as never });
          const spec = perRequest.write({ file: 'f', under: 'uploads' });
          app.post('/up', spec, small.single('f'), (_req, res) => res.sendStatus(201));
        },
        async (port, root, errors) => {
          const res = await upload(port, '/up', [filePart('f', 'big.txt', 'x'.repeat(100))]);
          expect(res.status).toBe(500);
          expect(errors).toEqual([new TypeError(`pathgate: gate.multer(): ${message}`)]);
          expect(readdirSync(root)).toEqual([]);
        },
      );
    },
  );
});

describe('gate.multer(options): a limits function that fails', () => {
  const SYNC =
    'pathgate: gate.multer(): the limits function must answer synchronously (an async one answers a promise, which multer reads as no limits)';
  // multer reads a promise as limits with none set (the 100-byte file was
  // stored), and passes a falsy throw to next() as success; a rejection of
  // the promise, unhandled, ended the process.
  it.each([
    ['an async function', async () => ({ fileSize: 4 }), new TypeError(SYNC)],
    [
      'an async function that rejects',
      async () => {
        throw new Error('limits down');
      },
      new TypeError(SYNC),
    ],
    [
      'a throw of undefined',
      () => {
        throw undefined;
      },
      new Error('pathgate: an option failed without an error'),
    ],
  ])(
    '%s fails the request (500), nothing stored, nothing unhandled',
    async (_name, limits, error) => {
      await withoutUnhandled(() =>
        onApp(
          (root, app) => {
            const perRequest = pathgate({ root, fs: ['rw:uploads/**'] });
            const small = perRequest.multer({ limits: limits as never });
            const spec = perRequest.write({ file: 'f', under: 'uploads', optional: true });
            app.post('/up', spec, small.single('f'), (_req, res) => res.sendStatus(201));
          },
          async (port, root, errors) => {
            const res = await upload(port, '/up', [filePart('f', 'big.txt', 'x'.repeat(100))]);
            expect(res.status).toBe(500);
            expect(errors).toEqual([error]);
            expect(readdirSync(root)).toEqual([]);
          },
        ),
      );
    },
  );
});

describe('gate.multer(options): what an older multer of the peer range would ignore', () => {
  // busboy compares most limits with ===: a value that is not a whole number
  // never matches and limits nothing. multer checks from 2.5 only.
  it.each([1.5, '2', -1, Number.NaN])('a limit of %s is refused on every multer', (files) => {
    for (const version of ['2.2.0', '2.5.0']) {
      expect(() => readMulterOptions({ limits: { files } }, version)).toThrow(
        'pathgate: gate.multer(): limit files must be a non-negative integer or Infinity',
      );
    }
    expect(readMulterOptions({ limits: { files: Infinity } }, '2.2.0')).toBeDefined();
  });

  // multer copies inherited limits to busboy (for...in) but checks some only
  // when own (fieldNestingDepth): an inherited one is read by one and not the other.
  it.each([
    ['fileSize', 1.5],
    ['fileSzie', 5],
    ['fieldNestingDepth', 2],
  ])('an inherited limit %s is refused', (key, value) => {
    const limits = Object.create({ [key]: value });
    expect(() => readMulterOptions({ limits }, '2.5.0')).toThrow(
      `pathgate: gate.multer(): limit ${key} must be an own property of limits`,
    );
  });

  it('limits without a plain prototype, frozen or written as products, are taken', () => {
    class Limits {
      fileSize = 5 * 1024 * 1024;
      files = Number.MAX_SAFE_INTEGER;
    }
    const bare = Object.assign(Object.create(null), { fileSize: 1e7, parts: null });
    for (const limits of [new Limits(), bare, Object.freeze({ fields: undefined, fileSize: 1 })]) {
      const options = { limits };
      expect(readMulterOptions(options, '2.2.0-beta.1')).toBe(options);
    }
  });

  // The peer range starts at multer 2.2; these arrived later, and an older
  // multer ignores them (a limit that limits nothing, no limits at all).
  const NEWER: readonly (readonly [string, object, string])[] = [
    ['fieldArrayIndexLimit', { limits: { fieldArrayIndexLimit: 10 } }, '2.3'],
    ['limits as a function', { limits: () => ({ fileSize: 1 }) }, '2.4'],
    ['defCharset', { defCharset: 'utf8' }, '2.4'],
    ['highWaterMark', { highWaterMark: 1024 }, '2.4'],
    ['fileHwm', { fileHwm: 1024 }, '2.4'],
    ['streamHandler', { streamHandler: () => {} }, '2.4'],
  ];

  it.each(NEWER)('%s: refused below multer %s, taken from it on', (name, options, since) => {
    const [major, minor] = since.split('.').map(Number) as [number, number];
    const older = `${major}.${minor - 1}.9`;
    expect(() => readMulterOptions(options, older)).toThrow(
      `pathgate: gate.multer(): ${name} needs multer ${since} or later (installed: ${older})`,
    );
    expect(readMulterOptions(options, `${since}.0`)).toBe(options);
    expect(readMulterOptions(options, '3.0.0-alpha.2')).toBe(options);
  });

  it('a limit of 0 is one; a limit or newer option holding undefined or null is absent', () => {
    const limits = { files: 0, fileSize: undefined, fieldArrayIndexLimit: null };
    const options = { limits, streamHandler: undefined };
    expect(readMulterOptions(options, '2.2.0')).toBe(options);
  });

  it('what multer 2.2 reads is taken from it', () => {
    const options = {
      limits: { fileSize: 1, files: 2, fields: 3, parts: 4, fieldNestingDepth: 2 },
      fileFilter: () => {},
    };
    expect(readMulterOptions(options, '2.2.0')).toBe(options);
  });

  // multer 2.1 leaves the file it was writing when an upload fails (a body
  // cut mid-file): a half-written file. Peer ranges only warn: refuse it.
  it.each(['2.1.1', '2.0.2', '1.4.5-lts.2'])(
    'multer %s, below the peer range, is refused',
    (version) => {
      expect(() => readMulterOptions({}, version)).toThrow(
        `pathgate: gate.multer(): needs multer 2.2 or later (installed: ${version})`,
      );
    },
  );
});
