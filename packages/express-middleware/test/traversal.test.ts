import http from 'node:http';
import { denyBody, type GuardDenyReason } from '@pathgate/core';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pathgate } from '../src/index.js';
import { request, type Served, serve } from './helpers.js';

// Traversal attempts through the real Express 5 router, over real HTTP on
// 127.0.0.1 with node:http (the request line is sent byte for byte: no
// client-side normalization). The router decodes once; pathgate never again.

const ROOT = '/srv/root';
let served: Served;
let calls = 0;

beforeAll(async () => {
  const gate = pathgate({ root: ROOT, fs: ['docs/**', 'rw:uploads/**'] });
  const app = express();
  app.use(express.json());
  const handler: express.RequestHandler = (req, res) => {
    calls += 1;
    res.json(req.pathgate);
  };
  app.get('/files/*path', gate.read({ params: 'path' }), handler);
  app.get('/opt{/*path}', gate.read({ params: 'path', optional: true }), handler);
  app.get('/doc/:name', gate.read({ params: 'name', under: 'docs' }), handler);
  app.get('/q', gate.read({ query: 'path' }), handler);
  app.post('/json', gate.write({ body: 'path' }), handler);
  // Express fills params only for the layer whose path declares them: a global gate sees none.
  app.use('/global', gate.read({ params: 'id' }));
  app.get('/global/:id', handler);
  served = await serve(app);
});

afterAll(() => served.close());

const get = (path: string) => request(served.port, 'GET', path);
const postJson = (text: string) =>
  request(served.port, 'POST', '/json', {
    headers: { 'content-type': 'application/json' },
    body: text,
  });

/** Expect a 403 with the core body, and no handler call. */
async function expectDenied(
  send: Promise<Awaited<ReturnType<typeof get>>>,
  reason: GuardDenyReason,
  label: string,
) {
  const before = calls;
  const res = await send;
  expect(res.status).toBe(403);
  expect(res.json).toEqual(denyBody({ reason, label }));
  expect(res.text).not.toContain(ROOT);
  expect(calls).toBe(before);
}

describe('params through the router: a named wildcard is one path', () => {
  const ALLOWED: readonly (readonly [string, string])[] = [
    ['/files/docs/a.txt', `${ROOT}/docs/a.txt`],
    ['/files/docs//a/./b', `${ROOT}/docs/a/b`],
    ['/files/docs%2Fa%2Fb.txt', `${ROOT}/docs/a/b.txt`],
    ['/files/docs/x/../a', `${ROOT}/docs/a`],
    // double-encoded: the router decodes once, so `%2e%2e` is a name, not `..`
    ['/files/docs/%252e%252e/%252e%252e/etc', `${ROOT}/docs/%2e%2e/%2e%2e/etc`],
    // NFD arrives, NFC is checked and handed on
    ['/files/docs/e%CC%81t%C3%A9.txt', `${ROOT}/docs/\u00e9t\u00e9.txt`],
    // fullwidth full stops are not dots (NFC, not NFKC)
    ['/files/docs/%EF%BC%8E%EF%BC%8E/x', `${ROOT}/docs/\uff0e\uff0e/x`],
  ];
  it.each(ALLOWED)('%s → %s', async (path, canonical) => {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect((res.json as { params: unknown }).params).toEqual({ path: canonical });
  });

  const DENIED: readonly (readonly [string, GuardDenyReason])[] = [
    ['/files/docs/../../etc/passwd', 'path-not-in-allowlist'],
    ['/files/../../../etc/passwd', 'path-not-in-allowlist'],
    ['/files/..%2F..%2Fetc%2Fpasswd', 'path-not-in-allowlist'],
    ['/files/docs%2F..%2F..%2F..%2Fetc', 'path-not-in-allowlist'],
    ['/files/%2e%2e/%2e%2e/etc/passwd', 'path-not-in-allowlist'],
    ['/files/%2E%2E%2F%2E%2E%2Fetc', 'path-not-in-allowlist'],
    ['/files/docs/..', 'path-not-in-allowlist'],
    ['/files/docs%5C..%5C..%5Cetc', 'path-not-in-allowlist'],
    ['/files/%2Fetc%2Fpasswd', 'path-not-in-allowlist'],
    ['/files/docs/a%00.txt', 'nul-byte'],
    ['/files/docs/.env', 'path-not-in-allowlist'],
  ];
  it.each(DENIED)('%s → %s', async (path, reason) => {
    await expectDenied(get(path), reason, 'params.path');
  });

  it('under: `..` cannot climb out of the sub-directory into the allowlist root', async () => {
    await expectDenied(get('/doc/..'), 'path-not-in-allowlist', 'params.name');
    await expectDenied(get('/doc/..%2F..%2Fetc'), 'path-not-in-allowlist', 'params.name');
    const res = await get('/doc/%2Fa.txt');
    expect((res.json as { params: unknown }).params).toEqual({ name: `${ROOT}/docs/a.txt` });
  });

  it("malformed escapes (overlong %c0%ae, a lone surrogate) are the router's 400, never a 500", async () => {
    const before = calls;
    for (const path of ['/files/docs/%c0%ae%c0%ae/x', '/files/docs/%ed%a0%80', '/files/docs/%ZZ']) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(res.text).not.toContain(ROOT);
    }
    expect(calls).toBe(before);
  });

  it('an optional wildcard may be absent', async () => {
    const res = await get('/opt');
    expect(res.status).toBe(200);
    expect((res.json as { params: unknown }).params).toEqual({});
    await expectDenied(get('/opt/..%2F..'), 'path-not-in-allowlist', 'params.path');
  });
});

describe('query strings (Express 5 simple parser)', () => {
  it('decodes once: %252e%252e is a name', async () => {
    await expectDenied(
      get('/q?path=..%2F..%2Fetc%2Fpasswd'),
      'path-not-in-allowlist',
      'query.path',
    );
    await expectDenied(get('/q?path=%252e%252e/x'), 'path-not-in-allowlist', 'query.path');
    const res = await get('/q?path=docs/%252e%252e/x');
    expect((res.json as { query: unknown }).query).toEqual({ path: `${ROOT}/docs/%2e%2e/x` });
  });

  it('repeated keys are arrays: every element is checked', async () => {
    await expectDenied(
      get('/q?path=docs/a&path=..%2F..%2Fetc'),
      'path-not-in-allowlist',
      'query.path',
    );
    const res = await get('/q?path=docs/a&path=docs/b');
    expect((res.json as { query: unknown }).query).toEqual({
      path: [`${ROOT}/docs/a`, `${ROOT}/docs/b`],
    });
  });

  it('bracket keys are literal keys, so path[]= leaves path missing', async () => {
    await expectDenied(get('/q?path[]=docs/a'), 'missing-path', 'query.path');
    await expectDenied(get('/q?path[0]=docs/a'), 'missing-path', 'query.path');
  });

  it('+ is a space, and NUL is denied', async () => {
    const res = await get('/q?path=docs/a+b');
    expect((res.json as { query: unknown }).query).toEqual({ path: `${ROOT}/docs/a b` });
    await expectDenied(get('/q?path=docs%2Fa%00'), 'nul-byte', 'query.path');
  });
});

describe('JSON shapes', () => {
  it('an array of paths is allowed when every element is', async () => {
    const res = await postJson('{"path":["uploads/a","uploads/b"]}');
    expect(res.status).toBe(200);
    expect((res.json as { body: unknown }).body).toEqual({
      path: [`${ROOT}/uploads/a`, `${ROOT}/uploads/b`],
    });
  });

  const DENIED: readonly (readonly [string, GuardDenyReason])[] = [
    ['{"path":"../../etc/passwd"}', 'path-not-in-allowlist'],
    ['{"path":"uploads/../../etc"}', 'path-not-in-allowlist'],
    ['{"path":"uploads/a","path":"../x"}', 'path-not-in-allowlist'],
    ['{"path":{"0":"uploads/a"}}', 'not-a-string'],
    ['{"path":{"toString":"uploads/a"}}', 'not-a-string'],
    ['{"path":true}', 'not-a-string'],
    ['{"path":["uploads/a",null]}', 'not-a-string'],
    ['{"path":["uploads/a",["uploads/b"]]}', 'not-a-string'],
    ['{"path":"uploads/a\\u0000.txt"}', 'nul-byte'],
    ['{"path":"uploads/\\udc00"}', 'invalid-unicode'],
    ['{"path":[]}', 'missing-path'],
    ['{"path":""}', 'missing-path'],
    ['{"__proto__":{"path":"uploads/a"}}', 'missing-path'],
    ['{"constructor":{"prototype":{"path":"uploads/a"}}}', 'missing-path'],
    ['["uploads/a"]', 'missing-path'],
  ];
  it.each(DENIED)('%s → %s', async (text, reason) => {
    await expectDenied(postJson(text), reason, 'body.path');
  });
});

describe('Express 5 wiring', () => {
  it('a gate in app.use() sees no route params: a required one is missing (fail closed)', async () => {
    await expectDenied(get('/global/docs%2Fa.txt'), 'missing-path', 'params.id');
  });

  it('a deny with no body keeps a keep-alive connection open', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const statuses: (string | undefined)[] = [];
      for (const path of ['/q?path=../x', '/q?path=docs/a', '/q']) {
        const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
          http
            .get({ host: '127.0.0.1', port: served.port, path, agent }, resolve)
            .on('error', reject);
        });
        res.resume();
        await new Promise((resolve) => res.on('end', resolve));
        statuses.push(`${res.statusCode} ${res.headers.connection}`);
      }
      expect(statuses).toEqual(['403 keep-alive', '200 keep-alive', '403 keep-alive']);
    } finally {
      agent.destroy();
    }
  });
});
