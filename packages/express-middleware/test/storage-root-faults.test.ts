import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import express from 'express';
import { describe, expect, it, vi } from 'vitest';
import { pathgate } from '../src/index.js';
import { filePart, tempRoot, upload, withServed } from './helpers.js';

// The sandbox changed under a running server, for real (no mocked fs): the
// root removed, or made a file or a link loop, or its upload folder made a
// file or a link out of it. The app has no error handler: Express's own
// answers, with the error's stack outside production (which names any path
// in the message) and its status text in production. Neither may name the
// root, not even its last segment; the upload is stored nowhere and the
// handler never runs.

interface Fault {
  readonly fault: string;
  /** Changes the sandbox at `root`; `outside` is an empty folder beside it. */
  readonly make: (root: string, outside: string) => void;
  readonly status: number;
}

const replaceRoot = (root: string, by: () => void) => {
  rmSync(root, { recursive: true });
  by();
};

const FAULTS: readonly Fault[] = [
  { fault: 'the root removed', make: (root) => rmSync(root, { recursive: true }), status: 500 },
  {
    fault: 'the root made a file (ENOTDIR)',
    make: (root) => replaceRoot(root, () => writeFileSync(root, 'x')),
    status: 403,
  },
  {
    fault: 'the root made a link to itself (ELOOP)',
    make: (root) => replaceRoot(root, () => symlinkSync(root, root)),
    status: 403,
  },
  {
    fault: 'uploads/ made a file',
    make: (root) => writeFileSync(join(root, 'uploads'), 'x'),
    status: 403,
  },
  {
    fault: 'uploads/ made a link out of the root',
    make: (root, outside) => symlinkSync(outside, join(root, 'uploads')),
    status: 403,
  },
];

describe.each(['development', 'production'])(
  "the sandbox changed after start, Express's default error handler (%s)",
  (env) => {
    it.each(FAULTS)('$fault: $status, naming no path, nothing stored', async ({ make, status }) => {
      const dir = tempRoot();
      const outside = `${dir.root}-outside`;
      mkdirSync(outside);
      let handled = false;
      const app = express();
      app.set('env', env);
      const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: () => {} });
      const spec = { file: 'doc', under: 'uploads' };
      app.post('/up', gate.write(spec), gate.multer().any(), (_req, res) => {
        handled = true;
        res.status(201).end();
      });
      // finalhandler logs each error outside the test env: the stack, path and all, is for logs.
      const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        await withServed(app, async ({ port }) => {
          make(dir.root, outside);
          const res = await upload(port, '/up', [filePart('doc', 'a.txt', 'content')]);
          expect(res.status).toBe(status);
          const shown = `${res.text}${JSON.stringify(res.headers)}`;
          expect(shown).not.toContain(basename(dir.root));
        });
        expect(handled).toBe(false);
        expect(readdirSync(outside)).toEqual([]);
        expect(existsSync(join(dir.root, 'uploads', 'a.txt'))).toBe(false);
      } finally {
        logged.mockRestore();
        rmSync(dir.root, { recursive: true, force: true });
        rmSync(outside, { recursive: true, force: true });
      }
    });
  },
);
