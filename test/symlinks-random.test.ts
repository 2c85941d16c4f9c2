import type { FsAccessMode } from '@pathgate/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type Expected, osResolve } from '../packages/core/test/link-reference.js';
import { linkCase, linkSandbox } from '../packages/core/test/link-sandbox.js';
import {
  FRAMEWORKS,
  MULTIPART_TYPE,
  multipartBody,
  type Route,
  type Sent,
  send,
  watchApps,
} from './apps.js';

// Both adapters with `resolve: resolveSymlinks` over HTTP, on random trees of
// folders, files and links (packages/core/test/link-tree.ts), a path sent
// in a JSON body (read, write) or as an upload's filename: a request is
// answered as the core's differential test's reference decides, and a
// handler runs only with a path that has no link left in it, so that where
// it opens is where the rules were checked.

// The sandbox root is a link (`alias` -> `root`), resolved once, here.
const sandbox = linkSandbox('pathgate-links-random-');
afterAll(() => sandbox.remove());
const { realRoot } = sandbox;

/** What the guard answers for a value, as the reference decides, and where the handler gets it. */
interface Way {
  readonly route: Route;
  body(value: string): Sent;
  expected(value: string): Expected | { outcome: 'deny'; reason: 'missing-path' };
  handed(answer: unknown): string;
}

const pathgateOf = (answer: unknown) =>
  (answer as { pathgate: { body: { path: string }; files: { path: string }[] } }).pathgate;

/** A JSON body's `path`, checked in `mode`. */
const jsonWay = (mode: FsAccessMode): Way => ({
  route: { method: 'POST', url: `/${mode}`, mode, paths: [{ body: 'path' }] },
  body: (value) => ({ method: 'POST', path: `/${mode}`, json: JSON.stringify({ path: value }) }),
  expected: (value) => sandbox.expected(value, mode),
  handed: (answer) => pathgateOf(answer).body.path,
});

/** An upload's filename, joined under `uploads` (a link, maybe); multer keeps it in memory. */
const uploadWay: Way = {
  route: {
    method: 'POST',
    url: '/upload',
    mode: 'write',
    paths: [{ file: 'f', under: 'uploads' }],
  },
  body: (value) => ({
    method: 'POST',
    path: '/upload',
    headers: { 'content-type': MULTIPART_TYPE },
    body: multipartBody([`name="f"; filename="${Buffer.from(value).toString('latin1')}"`]),
  }),
  expected: (value) => {
    const want = sandbox.expected(`${realRoot}/uploads/${value}`, 'write');
    // A name that is a folder (`x/`, `x/..`, the folder `uploads` itself) is no file's name.
    const name = value.slice(value.lastIndexOf('/') + 1);
    if (want.outcome !== 'allow') return want;
    const folder = ['', '.', '..'].includes(name) || want.path === `${realRoot}/uploads`;
    return folder ? { outcome: 'deny', reason: 'missing-path' } : want;
  },
  handed: (answer) => pathgateOf(answer).files[0]?.path ?? '',
};

const WAYS = [jsonWay('read'), jsonWay('write'), uploadWay];
const watched = watchApps(
  sandbox.policy,
  WAYS.map((way) => way.route),
);

describe.each(FRAMEWORKS)('%s with resolveSymlinks on random trees', (framework) => {
  it('hands a handler only a link-free path that the rules allow', async () => {
    await fc.assert(
      fc.asyncProperty(linkCase, async ([shape, sent]) => {
        const values = sandbox.build(shape, sent);
        for (const way of WAYS) {
          for (const value of values) {
            const want = way.expected(value);
            const calls = watched.calls[framework];
            const got = await send(watched.apps[framework].port, way.body(value));
            const url = way.route.url;
            if (want.outcome === 'deny') {
              expect({ value, url, status: got.status, body: got.body }).toMatchObject({
                status: 403,
                body: { reason: want.reason },
              });
              expect(watched.calls[framework]).toBe(calls);
              continue;
            }
            const handed = way.handed(got.body);
            // Where the handler opens: the kernel must find no link left to follow.
            expect({ value, url, handed, real: osResolve(handed) }).toEqual({
              value,
              url,
              handed: want.path,
              real: want.path,
            });
          }
        }
      }),
      { numRuns: 25 },
    );
  }, 30_000);
});
