import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { heldUpload, STREAMED_AT_MOST } from '../../../test/held-upload.js';
import pathgate from '../src/index.js';
import { afterTest, denied, filesIn, listen, newApp, sandbox } from './helpers.js';

// A 50 MB upload whose filename is denied: the 403 arrives promptly, nothing
// is written, the server does not buffer the upload (RSS stays flat) and the
// connection closes instead of hanging. The client runs in its own process,
// so the RSS sampled here is the server's.

const MB = 1024 * 1024;
const SIZE = 50 * MB;
const CLIENT = fileURLToPath(new URL('./fixtures/upload-client.mjs', import.meta.url));
const WRITE = { mode: 'write', paths: [{ file: true, under: 'uploads' }] } as const;

interface ClientResult {
  status?: number;
  connection?: string | null;
  body?: unknown;
  error?: string;
  ms: number;
}

function upload(
  kind: 'fetch' | 'stream' | 'chunked',
  url: string,
  filename: string,
): Promise<ClientResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [CLIENT, kind, url, filename, String(SIZE)], (error, stdout) => {
      if (error) reject(error);
      else resolve(JSON.parse(stdout) as ClientResult);
    });
  });
}

/** Runs `task` while sampling this process's RSS; returns the peak growth over the start. */
async function rssGrowth<T>(task: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  try {
    const result = await task();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, growth: peak - base };
  } finally {
    clearInterval(timer);
  }
}

async function connectionsDrain(app: FastifyInstance, withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const open = await new Promise<number>((resolve, reject) =>
      app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
    if (open === 0 || Date.now() > deadline) return open;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function store(part: MultipartFile): Promise<void> {
  const target = part.pathgatePath as string;
  const temp = `${target}.partial`;
  await pipeline(part.file, createWriteStream(temp, { flags: 'wx' }));
  await rename(temp, target);
}

async function server() {
  const root = sandbox();
  const app = newApp();
  const calls = { count: 0 };
  // From the request's arrival to the answer, as the server saw it.
  const served: number[] = [];
  app.addHook('onResponse', (_request, reply, done) => {
    served.push(reply.elapsedTime);
    done();
  });
  const limits = { fileSize: 200 * MB };
  await app.register(pathgate, { root, fs: ['rw:./uploads/*.bin', './public/**'] });
  await app.register(async (scope) => {
    await scope.register(multipart, { limits });
    scope.post('/file', { config: { pathgate: WRITE } }, async (request) => {
      calls.count++;
      await store((await request.file()) as MultipartFile);
      return { ok: true };
    });
  });
  await app.register(
    async (scope) => {
      await scope.register(multipart, { limits, attachFieldsToBody: true });
      scope.post('/attach', { config: { pathgate: WRITE } }, async () => {
        calls.count++;
        return { ok: true };
      });
      const into = { mode: 'write', paths: [{ params: 'folder' }, WRITE.paths[0]] } as const;
      scope.post('/into/:folder', { config: { pathgate: into } }, async () => {
        calls.count++;
        return { ok: true };
      });
    },
    { prefix: '/a' },
  );
  const port = await listen(app);
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;
  return { root, app, calls, served, url };
}

const figures: string[] = [];

describe('a denied 50 MB upload', () => {
  const CASES = [
    ['fetch + FormData', 'fetch', '/file', 'virus.exe', 'file *'],
    ['node:http stream', 'stream', '/file', 'virus.exe', 'file *'],
    ['node:http chunked stream', 'chunked', '/file', 'virus.exe', 'file *'],
    ['attachFieldsToBody, fetch', 'fetch', '/a/attach', 'virus.exe', 'file *'],
    ['attachFieldsToBody, stream', 'stream', '/a/attach', 'virus.exe', 'file *'],
    ['attachFieldsToBody, chunked', 'chunked', '/a/attach', 'virus.exe', 'file *'],
    [
      'a denied param on an attach route',
      'stream',
      '/a/into/..%2F..%2Fetc',
      'ok.bin',
      'params.folder',
    ],
    [
      'a denied param on an attach route, chunked',
      'chunked',
      '/a/into/..%2F..%2Fetc',
      'ok.bin',
      'params.folder',
    ],
  ] as const;

  it.each(CASES)(
    '%s: a prompt 403, nothing written, flat RSS, no hang',
    async (name, kind, path, filename, label) => {
      const { root, app, calls, served, url } = await server();
      const { result, growth } = await rssGrowth(() => upload(kind, url(path), filename));
      const rss = `RSS +${(growth / MB).toFixed(1)} MB`;
      const answered = `server answered in ${served[0]?.toFixed(0)} ms`;
      figures.push(`${name}: client got the 403 after ${result.ms} ms (${answered}), ${rss}`);
      expect(result.error).toBeUndefined();
      expect(result.status).toBe(403);
      expect(result.body).toEqual(denied(label, 'path-not-in-allowlist'));
      expect(result.connection).toBe('close');
      expect(result.ms).toBeLessThan(5000);
      expect(growth).toBeLessThan(40 * MB);
      expect(calls.count).toBe(path === '/file' ? 1 : 0);
      expect(filesIn(root)).toEqual([]);
      expect(await connectionsDrain(app, 3000)).toBe(0);
    },
  );
});

/** A server whose handler holds the file stream until `release` is called. */
async function holdingServer() {
  const root = sandbox();
  const app = newApp();
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const held = { count: 0 };
  await app.register(pathgate, { root, fs: ['rw:./uploads/*.bin'] });
  await app.register(multipart, { limits: { fileSize: 200 * MB } });
  app.post('/file', { config: { pathgate: WRITE } }, async (request) => {
    const part = (await request.file()) as MultipartFile;
    held.count++;
    await released;
    await store(part);
    return { ok: true };
  });
  return { root, held, release, port: await listen(app) };
}

describe('an allowed 50 MB upload', () => {
  it('streams to its pathgatePath intact, without buffering', async () => {
    const { root, held, release, port } = await holdingServer();
    const upload = await heldUpload(port, '/file', {
      field: 'upload',
      filename: 'big.bin',
      size: SIZE,
    });
    // A failed assertion must not leave the handler holding the server open.
    afterTest(() => {
      upload.abort();
      release();
    });
    figures.push(
      `allowed 50 MB, handler holding the stream: the server took ${(upload.taken / MB).toFixed(1)} MB`,
    );
    expect(upload.taken).toBeLessThan(STREAMED_AT_MOST);
    expect(held.count).toBe(1);
    release();
    expect(await upload.finish()).toMatchObject({ status: 200, json: { ok: true } });
    expect(filesIn(root)).toEqual(['uploads/big.bin']);
    const hash = createHash('sha256');
    await pipeline(createReadStream(`${root}/uploads/big.bin`), hash);
    const expected = createHash('sha256').update(Buffer.alloc(SIZE, 0x61)).digest('hex');
    expect(hash.digest('hex')).toBe(expected);
  });

  it('prints the figures', () => {
    console.log(figures.join('\n'));
  });
});
