import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { filesIn } from '../packages/fastify-plugin/test/helpers.js';
import { EXAMPLES, postFiles, send, start } from './examples.js';

// Both examples on a full disk (see withFullDisk): the Fastify one's temp
// sibling and the Express storage's target, each in uploads/disk-full/.
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('./disk-full.js')).withFullDisk(importOriginal),
);

describe.each(EXAMPLES)('the $name example on a full disk', (example) => {
  it('answers 507, keeps no part of the upload, and still stores elsewhere', async () => {
    const app = await start(example);
    try {
      const before = filesIn(app.root);
      const full = await send(
        app.port,
        postFiles('/api/upload', ['file', 'disk-full/big.bin', Buffer.alloc(512 * 1024, 1)]),
      );
      expect(full.status).toBe(507);
      expect(JSON.parse(full.text)).toEqual({
        statusCode: 507,
        error: 'Insufficient Storage',
        message: 'insufficient storage',
      });
      expect(filesIn(app.root)).toEqual(before);
      // Nor the folder it made for the file.
      expect(existsSync(join(app.root, 'uploads', 'disk-full'))).toBe(false);
      const fits = await send(app.port, postFiles('/api/upload', ['file', 'fits.txt', 'fits']));
      expect(JSON.parse(fits.text)).toEqual({ uploaded: 'uploads/fits.txt', size: 4 });
    } finally {
      await app.stop();
    }
  });
});
