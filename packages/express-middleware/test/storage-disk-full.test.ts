import { readdirSync } from 'node:fs';
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
  app.post('/up', gate.write({ file: 'doc', under: 'uploads' }), gate.multer().any(), answer);
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

  it('a folder the walk made before the disk refused the next one is removed', async () => {
    await onApp(withUploads, async (port, root) => {
      const res = await upload(port, '/up', [filePart('doc', 'made/no-inodes/x.bin', 'x')]);
      expect([res.status, res.json]).toMatchObject([507, { code: STORAGE_CODES.NO_SPACE }]);
      expect(readdirSync(root, { recursive: true })).toEqual([]);
    });
  });
});
