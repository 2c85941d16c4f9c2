import { PermissionPolicy } from '@pathgate/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FRAMEWORKS, forbidden, type Route, send, watchApps } from './apps.js';

// A resolver that is async for some paths (a lookup it awaits) answers a
// promise: the core denies it with resolve-failed, and the promise's
// rejection, which nobody else can see, must not crash the server the
// request reached (Node ends the process on an unhandled rejection).

const failing = (path: string): string =>
  path.endsWith('/remote') ? (Promise.reject(new Error('lookup failed')) as never) : path;
const policy = new PermissionPolicy({
  root: '/srv',
  permissions: { fs: ['**'] },
  resolve: failing,
});
const ROUTES: readonly Route[] = [
  { method: 'GET', url: '/files/*', mode: 'read', paths: [{ params: '*' }] },
];
const watched = watchApps(policy, ROUTES);

const unhandled: unknown[] = [];
const record = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled.length = 0;
  process.on('unhandledRejection', record);
});
afterEach(() => {
  process.off('unhandledRejection', record);
});

describe.each(FRAMEWORKS)('%s with a resolver that answers a rejected promise', (framework) => {
  it('denies with resolve-failed and leaves no unhandled rejection', async () => {
    const answer = await send(watched.apps[framework].port, { path: '/files/remote' });
    expect(answer).toEqual({ status: 403, body: forbidden('resolve-failed', 'params.*') });
    // Node reports an unhandled rejection once the microtasks ran: a turn is ample.
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    expect(watched.calls[framework]).toBe(0);
  });
});
