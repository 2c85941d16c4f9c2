import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PermissionPolicy, resolveSymlinks } from '@pathgate/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  expectedCheck,
  expectedRoot,
  osResolve,
  simpleRule,
} from '../packages/core/test/link-reference.js';
import { buildTree, request, requestText, tree } from '../packages/core/test/link-tree.js';
import { FRAMEWORKS, type Route, send, watchApps } from './apps.js';

// Both adapters with `resolve: resolveSymlinks` over HTTP, on random trees of
// folders, files and links (packages/core/test/link-tree.ts): a request is
// answered as the core's differential test's reference decides, and a
// handler runs only with a path that has no link left in it, so that where
// it opens is where the rules were checked.

const base = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-links-random-')));
afterAll(() => rmSync(base, { recursive: true, force: true }));

// The sandbox root is a link (`alias` -> `root`), resolved once, here.
buildTree(base, { dirs: [], entries: [] });
const RULES = ['./public/**', 'rw:./uploads/**'];
const root = join(base, 'alias');
const policy = new PermissionPolicy({ root, permissions: { fs: RULES }, resolve: resolveSymlinks });
const realRoot = expectedRoot(root) as string;
const rules = RULES.map(simpleRule);

const ROUTES: readonly Route[] = [
  { method: 'POST', url: '/read', mode: 'read', paths: [{ body: 'path' }] },
  { method: 'POST', url: '/write', mode: 'write', paths: [{ body: 'path' }] },
];
const watched = watchApps(policy, ROUTES);

describe.each(FRAMEWORKS)('%s with resolveSymlinks on random trees', (framework) => {
  it('hands a handler only a link-free path that the rules allow', async () => {
    await fc.assert(
      fc.asyncProperty(
        tree,
        fc.array(request, { minLength: 1, maxLength: 4 }),
        async (shape, sent) => {
          buildTree(base, shape);
          for (const route of ROUTES) {
            // An empty value is a missing one to the guard (`missing-path`): `.` names the root.
            for (const value of sent.map((one) => requestText(base, one) || '.')) {
              const want = expectedCheck(value, realRoot, rules, route.mode);
              const calls = watched.calls[framework];
              const json = JSON.stringify({ path: value });
              const got = await send(watched.apps[framework].port, {
                method: 'POST',
                path: route.url,
                json,
              });
              if (want.outcome === 'deny') {
                expect({
                  value,
                  route: route.url,
                  status: got.status,
                  body: got.body,
                }).toMatchObject({
                  status: 403,
                  body: { reason: want.reason },
                });
                expect(watched.calls[framework]).toBe(calls);
                continue;
              }
              const handed = (got.body as { pathgate: { body: { path: string } } }).pathgate.body
                .path;
              // Where the handler opens: the kernel must find no link left to follow.
              expect({ value, route: route.url, handed, real: osResolve(handed) }).toEqual({
                value,
                route: route.url,
                handed: want.path,
                real: want.path,
              });
            }
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 30_000);
});
