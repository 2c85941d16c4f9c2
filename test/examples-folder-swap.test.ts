import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXAMPLES, postFiles, type Running, send, start } from './examples.js';
import { eventually } from './fault-clients.js';
import { hideProc, swapBeforeOpen } from './folder-swap.js';

// A folder on the way to a file, swapped for a link to a folder outside the
// sandbox after pathgate checked the path and before the server opens it (see
// swapBeforeOpen). On Linux the server reads back where the open file really
// is (/proc/self/fd) and refuses it; elsewhere it cannot, and the READMEs say so.
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('./folder-swap.js')).withFolderSwap(importOriginal),
);

const linux = process.platform === 'linux';
const descriptors = () => readdirSync('/proc/self/fd').length;
const OUTSIDE_BYTES = 'outside the sandbox: never to reach a client';
const REFUSED = { statusCode: 404, error: 'Not Found', message: 'no such file or folder' };

describe.each(EXAMPLES)(
  'the $name example, a folder swapped for a link after the check',
  (example) => {
    let app: Running;
    let outside: string;
    beforeAll(async () => {
      app = await start(example);
      outside = mkdtempSync(join(tmpdir(), 'pathgate-outside-'));
      writeFileSync(join(outside, 'guide.md'), OUTSIDE_BYTES);
    });
    afterAll(async () => {
      hideProc(false);
      await app.stop();
      rmSync(outside, { recursive: true, force: true });
    });

    /** `public/<name>/guide.md`, checked while `public/<name>` is a real folder. */
    const inside = (name: string) => {
      mkdirSync(join(app.root, 'public', name));
      writeFileSync(join(app.root, 'public', name, 'guide.md'), 'inside');
      return join(app.root, 'public', name);
    };

    it.skipIf(!linux)(
      'a download through it is a 404 naming no path, never the outside file',
      async () => {
        const folder = inside('docs-swapped');
        const before = descriptors();
        swapBeforeOpen(folder, outside);
        const got = await send(app.port, { path: '/files/public/docs-swapped/guide.md' });
        expect(lstatSync(folder).isSymbolicLink()).toBe(true); // the swap did happen
        expect(got.text).not.toContain(OUTSIDE_BYTES);
        expect(got.status).toBe(404);
        expect(JSON.parse(got.text)).toEqual(REFUSED);
        // The refused file was closed, not left to the garbage collector.
        expect(await eventually(() => descriptors() === before)).toBe(true);
      },
    );

    it('a download with no folder swapped is served, also where /proc cannot be read', async () => {
      inside('docs-kept');
      for (const hidden of [false, true]) {
        hideProc(hidden);
        const got = await send(app.port, { path: '/files/public/docs-kept/guide.md' });
        expect([got.status, got.text]).toEqual([200, 'inside']);
      }
      hideProc(false);
    });
  },
);

// Express stores uploads with @pathgate/express's own storage, not the example's code.
describe('the fastify example, an upload folder swapped for a link after the check', () => {
  let app: Running;
  let outside: string;
  beforeAll(async () => {
    app = await start(EXAMPLES[0]);
    outside = mkdtempSync(join(tmpdir(), 'pathgate-outside-'));
  });
  afterAll(async () => {
    await app.stop();
    rmSync(outside, { recursive: true, force: true });
  });

  it.skipIf(!linux)('is a 404 naming no path, and not one byte is written outside', async () => {
    const folder = join(app.root, 'uploads', 'inbox');
    mkdirSync(folder);
    swapBeforeOpen(folder, outside);
    const got = await send(app.port, postFiles('/api/upload', ['file', 'inbox/new.txt', 'data']));
    expect(lstatSync(folder).isSymbolicLink()).toBe(true);
    expect(got.status).toBe(404);
    expect(JSON.parse(got.text)).toEqual(REFUSED);
    expect(readdirSync(outside)).toEqual([]);
  });
});
