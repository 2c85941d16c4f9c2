import { STATUS_CODES } from 'node:http';
import { gzipSync } from 'node:zlib';
import { denyBody } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, postJson, send } from './examples.js';
import { startedForSuite } from './fixture.js';
import { exchangeRaw, rawRequest } from './raw-http.js';

// Requests at the edges of what the frameworks themselves read, before any
// path reaches pathgate: conditional headers, large and poisoned JSON bodies,
// a path that does not decode. Both examples must answer each alike, as
// Fastify does by default.

const PUBLIC_ENTRIES = {
  entries: [
    { name: 'docs', type: 'dir', size: 0 },
    { name: 'readme.txt', type: 'file', size: 45 },
  ],
};

const failed = (statusCode: number, error: string, message: string) => ({
  statusCode,
  error,
  message,
});

/** A move of a missing file, its body padded to `bytes` with a field no route reads. */
const paddedMove = (bytes: number) => {
  const head = '{"from":"uploads/nope.txt","to":"uploads/y.txt","pad":"';
  return postJson('/api/move', `${head}${'x'.repeat(bytes - head.length - 2)}"}`);
};

describe.each(EXAMPLES)('the $name example, at the edges of request parsing', (example) => {
  const app = startedForSuite(example);

  /** The example's error body for `statusCode`, and uploads/hello.txt still there: nothing moved or deleted. */
  const expectRefused = async (
    got: { status: number; text: string },
    statusCode: number,
    message: string,
  ) => {
    const error = STATUS_CODES[statusCode] as string;
    expect([got.status, JSON.parse(got.text)]).toEqual([
      statusCode,
      failed(statusCode, error, message),
    ]);
    const kept = await send(app.port, { path: '/files/uploads/hello.txt' });
    expect(kept.status).toBe(200);
  };

  it('answers a conditional listing whole, with no validator to make one of', async () => {
    for (const headers of [{ 'if-none-match': '*' }, { 'if-none-match': 'W/"61-x"' }]) {
      const got = await send(app.port, { path: '/api/list?dir=public', headers });
      expect(got.status).toBe(200);
      expect(JSON.parse(got.text)).toEqual(PUBLIC_ENTRIES);
      expect(got.headers.etag).toBeUndefined();
    }
  });

  it('answers a conditional page whole', async () => {
    const got = await send(app.port, { path: '/', headers: { 'if-none-match': '*' } });
    expect(got.status).toBe(200);
    expect(got.text).toContain('<title>pathgate file API</title>');
    expect(got.headers.etag).toBeUndefined();
  });

  it('reads a JSON body up to 1 MiB, and refuses a larger one with 413', async () => {
    const read = await send(app.port, paddedMove(1024 * 1024));
    expect([read.status, JSON.parse(read.text)]).toEqual([
      404,
      failed(404, 'Not Found', 'no such file or folder'),
    ]);
    const refused = await send(app.port, paddedMove(1024 * 1024 + 1));
    expect([refused.status, JSON.parse(refused.text)]).toEqual([
      413,
      failed(413, 'Payload Too Large', 'payload too large'),
    ]);
  });

  it.each([
    ['a __proto__ key', '{"__proto__":{"from":"uploads/hello.txt"},"to":"uploads/y.txt"}'],
    [
      'an escaped __proto__ key',
      '{"\\u005f_proto__":{},"from":"uploads/hello.txt","to":"uploads/y.txt"}',
    ],
    [
      'a constructor.prototype',
      '{"from":"uploads/hello.txt","to":"uploads/y.txt","x":{"constructor":{"prototype":{}}}}',
    ],
  ])('refuses a JSON body with %s as a bad request, moving nothing', async (_name, json) => {
    const got = await send(app.port, postJson('/api/move', json));
    await expectRefused(got, 400, 'bad request');
  });

  it.each([
    { method: 'GET', path: '/FILES/public/readme.txt' },
    { method: 'GET', path: '/API/list?dir=public' },
    { method: 'GET', path: '/api/list/?dir=public' },
    { method: 'GET', path: '//' },
    { method: 'DELETE', path: '/Files/uploads/hello.txt' },
  ])(
    'routes $method $path only as Fastify does: by case and trailing slash, a 404',
    async (sent) => {
      const got = await send(app.port, sent);
      await expectRefused(got, 404, 'no such route');
    },
  );

  it('routes a move with a trailing slash as Fastify does: a 404, nothing moved', async () => {
    const got = await send(
      app.port,
      postJson('/api/move/', '{"from":"uploads/hello.txt","to":"uploads/y.txt"}'),
    );
    await expectRefused(got, 404, 'no such route');
  });

  it('judges a JSON body nested 200,000 deep as any other: no from, a 403', async () => {
    const got = await send(
      app.port,
      postJson('/api/move', `${'['.repeat(200_000)}${']'.repeat(200_000)}`),
    );
    expect([got.status, JSON.parse(got.text)]).toEqual([
      403,
      denyBody({ reason: 'missing-path', label: 'body.from' }),
    ]);
  });

  const MOVE = '{"from":"uploads/hello.txt","to":"uploads/y.txt"}';
  it.each([
    ['gzipped', { 'content-encoding': 'gzip' }, gzipSync(MOVE)],
    ['in an unknown coding', { 'content-encoding': 'x-unknown' }, MOVE],
    [
      'in UTF-16',
      { 'content-type': 'application/json; charset=utf-16le' },
      Buffer.from(MOVE, 'utf16le'),
    ],
    ['labelled Latin-1', { 'content-type': 'application/json; charset=iso-8859-1' }, MOVE],
  ])('refuses a JSON body %s with 415, moving nothing', async (_name, headers, body) => {
    const sent = postJson('/api/move', '');
    const got = await send(app.port, { ...sent, headers: { ...sent.headers, ...headers }, body });
    await expectRefused(got, 415, 'unsupported media type');
  });

  it.each([
    { method: 'GET', path: '/api/list?dir=public#x' },
    { method: 'GET', path: '/api/list?dir=x#/../public' },
    { method: 'GET', path: '/files/public/readme.txt#x' },
    { method: 'DELETE', path: '/files/uploads/hello.txt#x' },
    { method: 'GET', path: '*' },
    { method: 'GET', path: '*x' },
    // Absolute forms Fastify's router refuses (not http or https, an empty
    // host, a port or host the URL parser refuses): Express routed them by
    // their path, and deleted or served what Fastify answered 400 for.
    { method: 'DELETE', path: 'a://x/files/uploads/hello.txt' },
    { method: 'DELETE', path: 'ws://x/files/uploads/hello.txt' },
    { method: 'GET', path: 'ftp://x/api/list?dir=public' },
    { method: 'GET', path: 'http:///files/public/readme.txt' },
    { method: 'GET', path: 'http://x:99999/files/public/readme.txt' },
    { method: 'GET', path: 'http://x@/files/public/readme.txt' },
    { method: 'DELETE', path: 'http://x%2f/files/uploads/hello.txt' },
    // No path at all: Express's router answered an HTML 404 naming it, before any middleware.
    { method: 'GET', path: 'http://?dir=public' },
  ])('answers $method $path, a target no client sends, with a bare 400', async (sent) => {
    const got = await send(app.port, sent);
    await expectRefused(got, 400, 'bad request');
  });

  it.each([
    'http://x/files/public/readme.txt',
    'HTTPS://x:/files/public/readme.txt',
    'http://[::1]:80/files/public/readme.txt?',
  ])('serves the absolute form %s by its path, as Fastify does', async (path) => {
    const got = await send(app.port, { path });
    expect([got.status, got.text]).toEqual([200, 'Files in public/ can be read, never written.\n']);
  });

  it.each([
    ['a malformed header', rawRequest('GET / HTTP/1.1', ['bad header: x']), 400, 'bad request'],
    ['an unknown HTTP version', rawRequest('GET / HTTP/9.9'), 400, 'bad request'],
    [
      'headers over 16 KiB',
      rawRequest('GET / HTTP/1.1', [`x-big: ${'a'.repeat(20_000)}`]),
      431,
      'request header fields too large',
    ],
  ])(
    'answers a request Node cannot parse (%s) with the same JSON error',
    async (_name, bytes, status, message) => {
      const { responses } = await exchangeRaw(app.port, [bytes]);
      expect(responses.map((got) => [got.status, got.headers['content-type'], got.json])).toEqual([
        [
          status,
          'application/json; charset=utf-8',
          failed(status, STATUS_CODES[status] ?? '', message),
        ],
      ]);
    },
  );

  it('answers a request Node cannot parse after a good one on the same connection', async () => {
    const { responses, closed } = await exchangeRaw(
      app.port,
      [rawRequest('GET /api/list?dir=public HTTP/1.1'), rawRequest('GET / HTTP/9.9')],
      { gapMs: 300 },
    );
    expect(responses.map((got) => [got.status, got.json])).toEqual([
      [200, PUBLIC_ENTRIES],
      [400, failed(400, 'Bad Request', 'bad request')],
    ]);
    expect(closed).toBe(true);
  });

  it('answers nothing for the unparsable request behind one still answered: no 400 for it', async () => {
    // The 400 would be read as the answer to the request in flight.
    const { responses, closed } = await exchangeRaw(app.port, [
      Buffer.concat([
        rawRequest('GET /api/list?dir=public HTTP/1.1'),
        rawRequest('GET / HTTP/9.9'),
      ]),
    ]);
    expect(responses.map((got) => got.status)).not.toContain(400);
    expect(closed).toBe(true);
  });

  it("answers a body Node cannot parse with the JSON 400, as its request's answer", async () => {
    const head = rawRequest('POST /api/move HTTP/1.1', [
      'content-type: application/json',
      'transfer-encoding: chunked',
    ]);
    const { responses } = await exchangeRaw(app.port, [head, '2\r\n{}\r\n', 'zz\r\n'], {
      gapMs: 100,
    });
    expect(responses.map((got) => [got.status, got.json])).toEqual([
      [400, failed(400, 'Bad Request', 'bad request')],
    ]);
  });

  it.each(['/files/uploads/%E0%A4%A', '/files/%', '/files/uploads/%ff'])(
    'answers a path that does not decode (%s) with a bare 400 that does not echo it',
    async (path) => {
      const got = await send(app.port, { path });
      expect(got.status).toBe(400);
      expect(got.type).toBe('application/json; charset=utf-8');
      expect(JSON.parse(got.text)).toEqual(failed(400, 'Bad Request', 'bad request'));
    },
  );
});
