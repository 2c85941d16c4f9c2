import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Express, RequestHandler } from 'express';
import { describe, expect, it, vi } from 'vitest';
import { pathgate, STORAGE_CODES } from '../src/index.js';
import { filePart, filesUnder, onApp, request, sleep, upload } from './helpers.js';

// The real storage, walk, pipe and multer, on a disk that is full (see withFullDisk).
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('../../../test/disk-full.js')).withFullDisk(importOriginal),
);

const answer: RequestHandler = (req, res) => {
  res.json({ files: ((req.files ?? []) as Express.Multer.File[]).map((f) => f.originalname) });
};

/** POST /up: any file of field doc, below uploads/, to the safe disk storage. */
const withUploads = (root: string, app: Express) => {
  const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
  const replacing = gate.multer({ storage: gate.diskStorage({ overwrite: true }) });
  app.post('/up', gate.write({ file: 'doc', under: 'uploads' }), gate.multer().any(), answer);
  app.post('/replace', gate.write({ file: 'doc', under: 'uploads' }), replacing.any(), answer);
};

describe('the safe disk storage on a full disk', () => {
  it('answers 507 PATHGATE_NO_SPACE, keeps no file of the request, and goes on serving', async () => {
    await onApp(withUploads, async (port, root) => {
      const res = await upload(port, '/up', [
        filePart('doc', 'first.txt', 'stored first'),
        filePart('doc', 'disk-full/big.bin', Buffer.alloc(256 * 1024, 1)),
      ]);
      expect(res.status).toBe(507);
      expect(res.json).toEqual({
        status: 507,
        code: STORAGE_CODES.NO_SPACE,
        message: 'no space left to store the file',
      });
      expect(res.text).not.toContain(root);
      await sleep(100);
      // The file stored before it is removed by multer's abort: nothing of the request stays.
      expect(filesUnder(root)).toEqual([]);
      const next = await upload(port, '/up', [filePart('doc', 'later.txt', 'fits')]);
      expect(next.json).toEqual({ files: ['later.txt'] });
      expect(filesUnder(root)).toEqual(['uploads/later.txt']);
      expect((await request(port, 'GET', '/nothing')).status).toBe(404);
    });
  });

  // What is at the target is checked before the temporary file is written: the full disk is never reached.
  it.each([
    ['/up', 'a file', (target: string) => writeFileSync(target, 'OLD'), 409, STORAGE_CODES.EXISTS],
    [
      '/replace',
      'a symlink',
      (target: string) => symlinkSync('OLD', target),
      403,
      STORAGE_CODES.SYMLINK,
    ],
  ])(
    '%s: %s at the target is refused as such, not as a full disk',
    async (route, _, make, status, code) => {
      await onApp(withUploads, async (port, root) => {
        const target = join(root, 'uploads', 'disk-full', 'taken.txt');
        mkdirSync(join(target, '..'), { recursive: true });
        make(target);
        const res = await upload(port, route, [filePart('doc', 'disk-full/taken.txt', 'NEW')]);
        expect([res.status, res.json]).toMatchObject([status, { code }]);
        expect(readdirSync(join(target, '..'))).toEqual(['taken.txt']);
      });
    },
  );

  it('a folder the walk made before the disk refused the next one is removed', async () => {
    await onApp(withUploads, async (port, root) => {
      const res = await upload(port, '/up', [filePart('doc', 'made/no-inodes/x.bin', 'x')]);
      expect([res.status, res.json]).toMatchObject([507, { code: STORAGE_CODES.NO_SPACE }]);
      expect(readdirSync(root, { recursive: true })).toEqual([]);
    });
  });
});
