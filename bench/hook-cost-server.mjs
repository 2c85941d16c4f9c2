// One server of the hook-cost benchmark (bench/hook-cost.mjs): `node
// bench/hook-cost-server.mjs <fastify|express>`. It serves the two routes of
// bench/http-server.mjs (GET /files/<wildcard>, POST /move {from,to}), but
// every request runs three checks in front of the handler, one after the
// other, each timed with process.hrtime: an empty function (the timer's own
// cost), the hand-written path.resolve + startsWith check, and pathgate's
// real check (Fastify: the guarded handler its onRoute hook put in front of
// the route's handler; Express: the gate.read()/gate.write() middleware).
// The order rotates from one request to the next, so none always runs on
// caches the others warmed.
//
// Forked with an IPC channel: sends { type: 'ready', port }, answers
// { type: 'reset' } (zeroes the sums, then echoes it) and { type: 'report' } with the mean ns
// per call of each check, and exits when the channel closes.
import { DECLARATIONS, FS_RULES, inRoot, inRootMove, OK, ROOT } from './routes.mjs';

const framework = process.argv[2];
if (framework !== 'fastify' && framework !== 'express') {
  console.error('usage: node bench/hook-cost-server.mjs <fastify|express>');
  process.exit(2);
}

const CHECKS = ['empty', 'hand', 'pathgate'];
const ORDERS = [
  [0, 1, 2],
  [1, 2, 0],
  [2, 0, 1],
];
const sums = { empty: 0n, hand: 0n, pathgate: 0n };
let calls = 0;
let problem;

/**
 * Runs the three checks of one request in the next rotation. Each is
 * `(go) => void` and must call `go()` synchronously (an allowed request);
 * returns whether all three did.
 */
/**
 * HOOK_EVICT_MB: before each timed check, write one byte per cache line of a
 * buffer this large, so every check starts on caches the others' code and
 * data no longer hold, as in bench/http.mjs, where six servers take turns
 * on one core. 0 (the default): warm caches.
 */
const evictBuffer = new Uint8Array(Number(process.env.HOOK_EVICT_MB ?? 0) * 1024 * 1024);
function evictCaches() {
  for (let i = 0; i < evictBuffer.length; i += 64) evictBuffer[i] += 1;
}

function runChecks(checks) {
  const order = ORDERS[calls % ORDERS.length];
  let passed = 0;
  const go = () => {
    passed += 1;
  };
  for (const i of order) {
    const name = CHECKS[i];
    if (evictBuffer.length > 0) evictCaches();
    const start = process.hrtime.bigint();
    checks[name](go);
    sums[name] += process.hrtime.bigint() - start;
  }
  calls += 1;
  if (passed !== CHECKS.length) problem ??= `a check did not pass request ${calls} at once`;
  return passed === CHECKS.length;
}

/** Where the Fastify server declares the guarded twins of its routes. */
const TWIN = '/guarded';

async function fastifyServer() {
  const { default: Fastify } = await import('fastify');
  const { pathgate } = await import('@pathgate/fastify');
  const app = Fastify();
  await app.register(pathgate, { root: ROOT, fs: FS_RULES });
  const hand = {
    '/files/*': (request) => inRoot(request.params['*']),
    '/move': (request) => inRootMove(request.body),
  };
  // The routes' handler. While pathgate's guarded handler is timed, it only
  // tells the timer that the check let the request through.
  let passedCheck;
  const handler = (_request, rep) => {
    if (passedCheck === undefined) rep.send(OK);
    else passedCheck();
  };
  // pathgate keeps its guarded handler on a route that declares paths for
  // good (no hook can take it off, so none can run a handler unchecked). So
  // twin routes under /guarded declare the paths, an onRoute hook registered
  // after the plugin takes their guarded handlers, and the routes served,
  // which declare nothing, call them from inside the timers.
  const guardedOf = {};
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith(TWIN)) return;
    if (route.handler === handler)
      throw new Error(`${route.url}: pathgate did not guard the handler`);
    guardedOf[route.url.slice(TWIN.length)] = route.handler;
  });
  const timedChecks = (url) => {
    const handCheck = hand[url];
    const guarded = guardedOf[url];
    if (guarded === undefined) throw new Error(`${url}: no guarded twin`);
    return function timedChecks(request, reply) {
      const checks = {
        empty: (go) => go(),
        hand: (go) => (handCheck(request) ? go() : undefined),
        pathgate: (go) => {
          passedCheck = go;
          try {
            guarded.call(this, request, reply);
          } finally {
            passedCheck = undefined;
          }
        },
      };
      if (runChecks(checks)) reply.send(OK);
      else if (!reply.sent) reply.code(500).send({ problem });
    };
  };
  app.get(`${TWIN}/files/*`, { config: { pathgate: DECLARATIONS.param } }, handler);
  app.post(`${TWIN}/move`, { config: { pathgate: DECLARATIONS.body } }, handler);
  app.get('/files/*', timedChecks('/files/*'));
  app.post('/move', timedChecks('/move'));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server.address().port;
}

async function expressServer() {
  const { default: express } = await import('express');
  const { pathgate } = await import('@pathgate/express');
  const gate = pathgate({ root: ROOT, fs: FS_RULES });
  const timed = (gateMiddleware, handCheck) => (req, res, next) => {
    const checks = {
      empty: (go) => go(),
      hand: (go) => (handCheck(req) ? go() : undefined),
      pathgate: (go) => gateMiddleware(req, res, go),
    };
    if (runChecks(checks)) next();
    else if (!res.headersSent) res.status(500).json({ problem });
  };
  const app = express();
  app.get(
    '/files/*path',
    // Express 5 gives the named wildcard as its array of decoded segments.
    timed(gate.read({ params: 'path' }), (req) => inRoot(req.params.path.join('/'))),
    (_req, res) => res.json(OK),
  );
  app.post(
    '/move',
    express.json(),
    timed(gate.write({ body: 'from' }, { body: 'to' }), (req) => inRootMove(req.body)),
    (_req, res) => res.json(OK),
  );
  const server = await new Promise((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (error) => (error ? reject(error) : resolve(s)));
  });
  return server.address().port;
}

const port = await (framework === 'fastify' ? fastifyServer() : expressServer());

if (!process.send) {
  console.error('hook-cost-server.mjs runs under bench/hook-cost.mjs (it needs the IPC channel)');
  process.exit(2);
}
process.on('message', (message) => {
  if (message?.type === 'reset') {
    for (const name of CHECKS) sums[name] = 0n;
    calls = 0;
    problem = undefined; // the set-up's traversal fails the checks on purpose
    process.send({ type: 'reset' });
  }
  if (message?.type === 'report') {
    const ns = Object.fromEntries(CHECKS.map((name) => [name, Number(sums[name]) / calls]));
    process.send({ type: 'report', calls, ns, problem });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ type: 'ready', port });
