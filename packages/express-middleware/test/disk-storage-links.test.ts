import { readdirSync } from 'node:fs';
import express from 'express';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { linkCase, linkSandbox } from '../../core/test/link-sandbox.js';
import { pathgate } from '../src/index.js';
import { countingErrorHandler, filePart, type Served, serve, upload } from './helpers.js';

// The safe disk storage with `resolve: resolveSymlinks`, on random trees of
// folders, files and links (core's link-tree.ts) under a root that is itself
// a link: an upload is stored only when the reference allows its name, at
// exactly the reference's path, and a refused one stores nothing, never a 500.

const sandbox = linkSandbox('pathgate-disk-links-');
const { base, realRoot } = sandbox;
let served: Served | undefined;

beforeAll(async () => {
  const gate = pathgate({ policy: sandbox.policy });
  const app = express();
  app.post(
    '/upload',
    gate.write({ file: 'f', under: 'uploads' }),
    gate.multer().single('f'),
    (req, res) => res.status(201).json({ path: req.file?.pathgatePath }),
  );
  // Errors as JSON with their status: a 500 would show as one.
  app.use(countingErrorHandler().handler);
  served = await serve(app);
});

afterAll(async () => {
  await served?.close();
  sandbox.remove();
});

/** Every regular file below `dir`, links not followed. */
function filesBelow(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return filesBelow(path);
    return entry.isFile() ? [path] : [];
  });
}

it('stores an upload through links only where the rules allow its real path', async () => {
  await fc.assert(
    fc.asyncProperty(linkCase, async ([shape, sent]) => {
      for (const name of sandbox.build(shape, sent)) {
        const before = new Set(filesBelow(base));
        const got = await upload(served?.port ?? 0, '/upload', [filePart('f', name)]);
        const added = filesBelow(base).filter((file) => !before.has(file));
        const want = sandbox.expected(`${realRoot}/uploads/${name}`, 'write');
        expect(got.status, `${name}: ${got.text}`).toBeLessThan(500);
        if (got.status !== 201) {
          expect({ name, added }).toEqual({ name, added: [] });
          continue;
        }
        const path = 'path' in want ? want.path : undefined;
        expect({ name, outcome: want.outcome, added, answer: got.json }).toEqual({
          name,
          outcome: 'allow',
          added: [path],
          answer: { path },
        });
      }
    }),
    { numRuns: 40 },
  );
}, 30_000);
