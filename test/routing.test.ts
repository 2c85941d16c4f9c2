import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { denyBody, type GuardDenyReason, type PathSpec, PermissionPolicy } from '@pathgate/core';
import { pathgate as expressGate } from '@pathgate/express';
import { pathgate as fastifyGate } from '@pathgate/fastify';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sent, send } from './apps.js';

// Routing features a real app uses, each written in its framework's own
// syntax: the params of a Fastify prefix and of an Express router mounted
// with mergeParams, two params in one segment, an optional last param, the
// HEAD request of a GET route. The same requests, over real HTTP, must get
// the same status and body from both, and the paths the handler gets.

const ROOT = '/srv/root';
const policy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: ['docs/**', 'rw:uploads/**'] },
});

/** One route in both syntaxes. */
interface TwinRoute {
  fastify: string;
  express: string;
  paths: PathSpec[];
}

/** Mounted below `/users/:id`: a Fastify prefix, an Express router with mergeParams. */
const PREFIX = '/users/:id';
const MOUNTED: readonly TwinRoute[] = [
  {
    fastify: '/files/*',
    express: '/files/*"*"',
    paths: [
      { params: 'id', under: 'docs' },
      { params: '*', under: 'docs' },
    ],
  },
];
const ROUTES: readonly TwinRoute[] = [
  {
    fastify: '/near/:lat-:lng',
    express: '/near/:lat-:lng',
    paths: [
      { params: 'lat', under: 'docs' },
      { params: 'lng', under: 'docs' },
    ],
  },
  {
    fastify: '/list/:dir?',
    express: '/list{/:dir}',
    paths: [{ params: 'dir', under: 'docs', optional: true }],
  },
  // After `//`, a wildcard's value starts with `/`: absolute, unless `under` joins it.
  { fastify: '/abs/*', express: '/abs/*"*"', paths: [{ params: '*' }] },
  { fastify: '/rel/*', express: '/rel/*"*"', paths: [{ params: '*', under: '.' }] },
];

const read = (route: TwinRoute) => ({
  config: { pathgate: { mode: 'read' as const, paths: route.paths } },
});

async function startFastify(): Promise<FastifyInstance> {
  const app = Fastify();
  await app.register(fastifyGate, { policy });
  const declare = (scope: FastifyInstance, route: TwinRoute) =>
    scope.get(route.fastify, read(route), async (request) => ({
      pathgate: request.pathgate,
    }));
  for (const route of ROUTES) declare(app, route);
  await app.register(
    async (child) => {
      for (const route of MOUNTED) declare(child, route);
    },
    { prefix: PREFIX },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

function startExpress(): Promise<http.Server> {
  const gate = expressGate({ policy });
  const app = express();
  const declare = (scope: express.Router, route: TwinRoute) =>
    scope.get(route.express, gate.read(...route.paths), (req, res) => {
      res.json({ pathgate: req.pathgate });
    });
  for (const route of ROUTES) declare(app, route);
  const users = express.Router({ mergeParams: true });
  for (const route of MOUNTED) declare(users, route);
  app.use(PREFIX, users);
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}

let fastify: FastifyInstance;
let server: http.Server;

beforeAll(async () => {
  fastify = await startFastify();
  server = await startExpress();
});

afterAll(async () => {
  await fastify.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const both = (sent: Sent) =>
  Promise.all([
    send((fastify.server.address() as AddressInfo).port, sent),
    send((server.address() as AddressInfo).port, sent),
  ]);

/** A request, and what both must answer: the checked params, or a deny's reason and label. */
type Case = readonly [string, string, Record<string, string> | readonly [GuardDenyReason, string]];

const OUT = 'path-not-in-allowlist';
const CASES: readonly Case[] = [
  ['mounted: both params', '/users/a/files/b/c', { id: `${ROOT}/docs/a`, '*': `${ROOT}/docs/b/c` }],
  ['mounted: the prefix param climbs out', '/users/..%2F..%2Fetc/files/b', [OUT, 'params.id']],
  ['mounted: the wildcard climbs out', '/users/a/files/..%2F..%2F..%2Fetc', [OUT, 'params.*']],
  ['two params in a segment', '/near/a-b', { lat: `${ROOT}/docs/a`, lng: `${ROOT}/docs/b` }],
  ['two params, the second climbs out', '/near/a-..%2F..%2Fetc', [OUT, 'params.lng']],
  ['an optional param, absent', '/list', {}],
  ['an optional param', '/list/a', { dir: `${ROOT}/docs/a` }],
  ['an optional param that climbs out', '/list/..%2F..', [OUT, 'params.dir']],
  ['a wildcard after //: absolute', '/abs//srv/root/docs/a', { '*': `${ROOT}/docs/a` }],
  // `path.join(root, raw)` would read /srv/srv/root/docs/a: use the checked path.
  ['absolute, climbing above /', '/abs//..%2Fsrv/root/docs/a', { '*': `${ROOT}/docs/a` }],
  ['under ".": relative to the root', '/rel//docs/a', { '*': `${ROOT}/docs/a` }],
  ['under ".": an absolute-looking value', '/rel//srv/root/docs/a', [OUT, 'params.*']],
];

describe('routing features: Fastify and Express answer alike', () => {
  it.each(CASES)('%s: %s', async (_name, path, expected) => {
    const [fromFastify, fromExpress] = await both({ path });
    expect(fromExpress).toEqual(fromFastify);
    if (Array.isArray(expected)) {
      const [reason, label] = expected;
      expect(fromFastify).toEqual({ status: 403, body: denyBody({ reason, label }) });
    } else {
      expect(fromFastify.status).toBe(200);
      expect(fromFastify.body).toMatchObject({ pathgate: { params: expected } });
    }
  });

  it.each(CASES)('HEAD %s: %s', async (_name, path, expected) => {
    const [fromFastify, fromExpress] = await both({ method: 'HEAD', path });
    expect(fromFastify.status).toBe(Array.isArray(expected) ? 403 : 200);
    expect(fromExpress.status).toBe(fromFastify.status);
  });
});
