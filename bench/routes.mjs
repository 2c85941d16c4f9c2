// The two routes the HTTP benchmarks measure (bench/http-server.mjs and
// bench/hook-cost-server.mjs serve both): the allowed request each round
// sends (3-segment paths), the traversal that validation expects denied,
// and what the servers share: the policy, the guarded routes' declarations,
// the answer, the hand-written check and the core's check alone.
import path from 'node:path';
import { checkFs, PermissionPolicy } from '@pathgate/core';

// Nothing is read from the disk: the root need not exist.
export const ROOT = '/srv/sandbox';
const ROOT_SLASH = `${ROOT}/`;
export const FS_RULES = ['./public/**', 'rw:./uploads/**'];
/** The guarded routes' declarations: Fastify's `config.pathgate`, the core's route guard options. */
export const DECLARATIONS = {
  param: { mode: 'read', paths: [{ params: '*' }] },
  body: { mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] },
};
/** Every handler's answer: the same tiny JSON, no disk. */
export const OK = { ok: true };

/** The hand-written guard: the least a careful route does by itself. */
export const inRoot = (p) => typeof p === 'string' && path.resolve(ROOT, p).startsWith(ROOT_SLASH);

/** The hand-written guard on the body route's `{ from, to }`. */
export const inRootMove = (body) => inRoot(body?.from) && inRoot(body?.to);

// The core's check alone, on the same values and the same policy as the
// adapters get, with the modes the guarded routes declare: what the check
// costs without any adapter around it.
export const POLICY = new PermissionPolicy({ root: ROOT, permissions: { fs: FS_RULES } });
const allowed = (p, mode) => checkFs(POLICY, p, mode).outcome === 'allow';

/** The param route's value (read), through `checkFs` alone. */
export const inPolicy = (p) => allowed(p, 'read');

/** The body route's `{ from, to }` (write), through `checkFs` alone. */
export const inPolicyMove = (body) => allowed(body?.from, 'write') && allowed(body?.to, 'write');

const json = (value) => ({
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(value),
});

export const ROUTES = [
  {
    id: 'param',
    label: 'GET /files/*',
    allowed: { method: 'GET', path: '/files/public/docs/report.txt' },
    traversal: { method: 'GET', path: '/files/public/../../etc/passwd' },
  },
  {
    id: 'body',
    label: 'POST /move',
    allowed: {
      method: 'POST',
      path: '/move',
      ...json({ from: 'uploads/incoming/a.txt', to: 'uploads/archive/a.txt' }),
    },
    traversal: {
      method: 'POST',
      path: '/move',
      ...json({ from: '../../etc/passwd', to: 'uploads/archive/a.txt' }),
    },
  },
];
