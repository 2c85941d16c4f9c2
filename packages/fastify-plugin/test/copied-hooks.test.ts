import { describe, expect, it } from 'vitest';
import pathgate, { type RouteGuardOptions } from '../src/index.js';
import { denied, listen, newApp, request, sandbox } from './helpers.js';

// A route's options may hold hooks taken from another route that pathgate
// already guarded (an onRoute hook that copies them, say). Each route must
// run its own guard only: pathgate drops the copied pathgate hooks from every
// list it finds, even where the route itself needs no hook of that kind.

const UPLOAD: RouteGuardOptions = {
  mode: 'write',
  paths: [{ params: 'dir' }, { file: true, under: 'uploads' }],
};
const READ_QUERY: RouteGuardOptions = { mode: 'read', paths: [{ query: 'p' }] };

describe("hooks copied from a file route's options", () => {
  it("onRequest: a route without a file spec runs none of the file route's guard", async () => {
    const root = sandbox();
    const app = newApp();
    await app.register(pathgate, { root, fs: ['./public/**', 'rw:./uploads/**'] });
    let copied: unknown;
    app.addHook('onRoute', (route) => {
      if (route.url === '/up/:dir') copied = route.onRequest;
    });
    app.post('/up/:dir', { config: { pathgate: UPLOAD } }, async () => 'up');
    app.get(
      '/b',
      { config: { pathgate: READ_QUERY }, onRequest: copied as never },
      async (req) => req.pathgate?.query,
    );
    const port = await listen(app);
    // `/up/:dir`'s guard would deny here: `/b` has no `dir` param.
    const ok = await request(port, { path: '/b?p=public%2Fa' });
    expect(ok.json).toEqual({ p: `${root}/public/a` });
    const bad = await request(port, { path: '/b?p=..%2F..%2Fx' });
    expect(bad.json).toEqual(denied('query.p', 'path-not-in-allowlist'));
  });
});
