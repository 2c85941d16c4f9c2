import type { FastifyServerOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Answer } from '../../../test/answer.js';
import pathgate, { type PathSpec } from '../src/index.js';
import { denied, listen, newApp, request, sandbox } from './helpers.js';

// Attacks through the real router and parsers, with raw bytes on the wire
// (node:http sends the path exactly as written). The framework decodes once;
// pathgate checks what the handler would see. A counter proves the handler
// never ran on anything but an allow, and nothing is ever a 500.

interface Server {
  root: string;
  calls: () => number;
  send: (method: string, path: string, body?: string) => Promise<Answer>;
}

async function serve(options: FastifyServerOptions = {}): Promise<Server> {
  const root = sandbox();
  const app = newApp(options);
  let calls = 0;
  const handler = async (req: { pathgate: unknown }) => {
    calls++;
    return req.pathgate;
  };
  await app.register(pathgate, { root, fs: ['./public/**', 'rw:./uploads/**'] });
  const read = (paths: PathSpec[]) => ({ config: { pathgate: { mode: 'read', paths } } }) as const;
  app.get('/files/*', read([{ params: '*' }]), handler);
  app.get('/static/*', read([{ params: '*', under: 'public' }]), handler);
  app.get('/q', read([{ query: 'path' }]), handler);
  app.post('/move', read([{ body: 'from' }]), handler);
  app.post('/pick', read([{ body: ['from', 0] }]), handler);
  const port = await listen(app);
  return {
    root,
    calls: () => calls,
    send: (method, path, body) =>
      request(port, {
        method,
        path,
        body,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
      }),
  };
}

type Expectation = { reason: string; label: string } | { status: number } | { allowed: string };

async function check(
  s: Server,
  method: string,
  path: string,
  body: string | undefined,
  want: Expectation,
) {
  const before = s.calls();
  const res = await s.send(method, path, body);
  expect(res.status).not.toBe(500);
  if ('allowed' in want) {
    expect(res.status).toBe(200);
    expect(s.calls()).toBe(before + 1);
    expect(JSON.stringify(res.json)).toContain(JSON.stringify(`${s.root}/${want.allowed}`));
    return;
  }
  expect(s.calls()).toBe(before);
  expect(res.text).not.toContain(s.root);
  if ('status' in want) expect(res.status).toBe(want.status);
  else expect(res.json).toEqual(denied(want.label, want.reason));
}

const OUT = 'path-not-in-allowlist';
const STAR = 'params.*';

describe('paths through the router', () => {
  const ROWS: readonly (readonly [string, string, Expectation])[] = [
    ['encoded slashes', '/files/..%2F..%2Fetc%2Fpasswd', { label: STAR, reason: OUT }],
    ['plain dot segments', '/files/../../etc/passwd', { label: STAR, reason: OUT }],
    ['encoded dots', '/files/%2e%2e/%2e%2e/etc/passwd', { label: STAR, reason: OUT }],
    ['from inside the allowlist', '/files/public/..%2F..%2F..%2Fetc', { label: STAR, reason: OUT }],
    ['an absolute value', '/files/%2Fetc%2Fpasswd', { label: STAR, reason: OUT }],
    ['a double slash', '/files//etc/passwd', { label: STAR, reason: OUT }],
    ['double encoding is literal text', '/files/%252e%252e%252fetc', { label: STAR, reason: OUT }],
    [
      'double encoding, literal under public',
      '/static/%252e%252e%252fx',
      { allowed: 'public/%2e%2e%2fx' },
    ],
    ['NUL', '/files/public%00/x', { label: STAR, reason: 'nul-byte' }],
    ['NUL then traversal', '/files/public/%00/../../../etc', { label: STAR, reason: 'nul-byte' }],
    ['overlong UTF-8 dot', '/files/%c0%ae%c0%ae/%c0%ae%c0%ae/etc', { status: 400 }],
    ['an encoded lone surrogate', '/files/public/%ED%A0%80', { status: 400 }],
    [
      'fullwidth dots and slash',
      '/files/%EF%BC%8E%EF%BC%8E%EF%BC%8Fetc',
      { label: STAR, reason: OUT },
    ],
    [
      'fullwidth, literal under public',
      '/static/%EF%BC%8E%EF%BC%8E%EF%BC%8Fx',
      { allowed: 'public/．．／x' },
    ],
    ['backslashes are ordinary', '/static/a%5C..%5Cx', { allowed: 'public/a\\..\\x' }],
    [
      'a backslash name with a leading dot is a dotfile',
      '/static/..%5C..%5Cx',
      { label: STAR, reason: OUT },
    ],
    ['backslashes outside public', '/files/..%5C..%5Cetc', { label: STAR, reason: OUT }],
    ['NFD is normalized to NFC', '/static/cafe%CC%81.txt', { allowed: 'public/café.txt' }],
    ['a tilde is a name', '/files/~/.ssh/id_rsa', { label: STAR, reason: OUT }],
    [
      'under: an absolute value stays inside',
      '/static/%2Fetc%2Fpasswd',
      { allowed: 'public/etc/passwd' },
    ],
    ['under: traversal out of it', '/static/..%2F..%2Fetc', { label: STAR, reason: OUT }],
    ['a dotfile below an allowed dir', '/files/public/.git/config', { label: STAR, reason: OUT }],
    [
      'a long climb',
      `/files/public/${'a/'.repeat(500)}${'..%2F'.repeat(503)}etc`,
      { label: STAR, reason: OUT },
    ],
    [
      'a long climb that stays inside',
      `/files/public/${'a/'.repeat(500)}${'..%2F'.repeat(500)}b`,
      { allowed: 'public/b' },
    ],
  ];

  it.each(ROWS)('%s: %s', async (_name, path, want) => {
    await check(await serve(), 'GET', path, undefined, want);
  });

  it('app.inject() resolves dot segments before routing, so only a raw request tests the gate', async () => {
    const app = newApp();
    await app.register(pathgate, { root: sandbox(), fs: ['./public/**'] });
    const read = { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } } as const;
    app.get('/files/*', read, async () => 'read');
    const path = '/files/public/../../etc/passwd';
    for (const url of [path, '/files/public/%2e%2e/%2e%2e/etc', '/files/public/..\\..\\etc']) {
      expect((await app.inject({ url })).statusCode).toBe(404);
    }
    const port = await listen(app);
    expect((await request(port, { path })).json).toEqual(denied(STAR, OUT));
  });
});

describe('query strings', () => {
  const Q = 'query.path';
  const ROWS: readonly (readonly [string, string, Expectation])[] = [
    ['repeated keys, one bad', '/q?path=public/a&path=..%2F..%2Fetc', { label: Q, reason: OUT }],
    ['repeated keys, all good', '/q?path=public/a&path=public/b', { allowed: 'public/b' }],
    ['bracket keys are other keys', '/q?path[]=public/a', { label: Q, reason: 'missing-path' }],
    ['NUL', '/q?path=public/%00', { label: Q, reason: 'nul-byte' }],
    ['plus is a space, not a separator', '/q?path=public/a+b', { allowed: 'public/a b' }],
    ['__proto__ keys are just keys', '/q?__proto__=x&path=public/a', { allowed: 'public/a' }],
    ['traversal', '/q?path=public/../../../etc/passwd', { label: Q, reason: OUT }],
  ];

  it.each(ROWS)('%s: %s', async (_name, path, want) => {
    await check(await serve(), 'GET', path, undefined, want);
  });
});

describe('JSON shapes', () => {
  const F = 'body.from';
  const ROWS: readonly (readonly [string, string, string, Expectation])[] = [
    ['a string', '/move', '{"from":"public/a"}', { allowed: 'public/a' }],
    ['an array of paths', '/move', '{"from":["public/a","public/b"]}', { allowed: 'public/b' }],
    [
      'an array with a traversal',
      '/move',
      '{"from":["public/a","../../x"]}',
      { label: F, reason: OUT },
    ],
    ['nested arrays', '/move', '{"from":[["public/a"]]}', { label: F, reason: 'not-a-string' }],
    ['null', '/move', '{"from":null}', { label: F, reason: 'not-a-string' }],
    ['a number', '/move', '{"from":1}', { label: F, reason: 'not-a-string' }],
    ['a boolean', '/move', '{"from":true}', { label: F, reason: 'not-a-string' }],
    ['an object', '/move', '{"from":{"path":"public/a"}}', { label: F, reason: 'not-a-string' }],
    ['an empty array', '/move', '{"from":[]}', { label: F, reason: 'missing-path' }],
    ['an array body', '/move', '[{"from":"public/a"}]', { label: F, reason: 'missing-path' }],
    ['a null body', '/move', 'null', { label: F, reason: 'missing-path' }],
    ['a string body', '/move', '"public/a"', { label: F, reason: 'missing-path' }],
    [
      'a lone surrogate',
      '/move',
      '{"from":"public/\\udc00"}',
      { label: F, reason: 'invalid-unicode' },
    ],
    [
      '__proto__ is refused by the parser',
      '/move',
      '{"__proto__":{"from":"public/a"}}',
      { status: 400 },
    ],
    [
      'constructor.prototype is refused',
      '/move',
      '{"constructor":{"prototype":{"from":"public/a"}}}',
      { status: 400 },
    ],
    [
      'an index on an object',
      '/pick',
      '{"from":{"0":"public/a"}}',
      { label: 'body.from.0', reason: 'missing-path' },
    ],
    ['an index on an array', '/pick', '{"from":["public/a"]}', { allowed: 'public/a' }],
    ['malformed JSON', '/move', '{"from":', { status: 400 }],
  ];

  it.each(ROWS)('%s', async (_name, path, body, want) => {
    await check(await serve(), 'POST', path, body, want);
  });

  it('with onProtoPoisoning "remove", a __proto__ path is missing, never inherited', async () => {
    const s = await serve({ onProtoPoisoning: 'remove' });
    await check(s, 'POST', '/move', '{"__proto__":{"from":"public/a"}}', {
      label: F,
      reason: 'missing-path',
    });
  });
});
