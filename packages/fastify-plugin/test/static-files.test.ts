import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import fastifyStatic from '@fastify/static';
import { checkFs, PermissionPolicy } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import * as served from '../../../test/served-files.js';
import pathgate from '../src/index.js';
import { listen, newApp, request, sandbox } from './helpers.js';

// The README's recipe for @fastify/static, as written: a guarded wildcard
// route hands the checked path to `reply.sendFile(basename, dirname, …)`.

/** The README as one line of prose: a quote may wrap. */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');

/** The app, @fastify/static registered with `options` (its own, beside `serve: false`). */
async function serve(options: { list?: boolean; preCompressed?: boolean } = {}) {
  const root = sandbox();
  served.writeServedFiles(root);
  const app = newApp();
  await app.register(pathgate, { root, fs: served.SERVED_RULES });
  await app.register(fastifyStatic, { root, serve: false, ...options });
  const read = { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } } as const;
  app.get('/files/*', read, (request, reply) => {
    const path = request.pathgate?.params['*'] as string;
    return reply.sendFile(basename(path), dirname(path), { index: false });
  });
  return { root, port: await listen(app) };
}

describe("README: @fastify/static's sendFile with the checked path", () => {
  it('gives the call this route makes', () => {
    expect(README).toContain('`reply.sendFile(basename(path), dirname(path), { index: false })`');
  });

  it('serves the file the check saw, its name as written', async () => {
    const { port } = await serve();
    for (const [path, text] of served.SERVED) {
      const answer = await request(port, { path: `/files/${path}` });
      expect([path, answer.status, answer.text]).toEqual([path, 200, text]);
    }
  });

  it('a name holding a backslash: refused by @fastify/static, where Express serves it', async () => {
    const { port } = await serve();
    const answer = await request(port, { path: `/files/${served.BACKSLASH[0]}` });
    expect([answer.status, (answer.json as { code?: string }).code]).toEqual([
      403,
      'FST_STATIC_FORBIDDEN_PATH',
    ]);
  });

  it("a folder the rules allow: a 404, not its index.html, which they don't", async () => {
    const { root, port } = await serve();
    const policy = new PermissionPolicy({ root, permissions: { fs: served.SERVED_RULES } });
    expect(checkFs(policy, 'public/dir', 'read').outcome).toBe('allow');
    expect(checkFs(policy, 'public/dir/index.html', 'read').outcome).toBe('deny');
    for (const path of served.FOLDER) {
      for (const method of ['GET', 'HEAD']) {
        const answer = await request(port, { method, path: `/files/${path}` });
        expect([method, path, answer.status, answer.text.includes('index')]).toEqual([
          method,
          path,
          404,
          false,
        ]);
      }
    }
  });

  it("a name it cannot read but not missing (a link loop): Fastify's default handler sends the path, for the app's error handler to hide", async () => {
    expect(README).toContain('(a link loop, `EACCES`) is an error whose message names the path');
    const { root, port } = await serve();
    symlinkSync(join(root, 'public/loop'), join(root, 'public/loop'));
    const answer = await request(port, { path: '/files/public/loop' });
    expect([answer.status, (answer.json as { code?: string }).code]).toEqual([500, 'ELOOP']);
    expect(answer.text).toContain(join(root, 'public/loop'));
  });

  it('list and preCompressed read what no check saw: a listing, dotfiles named; a .gz sibling', async () => {
    expect(README).toContain('`list` and `preCompressed` read what no check saw');
    const listing = await serve({ list: true });
    writeFileSync(join(listing.root, 'public/dir/.env'), 'secret');
    const listed = await request(listing.port, { path: '/files/public/dir' });
    expect([listed.status, listed.text.includes('.env')]).toEqual([200, true]);
    const compressed = await serve({ preCompressed: true });
    writeFileSync(join(compressed.root, 'public/b.txt.gz'), 'a sibling');
    const sibling = await request(compressed.port, {
      path: '/files/public/b.txt',
      headers: { 'accept-encoding': 'gzip' },
    });
    expect([sibling.status, sibling.text]).toEqual([200, 'a sibling']);
  });
});
