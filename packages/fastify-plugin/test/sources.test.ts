import type { RouteGuardOptions } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import type { Answer } from '../../../test/answer.js';
import pathgate from '../src/index.js';
import { denied, listen, newApp, request, sandbox } from './helpers.js';

// Each source (params, query, body, headers) through real HTTP on 127.0.0.1:
// allowed, denied with each reason, missing, optional, `under`, both modes.
// A handler counter proves the handler never runs on a deny, and every 403
// body is exactly the documented one, without the root.

const RULES = ['./public/**', 'rw:./uploads/**', './docs/*.md'];

interface Server {
  root: string;
  calls: () => number;
  send: (
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => Promise<Answer>;
}

/** One guarded route per declaration; the handler echoes `request.pathgate`. */
async function serve(
  routes: Record<string, RouteGuardOptions>,
  options: { resolve?: (path: string) => string } = {},
): Promise<Server> {
  const root = sandbox();
  const app = newApp();
  let calls = 0;
  await app.register(pathgate, { root, fs: RULES, ...options });
  for (const [route, declaration] of Object.entries(routes)) {
    const [method, url] = route.split(' ') as [string, string];
    app.route({
      method,
      url,
      config: { pathgate: declaration },
      handler: async (req) => {
        calls++;
        return req.pathgate;
      },
    });
  }
  app.get('/unguarded', async (req) => ({ pathgate: req.pathgate }));
  const port = await listen(app);
  return {
    root,
    calls: () => calls,
    send: (method, path, body, headers = {}) =>
      request(port, {
        method,
        path,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        body: body === undefined || typeof body === 'string' ? body : JSON.stringify(body),
      }),
  };
}

/** A deny: exact body, no root in the reply, and the handler never ran for it. */
async function expectDenied(
  server: Server,
  send: () => Promise<Answer>,
  label: string,
  reason: string,
): Promise<void> {
  const before = server.calls();
  const res = await send();
  expect(res.json).toEqual(denied(label, reason));
  expect(res.status).toBe(403);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.text).not.toContain(server.root);
  expect(server.calls()).toBe(before);
}

const info = (mode: 'read' | 'write', part: object) => ({
  mode,
  params: {},
  query: {},
  body: {},
  headers: {},
  files: [],
  ...part,
});

describe('params', () => {
  const routes = {
    'GET /files/*': { mode: 'read', paths: [{ params: '*' }] },
    'GET /named/:name': { mode: 'read', paths: [{ params: 'name', under: 'public' }] },
    'PUT /store/*': { mode: 'write', paths: [{ params: '*' }] },
    'GET /maybe/:name?': { mode: 'read', paths: [{ params: 'name', optional: true }] },
    'GET /need/:name?': { mode: 'read', paths: [{ params: 'name' }] },
  } as const;

  it('allowed: the handler gets the canonical path', async () => {
    const s = await serve(routes);
    const res = await s.send('GET', '/files/public/a/b.txt');
    expect(res.status).toBe(200);
    expect(res.json).toEqual(info('read', { params: { '*': `${s.root}/public/a/b.txt` } }));
    expect(s.calls()).toBe(1);
  });

  it('under joins the value below the sub-directory, even when it starts with /', async () => {
    const s = await serve(routes);
    expect((await s.send('GET', '/named/a.txt')).json).toEqual(
      info('read', { params: { name: `${s.root}/public/a.txt` } }),
    );
    expect((await s.send('GET', '/named/%2Fa.txt')).json).toEqual(
      info('read', { params: { name: `${s.root}/public/a.txt` } }),
    );
  });

  it('modes: read on a rw rule passes; write needs rw', async () => {
    const s = await serve(routes);
    expect((await s.send('GET', '/files/uploads/a.txt')).status).toBe(200);
    expect((await s.send('PUT', '/store/uploads/a.txt')).json).toEqual(
      info('write', { params: { '*': `${s.root}/uploads/a.txt` } }),
    );
  });

  it('write on a read-only rule → mode-not-permitted', async () => {
    const s = await serve(routes);
    await expectDenied(
      s,
      () => s.send('PUT', '/store/public/a.txt'),
      'params.*',
      'mode-not-permitted',
    );
  });

  it.each([
    ['outside the allowlist', '/files/etc/passwd', 'params.*', 'path-not-in-allowlist'],
    ['out of the root', '/files/..%2F..%2Fetc%2Fpasswd', 'params.*', 'path-not-in-allowlist'],
    ['NUL', '/files/public/a%00.txt', 'params.*', 'nul-byte'],
    ['under, escaping it', '/named/..%2F..%2Fx', 'params.name', 'path-not-in-allowlist'],
    ['a dotfile', '/files/public/.env', 'params.*', 'path-not-in-allowlist'],
    ['an empty wildcard', '/files/', 'params.*', 'missing-path'],
    ['a required param absent', '/need/', 'params.name', 'missing-path'],
  ])('%s: %s → %s', async (_name, path, label, reason) => {
    const s = await serve(routes);
    await expectDenied(s, () => s.send('GET', path), label, reason);
  });

  it('optional: absent passes without an entry; present is still checked', async () => {
    const s = await serve(routes);
    expect((await s.send('GET', '/maybe/')).json).toEqual(info('read', {}));
    await expectDenied(
      s,
      () => s.send('GET', '/maybe/..%2F..%2Fx'),
      'params.name',
      'path-not-in-allowlist',
    );
  });
});

describe('query', () => {
  const routes = {
    'GET /read': { mode: 'read', paths: [{ query: 'path' }] },
    'GET /opt': { mode: 'read', paths: [{ query: 'path', optional: true, under: 'docs' }] },
    'DELETE /rm': { mode: 'write', paths: [{ query: 'path' }] },
  } as const;

  it('allowed, and repeated keys are checked one by one', async () => {
    const s = await serve(routes);
    expect((await s.send('GET', '/read?path=public/a')).json).toEqual(
      info('read', { query: { path: `${s.root}/public/a` } }),
    );
    expect((await s.send('GET', '/read?path=public/a&path=docs/b.md')).json).toEqual(
      info('read', { query: { path: [`${s.root}/public/a`, `${s.root}/docs/b.md`] } }),
    );
  });

  it.each([
    ['outside', '/read?path=../../etc/passwd', 'path-not-in-allowlist'],
    ['one bad element of a repeated key', '/read?path=public/a&path=../x', 'path-not-in-allowlist'],
    ['NUL', '/read?path=public/%00', 'nul-byte'],
    ['absent', '/read', 'missing-path'],
    ['empty', '/read?path=', 'missing-path'],
    ['another key', '/read?file=public/a', 'missing-path'],
    ['not the rule glob', '/read?path=docs/a.txt', 'path-not-in-allowlist'],
  ])('%s → %s', async (_name, path, reason) => {
    const s = await serve(routes);
    await expectDenied(s, () => s.send('GET', path), 'query.path', reason);
  });

  it('write on a read-only rule → mode-not-permitted; on rw → allowed', async () => {
    const s = await serve(routes);
    await expectDenied(
      s,
      () => s.send('DELETE', '/rm?path=public/a'),
      'query.path',
      'mode-not-permitted',
    );
    expect((await s.send('DELETE', '/rm?path=uploads/a')).status).toBe(200);
  });

  it('optional with under: absent passes, present joins under docs', async () => {
    const s = await serve(routes);
    expect((await s.send('GET', '/opt')).json).toEqual(info('read', {}));
    expect((await s.send('GET', '/opt?path=/x.md')).json).toEqual(
      info('read', { query: { path: `${s.root}/docs/x.md` } }),
    );
    await expectDenied(
      s,
      () => s.send('GET', '/opt?path=x.txt'),
      'query.path',
      'path-not-in-allowlist',
    );
  });
});

describe('body', () => {
  const routes = {
    'POST /move': { mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] },
    'POST /nested': { mode: 'read', paths: [{ body: ['items', 1, 'path'] }] },
    'POST /opt': { mode: 'write', paths: [{ body: 'to', optional: true, under: 'uploads' }] },
  } as const;

  it('allowed: both values, in order, canonical', async () => {
    const s = await serve(routes);
    const res = await s.send('POST', '/move', { from: 'uploads/a', to: './uploads/x/../b' });
    expect(res.json).toEqual(
      info('write', { body: { from: `${s.root}/uploads/a`, to: `${s.root}/uploads/b` } }),
    );
  });

  it('a key/index selector', async () => {
    const s = await serve(routes);
    const body = { items: [{ path: '../../etc' }, { path: 'public/p' }] };
    expect((await s.send('POST', '/nested', body)).json).toEqual(
      info('read', { body: { 'items.1.path': `${s.root}/public/p` } }),
    );
  });

  it.each([
    [
      'the second value denied',
      { from: 'uploads/a', to: 'public/b' },
      'body.to',
      'mode-not-permitted',
    ],
    ['outside', { from: '/etc/passwd', to: 'uploads/b' }, 'body.from', 'path-not-in-allowlist'],
    ['missing', { to: 'uploads/b' }, 'body.from', 'missing-path'],
    ['null', { from: null, to: 'uploads/b' }, 'body.from', 'not-a-string'],
    ['a number', { from: 42, to: 'uploads/b' }, 'body.from', 'not-a-string'],
    ['an object', { from: { path: 'uploads/a' }, to: 'uploads/b' }, 'body.from', 'not-a-string'],
    [
      'an array with a bad element',
      { from: ['uploads/a', '../x'], to: 'uploads/b' },
      'body.from',
      'path-not-in-allowlist',
    ],
    ['an empty array', { from: [], to: 'uploads/b' }, 'body.from', 'missing-path'],
    [
      'an array with null',
      { from: ['uploads/a', null], to: 'uploads/b' },
      'body.from',
      'not-a-string',
    ],
    ['NUL', { from: 'uploads/a\u0000b', to: 'uploads/b' }, 'body.from', 'nul-byte'],
    ['a JSON array body', [{ from: 'uploads/a' }], 'body.from', 'missing-path'],
    ['a JSON null body', null, 'body.from', 'missing-path'],
  ])('%s → %s', async (_name, body, label, reason) => {
    const s = await serve(routes);
    await expectDenied(s, () => s.send('POST', '/move', JSON.stringify(body)), label, reason);
  });

  it('a lone surrogate → invalid-unicode', async () => {
    const s = await serve(routes);
    const body = '{"from":"uploads/\\ud800","to":"uploads/b"}';
    await expectDenied(s, () => s.send('POST', '/move', body), 'body.from', 'invalid-unicode');
  });

  it('an array of paths is allowed element by element', async () => {
    const s = await serve(routes);
    const res = await s.send('POST', '/move', {
      from: ['uploads/a', 'uploads/b'],
      to: 'uploads/c',
    });
    expect(res.json).toMatchObject({
      body: { from: [`${s.root}/uploads/a`, `${s.root}/uploads/b`], to: `${s.root}/uploads/c` },
    });
  });

  it('optional: absent passes, with no body at all too; present is checked under uploads', async () => {
    const s = await serve(routes);
    expect((await s.send('POST', '/opt', {})).json).toEqual(info('write', {}));
    expect((await s.send('POST', '/opt')).json).toEqual(info('write', {}));
    expect((await s.send('POST', '/opt', { to: '/r/q3.csv' })).json).toEqual(
      info('write', { body: { to: `${s.root}/uploads/r/q3.csv` } }),
    );
    await expectDenied(
      s,
      () => s.send('POST', '/opt', { to: '../public/x' }),
      'body.to',
      'mode-not-permitted',
    );
  });

  it('resolve-failed: a throwing resolver denies (fail closed)', async () => {
    const resolve = (path: string) => {
      if (path.includes('boom')) throw new Error('resolver failed');
      return path;
    };
    const s = await serve(routes, { resolve });
    await expectDenied(
      s,
      () => s.send('POST', '/move', { from: 'uploads/boom', to: 'uploads/b' }),
      'body.from',
      'resolve-failed',
    );
  });
});

describe('headers', () => {
  const routes = {
    'GET /h': { mode: 'read', paths: [{ headers: 'X-File-Path' }] },
    'GET /h-opt': { mode: 'read', paths: [{ headers: 'x-file-path', optional: true }] },
    'PUT /h': { mode: 'write', paths: [{ headers: 'x-file-path' }] },
  } as const;

  it('allowed (the header name is case-insensitive)', async () => {
    const s = await serve(routes);
    const res = await s.send('GET', '/h', undefined, { 'x-file-path': 'public/a' });
    expect(res.json).toEqual(info('read', { headers: { 'x-file-path': `${s.root}/public/a` } }));
  });

  it.each([
    ['outside', { 'x-file-path': '../../etc/passwd' }, 'path-not-in-allowlist'],
    ['missing', {}, 'missing-path'],
    ['empty', { 'x-file-path': '' }, 'missing-path'],
  ])('%s → %s', async (_name, headers, reason) => {
    const s = await serve(routes);
    await expectDenied(
      s,
      () => s.send('GET', '/h', undefined, headers),
      'headers.x-file-path',
      reason,
    );
  });

  it('optional: absent passes', async () => {
    const s = await serve(routes);
    expect((await s.send('GET', '/h-opt')).json).toEqual(info('read', {}));
  });

  it('write mode: rw passes, read-only is mode-not-permitted', async () => {
    const s = await serve(routes);
    const put = (path: string) => s.send('PUT', '/h', undefined, { 'x-file-path': path });
    expect((await put('uploads/a')).json).toEqual(
      info('write', { headers: { 'x-file-path': `${s.root}/uploads/a` } }),
    );
    await expectDenied(s, () => put('public/a'), 'headers.x-file-path', 'mode-not-permitted');
  });
});

describe('request.pathgate', () => {
  it('is null on a route without a declaration', async () => {
    const s = await serve({});
    expect((await s.send('GET', '/unguarded')).json).toEqual({ pathgate: null });
  });

  it('is per request: a second request starts empty', async () => {
    const s = await serve({ 'GET /o': { mode: 'read', paths: [{ query: 'p', optional: true }] } });
    expect((await s.send('GET', '/o?p=public/a')).json).toMatchObject({
      query: { p: `${s.root}/public/a` },
    });
    expect((await s.send('GET', '/o')).json).toEqual(info('read', {}));
  });
});
