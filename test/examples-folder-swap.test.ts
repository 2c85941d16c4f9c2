import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXAMPLES, postFiles, type Running, send, start } from './examples.js';
import { eventually } from './fault-clients.js';
import { hideProc, moveBeforeName, removeBeforeOpen, swapBeforeOpen } from './folder-swap.js';

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

  it('a folder moved away before the upload is named: a 404, the file named nowhere', async () => {
    const folder = join(app.root, 'uploads', 'moving');
    mkdirSync(folder);
    const moved = join(outside, 'moved');
    moveBeforeName(folder, moved, outside);
    const got = await send(app.port, postFiles('/api/upload', ['file', 'moving/new.txt', 'data']));
    expect(got.status).toBe(404);
    expect(JSON.parse(got.text)).toEqual(REFUSED);
    expect(readdirSync(outside)).toEqual(['moved']);
    // Its temporary file stays where the folder went, under its dot name.
    expect(readdirSync(moved).filter((name) => !name.startsWith('.upload-'))).toEqual([]);
  });

  // Failed uploads beside this one, each taking back the new folder they share.
  it('a new folder removed three times before the file is created: the upload is stored', async () => {
    const folder = join(app.root, 'uploads', 'shared-new');
    removeBeforeOpen(folder, 3);
    const got = await send(
      app.port,
      postFiles('/api/upload', ['file', 'shared-new/x.txt', 'kept']),
    );
    expect(got.status).toBe(201);
    expect(readdirSync(folder)).toEqual(['x.txt']);
  });

  it('a new folder removed every time: a 404, not a loop, and nothing stored', async () => {
    const folder = join(app.root, 'uploads', 'always-gone');
    removeBeforeOpen(folder, 1000);
    const got = await send(
      app.port,
      postFiles('/api/upload', ['file', 'always-gone/x.txt', 'lost']),
    );
    removeBeforeOpen(folder, 0);
    expect(got.status).toBe(404);
    expect(readdirSync(join(app.root, 'uploads'))).not.toContain('always-gone');
  });
});
