import http from 'node:http';
import { denyBody, type PathDenial } from '@pathgate/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAnswer } from './answer.js';
import {
  type Apps,
  BOUNDARY,
  type Listening,
  listenNode,
  MULTIPART_TYPE,
  multipartBody,
  type Route,
  type Sent,
  send,
  startApps,
} from './apps.js';
import { CASES, policy, ROUTES } from './parity-cases.js';
import { closing, exchangeRaw, rawRequest } from './raw-http.js';
import { type DenyHook, type NodeGateOptions, nodeGate } from './third-adapter.js';

// The core README's promise, "For adapter authors": its exports guard
// another framework with the same decisions. test/third-adapter.ts is that
// adapter for plain node:http, written from the docs alone; here it must
// answer the parity test's requests, and uploads, exactly as the Fastify and
// Express adapters do, built from one route table.

const TABLE: readonly Route[] = [
  ...ROUTES,
  { method: 'POST', url: '/upload', mode: 'write', paths: [{ file: 'avatar', under: 'uploads' }] },
  {
    method: 'POST',
    url: '/maybe',
    mode: 'write',
    paths: [{ file: 'f', under: 'uploads', optional: true }],
  },
  // Two specs that can both deny: the one each adapter reports must be the same.
  { method: 'POST', url: '/body-query', mode: 'write', paths: [{ body: 'a' }, { query: 'b' }] },
  {
    method: 'POST',
    url: '/file-query',
    mode: 'write',
    paths: [{ file: true, under: 'uploads' }, { query: 'b' }],
  },
];

/** Every route answers what pathgate checked, as the other two apps do. */
const listen = (options: NodeGateOptions, routes = TABLE) => listenNode(options, routes);

const upload = (disposition: string, ...more: string[]): Sent => ({
  method: 'POST',
  path: '/upload',
  headers: { 'content-type': MULTIPART_TYPE },
  body: multipartBody([disposition, ...more]),
});

/** One file part of `size` bytes, named `../../server.js`: refused at its headers. */
function bigUpload(size: number): Sent {
  const head = Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="avatar"; filename="../../server.js"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
  return {
    method: 'POST',
    path: '/upload',
    headers: { 'content-type': MULTIPART_TYPE },
    body: Buffer.concat([head, Buffer.alloc(size, 0x61), tail]),
  };
}

const UPLOADS: readonly [string, Sent][] = [
  ['an allowed upload', upload('name="avatar"; filename="a.png"')],
  ['an upload, leading /', upload('name="avatar"; filename="/a.png"')],
  ['a traversal filename', upload('name="avatar"; filename="../../server.js"')],
  ['an undeclared field', upload('name="other"; filename="a.png"')],
  ['a filename naming a folder', upload('name="avatar"; filename="x/.."')],
  ['no file part', upload('name="avatar"')],
  ['JSON, not multipart', { method: 'POST', path: '/upload', json: '{"avatar":"a.png"}' }],
  [
    'two files, the second denied',
    upload('name="avatar"; filename="a"', 'name="avatar"; filename="../b"'),
  ],
  ['a refused 20 MB upload', bigUpload(20e6)],
  [
    'body and query both denied',
    { method: 'POST', path: '/body-query?b=../x', json: '{"a":"../y"}' },
  ],
  [
    'file and query both denied',
    { ...upload('name="f"; filename="../../a"'), path: '/file-query?b=../x' },
  ],
  ['an optional file left empty', { ...upload('name="f"; filename=""'), path: '/maybe' }],
  [
    'any file, query allowed',
    { ...upload('name="f"; filename="a"'), path: '/file-query?b=uploads/x' },
  ],
];

describe('a node:http guard from the core docs answers as Fastify and Express do', () => {
  let apps: Apps;
  let node: Listening;
  beforeAll(async () => {
    apps = await startApps({ policy, routes: TABLE });
    node = await listen({ policy });
  });
  afterAll(async () => {
    await Promise.all([apps.close(), node.close()]);
  });

  it.each([...CASES.map(([name, sent]) => [name, sent] as const), ...UPLOADS])(
    '%s',
    async (_name, sent) => {
      const [fromFastify, fromExpress, fromNode] = await Promise.all([
        send(apps.fastify.port, sent),
        send(apps.express.port, sent),
        send(node.port, sent),
      ]);
      expect(fromExpress).toEqual(fromFastify);
      expect(fromNode).toEqual(fromFastify);
    },
  );
});

/** One request, with the answer's headers. */
function request(port: number, sent: Sent) {
  return new Promise<Awaited<ReturnType<typeof readAnswer>>>((resolve, reject) => {
    const body = sent.body ?? (sent.json === undefined ? undefined : Buffer.from(sent.json));
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: sent.path,
      method: sent.method ?? 'GET',
      headers: {
        ...(sent.json === undefined ? {} : { 'content-type': 'application/json' }),
        ...sent.headers,
        ...(body ? { 'content-length': body.length } : {}),
      },
      agent: false,
    });
    req.on('response', (res) => readAnswer(res).then(resolve, reject));
    req.on('error', reject);
    req.end(body);
  });
}

describe('the node:http guard', () => {
  const logged: object[] = [];
  const denied: PathDenial[] = [];
  let servers: Listening[] = [];
  const start = async (options: { onDeny?: DenyHook; reportOnly?: boolean }) => {
    const server = await listen({ policy, log: (entry) => logged.push(entry), ...options });
    servers.push(server);
    return server.port;
  };
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
    servers = [];
  });

  it('refuses an upload mid-body with Connection: close, the client reads the 403, the connection closes', async () => {
    const port = await start({});
    const { path, headers, body = Buffer.alloc(0) } = bigUpload(20e6);
    // Keep-alive on a raw socket: node:http without an agent would ask for the close itself.
    const head = [
      `content-type: ${headers?.['content-type']}`,
      `content-length: ${body.length}`,
      'connection: keep-alive',
    ];
    const got = await exchangeRaw(port, [rawRequest(`POST ${path} HTTP/1.1`, head, body)]);
    expect(closing(got)).toEqual({
      answers: [
        [403, 'close', denyBody({ reason: 'path-not-in-allowlist', label: 'file avatar' })],
      ],
      closed: true,
      error: undefined,
    });
  });

  it('keeps the connection of a deny with no body pending', async () => {
    const port = await start({});
    const got = await request(port, {
      path: '/q?path=../x',
      headers: { connection: 'keep-alive' },
    });
    expect(got.status).toBe(403);
    expect(got.headers.connection).toBe('keep-alive');
  });

  it('sends what onDeny returns, and the default body when it throws', async () => {
    const chosen = await start({
      onDeny: (denial) => {
        denied.push(denial);
        return { refused: denial.label };
      },
    });
    expect((await request(chosen, { path: '/q?path=../x' })).json).toEqual({
      refused: 'query.path',
    });
    expect(denied.map((d) => d.reason)).toEqual(['path-not-in-allowlist']);

    const throwing = await start({
      onDeny: () => {
        throw new Error('audit sink down');
      },
    });
    const got = await request(throwing, { path: '/q?path=../x' });
    expect(got.json).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'query.path' }));
    expect(logged).toContainEqual(expect.objectContaining({ msg: 'pathgate: onDeny failed' }));
  });

  it('report-only logs every would-be deny and lets the request through', async () => {
    const port = await start({ reportOnly: true });
    logged.length = 0;
    const got = await request(port, {
      method: 'POST',
      path: '/move',
      json: '{"from":"../a","to":"docs/b"}',
    });
    expect(got.status).toBe(200);
    expect(logged).toEqual([
      { msg: 'pathgate: would deny', reason: 'path-not-in-allowlist', label: 'body.from' },
      { msg: 'pathgate: would deny', reason: 'mode-not-permitted', label: 'body.to' },
    ]);
  });

  it('report-only: a denied file is reported once, not as missing too', async () => {
    const port = await start({ reportOnly: true });
    logged.length = 0;
    const got = await request(port, upload('name="avatar"; filename="../../server.js"'));
    expect(got.json).toEqual({ pathgate: expect.objectContaining({ files: [] }) });
    expect(logged).toEqual([
      { msg: 'pathgate: would deny', reason: 'path-not-in-allowlist', label: 'file avatar' },
    ]);
  });

  it('report-only: a file spec is reported once, by its first denied part', async () => {
    const port = await start({ reportOnly: true });
    logged.length = 0;
    const parts = Array.from({ length: 50 }, (_, i) => `name="avatar"; filename="../${i}.js"`);
    const got = await request(port, upload(...(parts as [string, ...string[]])));
    expect(got.status).toBe(200);
    expect(logged).toEqual([
      { msg: 'pathgate: would deny', reason: 'path-not-in-allowlist', label: 'file avatar' },
    ]);
  });

  it('refuses bad options and a route without its param at build time', async () => {
    expect(() => nodeGate({ policy, lingerMS: 5 } as unknown as NodeGateOptions, [])).toThrow(
      /^pathgate: /,
    );
    const route: Route = { method: 'GET', url: '/doc', mode: 'read', paths: [{ params: 'name' }] };
    await expect(listen({ policy }, [route])).rejects.toThrow(/no route parameter name/);
  });
});
