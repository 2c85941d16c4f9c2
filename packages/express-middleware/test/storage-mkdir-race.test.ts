import { mkdirSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { pathgate } from '../src/index.js';
import { entriesUnder, filePart, multipart, multipartPost, onApp, until } from './helpers.js';

// Two uploads make the same new folder at once: one's mkdir makes it, the
// other's finds it there (EEXIST). The thread pool may report the second
// first, before the maker held the folder: the second then took it for one
// there before, never its own to remove, and once both failed, the maker
// first, the empty folder stayed. The maker's report is held here until the
// other's mkdir finds the folder (or, should that wait for the maker, a moment).
const made = vi.hoisted(() => ({ armed: false, held: false, found: () => {} }));

vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  const atNew = (path: unknown) => String(path).endsWith('/new');
  const mkdir = (async (path, options) => {
    const maker = made.armed && atNew(path);
    made.armed &&= !maker;
    try {
      const result = await fs.mkdir(path, options);
      if (maker) await madeLate();
      return result;
    } catch (error) {
      // Let the maker go once the other's continuation (its hold) has run.
      if (atNew(path)) setTimeout(made.found);
      throw error;
    }
  }) as typeof fs.mkdir;
  const madeLate = () =>
    new Promise<void>((resolve) => {
      made.held = true;
      made.found = resolve;
      setTimeout(resolve, 300);
    });
  return { ...fs, mkdir };
});

/** A request storing `name`, then, once `fail()` is called, a denied part: a 403 after its file was stored. */
function failingLater(port: number, name: string) {
  const parts = [filePart('f', name, name), filePart('f', '../denied', 'x')];
  const body = multipart(parts);
  const firstEnds = multipart(parts.slice(0, 1)).length - '--\r\n'.length;
  const req = multipartPost(port, '/up', body.length);
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => readAnswer(res).then(resolve, reject));
    req.on('error', reject);
  });
  req.write(body.subarray(0, firstEnds));
  return {
    fail: async () => {
      req.end(body.subarray(firstEnds));
      return (await answer).status;
    },
  };
}

describe('two failed uploads that made the same new folder at once', () => {
  it('leave no folder, whichever of them made it', async () => {
    await onApp(
      (root, app) => {
        const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
        const docs = gate.write({ file: 'f', under: 'uploads' });
        app.post('/up', docs, gate.multer().any(), (_req, res) => {
          res.status(201).end();
        });
      },
      async (port, root) => {
        const uploads = join(root, 'uploads');
        mkdirSync(uploads);
        made.armed = true;
        const maker = failingLater(port, 'new/a.txt');
        expect(await until(() => made.held)).toBe(true);
        const other = failingLater(port, 'new/b.txt');
        const stored = () => entriesUnder(uploads).join() === 'new/,new/a.txt,new/b.txt';
        expect(await until(stored)).toBe(true);
        expect(await maker.fail()).toBe(403);
        expect(await other.fail()).toBe(403);
        expect(entriesUnder(uploads)).toEqual([]);
      },
    );
  });
});
