import { once } from 'node:events';
import type * as fsPromises from 'node:fs/promises';
import net from 'node:net';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { describe, expect, it, vi } from 'vitest';
import { pathgate } from '../src/index.js';
import { BOUNDARY, entriesUnder, MULTIPART, onApp, until } from './helpers.js';

// The connection is cut while the storage gives a finished file its name
// (link or rename, run in the thread pool), or just after, while it removes
// the temporary name a link leaves: multer's abort cleanup runs before the
// storage hears of it, and marks the file removed. With the temporary name
// still on the file, the named one stayed. Seen in loaded runs of
// multer-raw-parts ('inside the second file', /replace then /many); made certain here.
type Step = 'naming' | 'unlinking the temporary name';
const cutting = vi.hoisted(() => ({
  step: undefined as Step | undefined,
  cut: undefined as (() => Promise<void>) | undefined,
}));

vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  const thenCut =
    <A extends [unknown, ...unknown[]]>(step: Step, call: (...args: A) => Promise<void>) =>
    async (...args: A) => {
      const armed = cutting.step === step && String(args[0]).endsWith('.part');
      const after = armed ? cutting.cut : undefined;
      if (armed) cutting.step = undefined;
      await call(...args);
      await after?.();
    };
  return {
    ...fs,
    link: thenCut('naming', fs.link),
    rename: thenCut('naming', fs.rename),
    unlink: thenCut('unlinking the temporary name', fs.unlink),
  };
});

const head = (name: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="docs"; filename="${name}"\r\n\r\n`;

describe('a connection cut while the first file is given its name', () => {
  it.each([
    [false, 'naming'],
    [true, 'naming'],
    [false, 'unlinking the temporary name'],
  ] as const)(
    'overwrite %s, cut after %s: the file named is removed too',
    async (overwrite, step) => {
      let failures = 0;
      await onApp(
        (root, app) => {
          const gate = pathgate({ root, fs: ['rw:**'], log: () => {} });
          const cutAfterNaming: RequestHandler = (req, _res, next) => {
            cutting.step = step;
            cutting.cut = async () => {
              const closed = new Promise((resolve) => req.once('close', resolve));
              // The server's end: a socket paused by busboy would not see the client leave.
              req.socket.destroy();
              await closed;
            };
            next();
          };
          const upload = gate.multer({ storage: gate.diskStorage({ overwrite }) }).array('docs');
          app.post('/up', cutAfterNaming, gate.write({ file: 'docs' }), upload);
          const counted: ErrorRequestHandler = (error, _req, _res, next) => {
            failures++;
            next(error);
          };
          app.use(counted);
        },
        async (port, root) => {
          const socket = net.connect(port, '127.0.0.1');
          socket.on('error', () => {});
          await once(socket, 'connect');
          socket.write(
            `POST /up HTTP/1.1\r\nhost: x\r\ncontent-type: ${MULTIPART}\r\ncontent-length: 100000\r\n\r\n${head('first.txt')}1\r\n${head('second.txt')}22`,
          );
          expect(await until(() => failures === 1)).toBe(true);
          await until(() => entriesUnder(root).length === 0, 500);
          expect(entriesUnder(root)).toEqual([]);
          socket.destroy();
        },
      );
    },
  );
});
