import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { seedSandbox } from '../examples/shared/sandbox.js';
import { EXAMPLES, postFiles, send } from './examples.js';

// A sandbox root named in NFD (as macOS may write it): pathgate normalizes
// the root to NFC, on Linux another folder. Here that NFC twin is a link
// out, so every path pathgate checked lay outside: the Express example's
// storage wrote an upload there (201). The examples must refuse such a
// root before they listen, whether its real path holds the NFD name or
// only the name it is given by (a link to the sandbox).

const NFD = 'Cafe\u0301';
const NFC = 'Caf\u00e9';

describe.each(EXAMPLES)('the $name example, its root named in NFD', (example) => {
  let base = '';
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it.each([
    ['its real path', NFD],
    ['a link to it', 'sandbox'],
  ])(
    'refuses to start where the root is given by %s in NFD, its NFC twin a link out, and writes nothing there',
    async (_by, real) => {
      base = mkdtempSync(join(tmpdir(), 'pathgate-nfd-root-'));
      mkdirSync(join(base, real));
      seedSandbox(join(base, real));
      if (real !== NFD) symlinkSync(join(base, real), join(base, NFD));
      mkdirSync(join(base, 'outside', 'uploads'), { recursive: true });
      symlinkSync(join(base, 'outside'), join(base, NFC));
      // Express's listen throws at once, Fastify's rejects.
      const started = Promise.resolve().then(() => example.listen(join(base, NFD), 0));
      // Started all the same, the server must store nothing outside before it closes.
      const stored = started.then(async (server) => {
        const port = Number(new URL(server.url).port);
        await send(port, postFiles('/api/upload', ['file', 'escaped.txt', 'x'])).finally(() =>
          server.close(),
        );
      });
      await expect(stored).rejects.toThrow(/not in Unicode NFC/);
      expect(readdirSync(join(base, 'outside', 'uploads'))).toEqual([]);
    },
  );
});
