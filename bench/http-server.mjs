// One server of the HTTP benchmark (bench/http.mjs): `node bench/http-server.mjs
// <fastify|express> <bare|empty|hand|guarded>`. It serves both measured routes,
// GET /files/<wildcard> and POST /move {from,to}; every handler answers the same
// tiny JSON without touching the disk. Only the guard in front of the handler
// differs between variants:
//
//   bare     nothing
//   empty    an empty route-level preHandler (Fastify) or middleware (Express)
//   hand     the same hook running path.resolve(root, p) + startsWith(root + '/')
//   core     @pathgate/core's checkFs on each value, no adapter, where pathgate
//            checks: in front of the handler (Fastify; no hook on these routes),
//            in the same middleware (Express)
//   guarded  pathgate, through its adapter
//
// It listens on 127.0.0.1, port 0. Forked with an IPC channel, it sends
// { port } to its parent, answers { type: 'cpu' } with its CPU time, and exits
// when the channel closes (so it never outlives the harness). Run by hand, it
// prints the port, for profiling: `node --cpu-prof bench/http-server.mjs fastify guarded`.
import {
  DECLARATIONS,
  FS_RULES,
  inPolicy,
  inPolicyMove,
  inRoot,
  inRootMove,
  OK,
  ROOT,
} from './routes.mjs';

const [framework, variant] = process.argv.slice(2);
const FRAMEWORKS = ['fastify', 'express'];
const VARIANTS = ['bare', 'empty', 'hand', 'core', 'guarded'];
if (!FRAMEWORKS.includes(framework) || !VARIANTS.includes(variant)) {
  console.error(
    `usage: node bench/http-server.mjs <${FRAMEWORKS.join('|')}> <${VARIANTS.join('|')}>`,
  );
  process.exit(2);
}

const HAND_DENIED = { statusCode: 403, error: 'Forbidden', reason: 'outside-root' };

async function fastifyServer() {
  const { default: Fastify } = await import('fastify');
  const app = Fastify();
  const reply = (_request, rep) => {
    rep.send(OK);
  };
  const deny = (rep) => {
    rep.code(403).send(HAND_DENIED);
  };
  /** A route-level preHandler per route: 403 unless the check passes the route's value(s). */
  const checking = (pathOk, moveOk) => ({
    param: {
      preHandler: (request, rep, done) => (pathOk(request.params['*']) ? done() : deny(rep)),
    },
    body: { preHandler: (request, rep, done) => (moveOk(request.body) ? done() : deny(rep)) },
  });
  /** checkFs alone in front of the handler, where pathgate's check runs on these routes. */
  const inFront = (ok, value) => (request, rep) =>
    ok(value(request)) ? reply(request, rep) : deny(rep);
  const handlers =
    variant === 'core'
      ? {
          param: inFront(inPolicy, (r) => r.params['*']),
          body: inFront(inPolicyMove, (r) => r.body),
        }
      : { param: reply, body: reply };
  const hooks = {
    bare: { param: {}, body: {} },
    empty: {
      param: { preHandler: (_request, _reply, done) => done() },
      body: { preHandler: (_request, _reply, done) => done() },
    },
    hand: checking(inRoot, inRootMove),
    core: { param: {}, body: {} },
    guarded: {
      param: { config: { pathgate: DECLARATIONS.param } },
      body: { config: { pathgate: DECLARATIONS.body } },
    },
  }[variant];
  if (variant === 'guarded') {
    const { pathgate } = await import('@pathgate/fastify');
    await app.register(pathgate, { root: ROOT, fs: FS_RULES });
  }
  app.get('/files/*', hooks.param, handlers.param);
  app.post('/move', hooks.body, handlers.body);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { port: app.server.address().port, close: () => app.close() };
}

async function expressServer() {
  const { default: express } = await import('express');
  const app = express();
  const json = express.json();
  const reply = (_req, res) => {
    res.json(OK);
  };
  const deny = (res) => {
    res.status(403).json(HAND_DENIED);
  };
  const empty = (_req, _res, next) => next();
  let middleware;
  if (variant === 'bare') middleware = { param: [], body: [] };
  if (variant === 'empty') middleware = { param: [empty], body: [empty] };
  /** A route middleware per route: 403 unless the check passes the route's value(s). */
  const checking = (pathOk, moveOk) => ({
    // Express 5 gives the named wildcard as its array of decoded segments.
    param: [(req, res, next) => (pathOk(req.params.path.join('/')) ? next() : deny(res))],
    body: [(req, res, next) => (moveOk(req.body) ? next() : deny(res))],
  });
  if (variant === 'hand') middleware = checking(inRoot, inRootMove);
  if (variant === 'core') middleware = checking(inPolicy, inPolicyMove);
  if (variant === 'guarded') {
    const { pathgate } = await import('@pathgate/express');
    const gate = pathgate({ root: ROOT, fs: FS_RULES });
    middleware = {
      param: [gate.read({ params: 'path' })],
      body: [gate.write({ body: 'from' }, { body: 'to' })],
    };
  }
  app.get('/files/*path', ...middleware.param, reply);
  app.post('/move', json, ...middleware.body, reply);
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (error) => (error ? reject(error) : resolve(s)));
  });
  return {
    port: server.address().port,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const server = await (framework === 'fastify' ? fastifyServer() : expressServer());

if (process.send) {
  process.on('message', (message) => {
    if (message?.type === 'cpu') process.send({ type: 'cpu', usage: process.cpuUsage() });
  });
  // The harness went away (or closed the channel): nothing is left to serve.
  process.on('disconnect', () => process.exit(0));
  process.send({ type: 'ready', port: server.port });
} else {
  console.log(`${framework}/${variant} listening on http://127.0.0.1:${server.port}`);
  // Ctrl-C by hand: close cleanly, so `--cpu-prof` writes its profile.
  process.once('SIGINT', async () => {
    await server.close();
    process.exit(0);
  });
}
