import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import type { RequestHandler } from 'express';
import { describe, expect, it } from 'vitest';
import { type PathgateOptions, pathgate } from '../src/index.js';
import { filePart, onApp, request, sleep, until, upload } from './helpers.js';

// Claims of this package's README that no other test pins, one `it` each,
// under the README section that makes them.

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The message of the TypeError that `pathgate(options)` throws. */
function thrownBy(options: unknown): string {
  try {
    pathgate(options as PathgateOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as Error).message;
  }
  throw new Error('expected a TypeError');
}

describe('README, "Options"', () => {
  it('the messages it quotes are the ones thrown, whole', () => {
    const quoted = [
      thrownBy({ fs: [], roots: '/srv' }),
      thrownBy({ root: 'srv', fs: [] }),
      thrownBy({ root: '/srv', fs: ['wr:./x'] }),
    ];
    for (const message of quoted) expect(README).toContain(`\`${message}\``);
  });
});

describe('README, "Example"', () => {
  it('a missing root is a 500 naming no path, not exposed; the OS error, path and all, is its cause', async () => {
    await onApp(
      (root, app) => {
        const gate = pathgate({ root: join(root, 'missing'), fs: ['rw:./uploads/**'] });
        const up = gate.multer().single('doc');
        app.post('/up', gate.write({ file: 'doc', under: 'uploads' }), up);
      },
      async (port, root, seen) => {
        const res = await upload(port, '/up', [filePart('doc', 'a.txt')]);
        expect(res.json).toEqual({
          status: 500,
          code: 'PATHGATE_STORAGE_FAILED',
          message: 'the file could not be stored',
        });
        expect(seen).toMatchObject([
          {
            expose: false,
            cause: { code: 'ENOENT', message: expect.stringContaining(join(root, 'missing')) },
          },
        ]);
      },
    );
  });
});

describe('README, the options table', () => {
  it("with errors: 'next', onDeny's return value is ignored: the error goes to next(err)", async () => {
    await onApp(
      (root, app) => {
        const gate = pathgate({ root, fs: [], errors: 'next', onDeny: () => ({ custom: true }) });
        app.get('/q', gate.read({ query: 'path' }), (_req, res) => res.send('ran'));
      },
      async (port) => {
        const res = await request(port, 'GET', '/q?path=a');
        expect([res.status, res.json]).toEqual([
          403,
          {
            status: 403,
            code: 'PATHGATE_DENIED',
            message: 'query.path: path denied (path-not-in-allowlist)',
          },
        ]);
      },
    );
  });
});

describe('README, "Express 5 facts"', () => {
  it("a host spec checks what req.get('host') reads; req.host behind a trusted proxy reads X-Forwarded-Host's first entry, which no spec checks", async () => {
    await onApp(
      (root, app) => {
        const gate = pathgate({ root, fs: ['*'] });
        app.set('trust proxy', true);
        const answer: RequestHandler = (req, res) => {
          const checked = req.pathgate?.headers.host;
          res.json({ get: req.get('host'), hostname: req.hostname, host: req.host, checked });
        };
        app.get('/host', gate.read({ headers: 'host' }), answer);
        app.get('/both', gate.read({ headers: 'host' }, { headers: 'x-forwarded-host' }), answer);
        // With dot: true, a value that starts with `..` and goes on is a name, not a climb.
        const dotted = pathgate({ root, fs: ['*'], dot: true });
        app.get(
          '/dotted',
          dotted.read({ headers: 'host' }, { headers: 'x-forwarded-host' }),
          answer,
        );
      },
      async (port, root) => {
        const headers = { host: 'files.example', 'x-forwarded-host': 'other.example' };
        expect((await request(port, 'GET', '/host', { headers })).json).toEqual({
          get: 'files.example',
          hostname: 'other.example',
          host: 'other.example',
          checked: join(root, 'files.example'),
        });
        const forged = { ...headers, 'x-forwarded-host': '..' };
        expect((await request(port, 'GET', '/host', { headers: forged })).status).toBe(200);
        expect((await request(port, 'GET', '/both', { headers: forged })).status).toBe(403);
        // The declared X-Forwarded-Host is checked as one text, not as its entries.
        expect((await request(port, 'GET', '/dotted', { headers: forged })).status).toBe(403);
        const listed = { ...headers, 'x-forwarded-host': '.., a' };
        expect((await request(port, 'GET', '/dotted', { headers: listed })).json).toMatchObject({
          host: '..',
          checked: join(root, 'files.example'),
        });
        expect(README).toContain("X-Forwarded-Host's first entry instead, which no spec checks");
      },
    );
  });
});

describe('README, "Uploads with multer"', () => {
  // multer 2.5 drains the rest of a body before it calls back with its
  // error; a denied name is answered while the body still arrives.
  it('an upload over limits.fileSize is answered 413 once the body has all arrived, not at the limit', async () => {
    await onApp(
      (root, app) => {
        const gate = pathgate({ root, fs: ['rw:./uploads/**'] });
        const up = gate.multer({ limits: { fileSize: 1000 } }).single('f');
        app.post('/up', gate.write({ file: 'f', under: 'uploads' }), up);
      },
      async (port) => {
        const boundary = 'pathgate-limit';
        const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
        const rest = Buffer.alloc(200_000, 'a');
        const head = Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="a.bin"\r\n\r\n`,
        );
        const length = head.length + 100_000 + rest.length + tail.length;
        const socket = net.connect(port, '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk: Buffer) => {
          answer += chunk.toString('latin1');
        });
        socket.write(
          `POST /up HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${length}\r\n\r\n`,
        );
        try {
          socket.write(Buffer.concat([head, Buffer.alloc(100_000, 'a')]));
          await sleep(500);
          expect(answer).toBe('');
          socket.write(Buffer.concat([rest, tail]));
          expect(await until(() => answer.includes('LIMIT_FILE_SIZE'))).toBe(true);
          expect(answer).toMatch(/^HTTP\/1\.1 413 /);
        } finally {
          socket.destroy();
        }
      },
    );
  });
});
