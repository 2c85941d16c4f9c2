import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import express, { type Express } from 'express';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { namedThrough } from '../../../test/fd-path.js';
import { PathgateStorageError, pathgate, STORAGE_CODES } from '../src/index.js';
import {
  entriesUnder,
  filePart,
  filesUnder,
  onApp,
  serve,
  tempRoot,
  until,
  upload,
} from './helpers.js';

// An OS error the storage does not map to a refusal (EACCES on a folder the
// process may not write, EROFS, EIO…), or an error that is no OS error at
// all, names the path it failed on: `EACCES: permission denied, open
// '/srv/…'`. Tests run as root, where chmod refuses nothing, so the real
// storage, walk, pipe and multer run on a node:fs/promises that fails the
// one call `fault` names, with the message Node would give.

type Call = 'open' | 'mkdir' | 'link' | 'rename' | 'unlink';

interface Fault {
  readonly call: Call;
  /** Fails the call on a path (through a descriptor: the path it stands for) ending so. */
  readonly endsWith: string;
  readonly error: (path: string) => unknown;
  /** Fails only the first such call, as a passing fault would. */
  readonly once?: boolean;
}

const faults = vi.hoisted(() => ({ now: undefined as Fault | undefined }));

vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  const failing =
    <A extends unknown[], R>(call: Call, real: (path: never, ...rest: A) => Promise<R>) =>
    async (path: never, ...rest: A): Promise<R> => {
      const { now } = faults;
      if (now?.call === call) {
        const named = await namedThrough(fs, path);
        if (named.endsWith(now.endsWith)) {
          if (now.once) faults.now = undefined;
          throw now.error(named);
        }
      }
      return real(path, ...rest);
    };
  // link and rename fail on their second path: the name being made.
  const second =
    (call: Call, real: (from: never, to: never) => Promise<void>) => (from: never, to: never) =>
      failing(call, (path: never) => real(from, path))(to);
  return {
    ...fs,
    open: failing('open', fs.open),
    mkdir: failing('mkdir', fs.mkdir),
    unlink: failing('unlink', fs.unlink),
    link: second('link', fs.link),
    rename: second('rename', fs.rename),
  };
});

afterEach(() => {
  faults.now = undefined;
});

/** An OS error as Node words it: its message names the path. */
const osError = (code: string, call: Call, what: string) => (path: string) =>
  Object.assign(new Error(`${code}: ${what}, ${call} '${path}'`), { code, syscall: call, path });

const EACCES = (call: Call) => osError('EACCES', call, 'permission denied');
const EIO = (call: Call) => osError('EIO', call, 'i/o error');

/** POST /up (overwrite off) and /replace (overwrite on): files of field doc, below uploads/, 1000 bytes at most. */
function uploadRoutes(root: string, app: Express): void {
  const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
  const stored: express.RequestHandler = (_req, res) => {
    res.status(201).end();
  };
  const limits = { fileSize: 1000 };
  const spec = { file: 'doc', under: 'uploads' };
  app.post('/up', gate.write(spec), gate.multer({ limits }).any(), stored);
  const replacing = gate.multer({ storage: gate.diskStorage({ overwrite: true }), limits });
  app.post('/replace', gate.write(spec), replacing.any(), stored);
}

/** The one error the app got: the storage's failure, its cause the original error. */
function failure(seen: unknown[]): PathgateStorageError & { cause: NodeJS.ErrnoException } {
  expect(seen).toHaveLength(1);
  const [error] = seen as [PathgateStorageError & { cause: NodeJS.ErrnoException }];
  expect(error).toBeInstanceOf(PathgateStorageError);
  expect(error).toMatchObject({ code: STORAGE_CODES.FAILED, status: 500, expose: false });
  return error;
}

/** The answer: a 500 naming neither the root nor a temporary name. */
function expectHidden(res: { status: number; text: string }, root: string): void {
  expect(res.status).toBe(500);
  expect(res.text).not.toContain(root);
  expect(res.text).not.toContain('.pathgate-');
}

describe('an OS error the storage does not map: a 500 that names no path, the error kept as cause', () => {
  it('EACCES creating the temporary file: 500 PATHGATE_STORAGE_FAILED, not exposed, nothing left', async () => {
    faults.now = { call: 'open', endsWith: '.part', error: EACCES('open') };
    await onApp(uploadRoutes, async (port, root, seen) => {
      const res = await upload(port, '/up', [filePart('doc', 'new/a.txt', 'content')]);
      expectHidden(res, root);
      expect(res.json).toEqual({
        status: 500,
        code: 'PATHGATE_STORAGE_FAILED',
        message: 'the file could not be stored',
      });
      const error = failure(seen);
      expect(error.cause.code).toBe('EACCES');
      // The cause names the path, for logs: the injected error is the one the storage met.
      expect(error.cause.message).toContain(join(root, 'uploads/new/.pathgate-'));
      expect(error.message).not.toContain(root);
      expect(entriesUnder(root)).toEqual([]);
    });
  });

  // Only a folder on the way found gone (ENOENT) is walked again: any other error is the answer.
  it('EIO once creating the temporary file: 500, not tried again, nothing left', async () => {
    faults.now = { call: 'open', endsWith: '.part', error: EIO('open'), once: true };
    await onApp(uploadRoutes, async (port, root, seen) => {
      const res = await upload(port, '/up', [filePart('doc', 'new/a.txt', 'content')]);
      expectHidden(res, root);
      expect(failure(seen).cause.code).toBe('EIO');
      expect(entriesUnder(root)).toEqual([]);
    });
  });

  it('EACCES making a folder on the way (the walk): 500, the folders it made removed', async () => {
    faults.now = { call: 'mkdir', endsWith: '/locked', error: EACCES('mkdir') };
    await onApp(uploadRoutes, async (port, root, seen) => {
      const res = await upload(port, '/up', [filePart('doc', 'made/locked/a.txt')]);
      expectHidden(res, root);
      expect(failure(seen).cause.code).toBe('EACCES');
      expect(entriesUnder(root)).toEqual([]);
    });
  });

  it('EROFS giving the file its name (link): 500, no temporary file, no folder left', async () => {
    faults.now = {
      call: 'link',
      endsWith: '/a.txt',
      error: osError('EROFS', 'link', 'read-only file system'),
    };
    await onApp(uploadRoutes, async (port, root, seen) => {
      const res = await upload(port, '/up', [filePart('doc', 'd/a.txt')]);
      expectHidden(res, root);
      expect(failure(seen).cause.code).toBe('EROFS');
      expect(entriesUnder(root)).toEqual([]);
    });
  });

  it.each([
    { step: 'keeping the old file (link)', call: 'link', endsWith: '.old' },
    { step: 'renaming over the old file', call: 'rename', endsWith: '/report.txt' },
  ] as const)(
    'EIO $step (overwrite): 500, the old file stays as it was, nothing else',
    async ({ call, endsWith }) => {
      faults.now = { call, endsWith, error: EIO(call) };
      await onApp(uploadRoutes, async (port, root, seen) => {
        mkdirSync(join(root, 'uploads'));
        writeFileSync(join(root, 'uploads/report.txt'), 'version 1');
        const res = await upload(port, '/replace', [filePart('doc', 'report.txt', 'version 2')]);
        expectHidden(res, root);
        expect(failure(seen).cause.code).toBe('EIO');
        expect(readFileSync(join(root, 'uploads/report.txt'), 'utf8')).toBe('version 1');
        // A kept link, if one was made, goes after the answer.
        expect(await until(() => filesUnder(root).length === 1)).toBe(true);
        expect(filesUnder(root)).toEqual(['uploads/report.txt']);
      });
    },
  );

  it('an error that is no OS error (a TypeError naming the path): wrapped the same way', async () => {
    const bug = (path: string) => new TypeError(`cannot open ${path}`);
    faults.now = { call: 'open', endsWith: '.part', error: bug };
    await onApp(uploadRoutes, async (port, root, seen) => {
      const res = await upload(port, '/up', [filePart('doc', 'a.txt')]);
      expectHidden(res, root);
      const error = failure(seen);
      expect(error.cause).toBeInstanceOf(TypeError);
      expect(entriesUnder(root)).toEqual([]);
    });
  });

  it("Express's default handler (development: it sends the stack) shows no path either", async () => {
    faults.now = { call: 'open', endsWith: '.part', error: EACCES('open') };
    const dir = tempRoot();
    const app = express();
    uploadRoutes(dir.root, app);
    const served = await serve(app);
    try {
      const res = await upload(served.port, '/up', [filePart('doc', 'a.txt')]);
      expectHidden(res, dir.root);
      expect(res.text).toContain('PathgateStorageError: the file could not be stored');
      expect(res.text).not.toContain('EACCES');
    } finally {
      await served.close();
      dir.remove();
    }
  });

  it("a removal that fails (multer's abort after a 413): its error in storageErrors is wrapped too", async () => {
    faults.now = { call: 'unlink', endsWith: '/stuck.txt', error: EIO('unlink') };
    await onApp(uploadRoutes, async (port, root, seen) => {
      const res = await upload(port, '/up', [
        filePart('doc', 'stuck.txt', 'stored first'),
        filePart('doc', 'big.bin', 'x'.repeat(5000)),
      ]);
      expect(res.status).toBe(413);
      expect(res.text).not.toContain(root);
      expect(seen).toHaveLength(1);
      const [removal] = (seen[0] as { storageErrors: unknown[] }).storageErrors as [
        PathgateStorageError & { cause: NodeJS.ErrnoException },
      ];
      expect(removal).toBeInstanceOf(PathgateStorageError);
      expect(removal).toMatchObject({ code: STORAGE_CODES.FAILED, status: 500, expose: false });
      expect(removal.message).not.toContain(root);
      expect(removal.cause.code).toBe('EIO');
    });
  });
});

describe('an OS error the storage maps: unchanged', () => {
  const full = osError('ENOSPC', 'open', 'no space left on device');

  it('ENOSPC creating the temporary file: 507 PATHGATE_NO_SPACE, exposed, nothing left', async () => {
    faults.now = { call: 'open', endsWith: '.part', error: full };
    await onApp(uploadRoutes, async (port, root, seen) => {
      const res = await upload(port, '/up', [filePart('doc', 'a.txt')]);
      expect(res.json).toEqual({
        status: 507,
        code: STORAGE_CODES.NO_SPACE,
        message: 'no space left to store the file',
      });
      expect(seen).toHaveLength(1);
      expect(seen[0]).toBeInstanceOf(PathgateStorageError);
      expect(seen[0]).toMatchObject({ status: 507, expose: true });
      expect(entriesUnder(root)).toEqual([]);
    });
  });

  it('keeps the OS error it maps as cause, for logs', async () => {
    faults.now = { call: 'open', endsWith: '.part', error: full };
    await onApp(uploadRoutes, async (port, _root, seen) => {
      expect((await upload(port, '/up', [filePart('doc', 'a.txt')])).status).toBe(507);
      expect(seen[0]).toMatchObject({ cause: { code: 'ENOSPC' } });
    });
  });
});
