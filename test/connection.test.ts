import { denyBody, PermissionPolicy } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import { FRAMEWORKS, MULTIPART_TYPE, multipartBody, type Route, watchApps } from './apps.js';
import { exchangeRaw, rawRequest } from './raw-http.js';

// HTTP/1.1 at the connection level, against both adapters, with requests
// written byte for byte on plain sockets: keep-alive, pipelining, framing
// the parser must refuse, odd request targets, and what a connection costs.
// Each request must get its own decision, no handler may run for a request
// pathgate denied or for one the server said it would not read, and no
// request hidden in a refused body may be answered.

const ROOT = '/srv/root';
const policy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: ['docs/**', 'rw:uploads/**'] },
});

const ROUTES: readonly Route[] = [
  { method: 'GET', url: '/files/*', mode: 'read', paths: [{ params: '*' }] },
  { method: 'GET', url: '/q', mode: 'read', paths: [{ query: 'path' }] },
  { method: 'POST', url: '/move', mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] },
  {
    method: 'POST',
    url: '/upload',
    mode: 'write',
    paths: [
      { query: 'dir', under: 'uploads' },
      { file: 'f', under: 'uploads' },
    ],
  },
];

const watched = watchApps(policy, ROUTES);
const OUT = 'path-not-in-allowlist';

const get = (target: string, ...headers: string[]) => rawRequest(`GET ${target} HTTP/1.1`, headers);
const ALLOWED_FILE = multipartBody(['name="f"; filename="ok.txt"']);
/** An upload to `/upload?dir=…`, with its multipart content type and length. */
const upload = (dir: string, body: Buffer = ALLOWED_FILE, ...headers: string[]) =>
  rawRequest(
    `POST /upload?dir=${dir} HTTP/1.1`,
    [`content-type: ${MULTIPART_TYPE}`, `content-length: ${body.length}`, ...headers],
    body,
  );

/** Handler runs on `framework` while `run` goes on, and what it returns. */
async function counting<T>(framework: (typeof FRAMEWORKS)[number], run: () => Promise<T>) {
  const before = watched.calls[framework];
  watched.clear(framework);
  const result = await run();
  return { result, calls: watched.calls[framework] - before };
}

describe('pipelined behind a refused upload whose body is still arriving', () => {
  // Requests hidden in the refused body, and real ones pipelined after it:
  // after its `Connection: close` the server must not process any of them
  // (RFC 9112, 9.6), neither answer them nor hand them to a handler.
  const smuggled = Buffer.from(
    `\r\n${get('/files/docs/smuggled').toString('latin1')}${upload('in-body').toString('latin1')}`,
    'latin1',
  );
  const SIZES = [
    ['small (read in the same chunk as its head)', 1024],
    ['large (read after the 403 went out)', 512 * 1024],
  ] as const;
  for (const framework of FRAMEWORKS) {
    for (const [size, bytes] of SIZES) {
      it(`${framework}: ${size}`, async () => {
        const padding = Buffer.alloc(bytes - smuggled.length, 0x61);
        const refused = upload('../../etc', Buffer.concat([padding, smuggled]));
        const behind = [get('/files/docs/after'), upload('after')];
        const { result, calls } = await counting(framework, () =>
          exchangeRaw(watched.apps[framework].port, [Buffer.concat([refused, ...behind])], {
            timeoutMs: 5000,
          }),
        );
        expect(result.responses.map((r) => r.status)).toEqual([403]);
        expect(result.responses[0]?.json).toEqual(denyBody({ reason: OUT, label: 'query.dir' }));
        expect(result.responses[0]?.headers.connection).toBe('close');
        expect(result).toMatchObject({ closed: true, rest: '' });
        expect(calls).toBe(0);
        expect(watched.denied[framework]).toHaveLength(1);
      });
    }
  }
});
