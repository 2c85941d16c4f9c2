import { readFileSync } from 'node:fs';
import multipart from '@fastify/multipart';
import type { PathSpec } from '@pathgate/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import * as entry from '../src/index.js';
import pathgate, { type PathgateOptions } from '../src/index.js';
import { listen, newApp, postJson, postMultipart, request, sandbox } from './helpers.js';

// Claims of this package's README that no other test pins, one `it` each,
// under the README section that makes them.

/** The README as one line of prose: a quote may wrap. */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');

/** The message of the TypeError `run` throws or rejects with. */
async function thrownBy(run: () => unknown): Promise<string> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as Error).message;
  }
  throw new Error('expected a TypeError');
}

/** An app with the plugin registered on `fs: []`, its routes to be declared. */
async function withPlugin(): Promise<FastifyInstance> {
  const app = newApp();
  await app.register(pathgate, { fs: [] });
  return app;
}

describe('README, "Options" and "Per-route declaration"', () => {
  it('the messages it quotes are the ones thrown, whole', async () => {
    const badRule = newApp().register(pathgate, { fs: ['./public/**', 'wr:x'] } as PathgateOptions);
    const app = await withPlugin();
    const quoted = [
      await thrownBy(() => badRule.ready()),
      await thrownBy(() =>
        app.post(
          '/api/move',
          {
            config: {
              pathgate: { mode: 'write', paths: [{ body: 'from' }, { bdy: 'to' } as never] },
            },
          },
          async () => 'ran',
        ),
      ),
      await thrownBy(() =>
        app.get(
          '/files/*',
          { config: { pathgate: { mode: 'read', paths: [{ params: 'path' }] } } },
          async () => 'ran',
        ),
      ),
    ];
    for (const message of quoted) expect(README).toContain(`\`${message}\``);
  });
});

describe('README, "Example"', () => {
  it('a list in the body gives a list of paths, and String() of it is a path no one checked', async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: ['rw:./uploads/*.txt'] });
    app.post(
      '/move',
      { config: { pathgate: { mode: 'write', paths: [{ body: 'to' }] } } },
      async (req) => req.pathgate?.body,
    );
    const port = await listen(app);
    const listed = await postJson(port, '/move', { to: ['uploads/a.txt', 'uploads/b.txt'] });
    const joined = `${root}/uploads/a.txt,${root}/uploads/b.txt`;
    expect(listed.json).toEqual({ to: [`${root}/uploads/a.txt`, `${root}/uploads/b.txt`] });
    expect(String((listed.json as { to: string[] }).to)).toBe(joined);
    expect(README).toContain('`String(to)` would join them into one path');
    expect((await postJson(port, '/move', { to: joined })).status).toBe(403);
  });
});

describe('README, the options table', () => {
  it('with reportOnly, onDeny is still called and its return value is ignored', async () => {
    const app = newApp();
    const seen: string[] = [];
    await app.register(pathgate, {
      root: sandbox(),
      fs: [],
      reportOnly: true,
      onDeny: (denial) => {
        seen.push(denial.reason);
        return { custom: true };
      },
    });
    app.get(
      '/q',
      { config: { pathgate: { mode: 'read', paths: [{ query: 'path' }] } } },
      async () => 'ran',
    );
    const res = await request(await listen(app), { path: '/q?path=a' });
    expect([res.status, res.text, seen]).toEqual([200, 'ran', ['path-not-in-allowlist']]);
  });
});

describe('README, "onDeny and report-only"', () => {
  it('every enforced deny is logged at info as { pathgate: { route, label, reason, path } }', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = { write: (line: string) => lines.push(JSON.parse(line)) };
    const app = newApp({ logger: { level: 'info', stream } });
    const root = sandbox();
    await app.register(pathgate, { root, fs: ['./public/**'] });
    app.get(
      '/q',
      { config: { pathgate: { mode: 'read', paths: [{ query: 'path' }] } } },
      async () => 'ran',
    );
    const res = await request(await listen(app), { path: '/q?path=secret.txt' });
    expect(res.status).toBe(403);
    expect(lines.filter((line) => line.msg === 'pathgate: denied')).toEqual([
      expect.objectContaining({
        level: 30,
        pathgate: {
          route: 'GET /q',
          label: 'query.path',
          reason: 'path-not-in-allowlist',
          path: `${root}/secret.txt`,
        },
      }),
    ]);
  });
});

describe('README, the spec table', () => {
  it("'host' is the Host header; with trustProxy, request.host reads X-Forwarded-Host's last entry, which no spec checks", async () => {
    const app = newApp({ trustProxy: true });
    const root = sandbox();
    await app.register(pathgate, { root, fs: ['*'] });
    const answer = async (req: FastifyRequest) => ({
      header: req.headers.host,
      host: req.host,
      hostname: req.hostname,
      checked: req.pathgate?.headers.host,
    });
    const declare = (...paths: PathSpec[]) => ({
      config: { pathgate: { mode: 'read' as const, paths } },
    });
    app.get('/host', declare({ headers: 'host' }), answer);
    app.get('/both', declare({ headers: 'host' }, { headers: 'x-forwarded-host' }), answer);
    const port = await listen(app);
    const headers = { host: 'files.example', 'x-forwarded-host': 'other.example' };
    expect((await request(port, { path: '/host', headers })).json).toEqual({
      header: 'files.example',
      host: 'other.example',
      hostname: 'other.example',
      checked: `${root}/files.example`,
    });
    const forged = { ...headers, 'x-forwarded-host': '..' };
    expect((await request(port, { path: '/host', headers: forged })).status).toBe(200);
    expect((await request(port, { path: '/both', headers: forged })).status).toBe(403);
    // The declared X-Forwarded-Host is checked as one text, not as its entries.
    const listed = { ...headers, 'x-forwarded-host': 'a, ..' };
    expect((await request(port, { path: '/both', headers: listed })).json).toMatchObject({
      host: '..',
      checked: `${root}/files.example`,
    });
  });
});

describe('README, "What the handler gets"', () => {
  it("a declared source's record is not frozen; one the route declares nothing from is", async () => {
    const app = newApp();
    await app.register(pathgate, { root: sandbox(), fs: ['./public/**'] });
    const write = (record: object) => {
      try {
        Object.assign(record, { extra: 'x' });
        return 'written';
      } catch (error) {
        return (error as Error).name;
      }
    };
    app.get(
      '/f/*',
      { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } },
      async (req) => [write(req.pathgate?.params as object), write(req.pathgate?.query as object)],
    );
    const res = await request(await listen(app), { path: '/f/public/a' });
    expect(res.json).toEqual(['written', 'TypeError']);
    expect(README).toContain('one the route declares nothing from is a shared, frozen `{}`');
  });
});

describe('README, "Multipart (@fastify/multipart 10)"', () => {
  /** Files' names a `files()` handler saw, on a route with a body-free `params` spec and `extra` specs. */
  async function uploadRoute(extra: PathSpec[]): Promise<number> {
    const app = newApp();
    await app.register(multipart, { preservePath: true });
    await app.register(pathgate, { root: sandbox(), fs: ['rw:./uploads/**'] });
    app.post(
      '/up/*',
      { config: { pathgate: { mode: 'write', paths: [{ params: '*' }, ...extra] } } },
      async (req) => {
        const names: string[] = [];
        for await (const part of req.files()) {
          names.push(part.filename);
          part.file.resume();
        }
        return names;
      },
    );
    return listen(app);
  }
  const escaping = { disposition: 'name="doc"; filename="../../etc/passwd"', data: 'x' };

  it('a route with no file spec leaves file parts alone; { file: true, optional: true } checks each', async () => {
    expect(README).toContain(
      "On a route with no file spec, file parts are the app's business and pathgate leaves them alone",
    );
    expect(README).toContain('declare `{ file: true, optional: true }`');
    const loose = await uploadRoute([]);
    expect((await postMultipart(loose, '/up/uploads', [escaping])).json).toEqual([
      '../../etc/passwd',
    ]);
    const checked = await uploadRoute([{ file: true, optional: true }]);
    const refused = await postMultipart(checked, '/up/uploads', [escaping]);
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ reason: 'path-not-in-allowlist' });
    const none = await postMultipart(checked, '/up/uploads', [
      { disposition: 'name="note"', data: 'hi' },
    ]);
    expect(none).toMatchObject({ status: 200, json: [] });
    const fine = await postMultipart(checked, '/up/uploads', [
      { disposition: 'name="doc"; filename="uploads/a.txt"', data: 'x' },
    ]);
    expect(fine).toMatchObject({ status: 200, json: ['uploads/a.txt'] });
  });
});

describe('README, "Types"', () => {
  it('lists every value the package exports', () => {
    const listed = README.slice(README.indexOf('## Types'));
    const missing = Object.keys(entry).filter((name) => !listed.includes(`\`${name}\``));
    expect(missing).toEqual(['default']);
  });
});
