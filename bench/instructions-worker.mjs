// The loop that bench/instructions.mjs runs under callgrind: `node
// bench/instructions-worker.mjs <param|body|query> <none|hand|core|guarded> <iterations>`.
// Each iteration builds one request of the route the way a server would hand
// it over (fresh objects, flat strings from JSON.parse), then runs one check
// on it:
//
//   none     nothing (what building the request costs)
//   hand     the hand-written path.resolve + startsWith check
//   core     @pathgate/core's checkFs on each value
//   guarded  the route's RouteGuard: what either adapter runs per request,
//            with request.pathgate's records
//
// Before the counted loop, the check runs on requests of every route here,
// as in a server with several routes: the property accesses that serve them
// all then have the inline-cache state they have in such a server. It
// prints how many requests passed, so no check can be optimized away.
import { compileRouteGuard } from '@pathgate/core';
import { DECLARATIONS, inPolicy, inPolicyMove, inRoot, inRootMove, POLICY } from './routes.mjs';

const [route, variant, count] = process.argv.slice(2);
const iterations = Number(count);

// Each route's value(s), request part and checks; the values are those of bench/routes.mjs.
const ROUTE_CHECKS = {
  param: {
    request: (i) => ({ params: JSON.parse(`{"*":"public/docs/report${i & 7}.txt"}`) }),
    declaration: DECLARATIONS.param,
    hand: (request) => inRoot(request.params['*']),
    core: (request) => inPolicy(request.params['*']),
  },
  body: {
    request: (i) => ({
      body: JSON.parse(`{"from":"uploads/incoming/a${i & 7}.txt","to":"uploads/archive/a.txt"}`),
    }),
    declaration: DECLARATIONS.body,
    hand: (request) => inRootMove(request.body),
    core: (request) => inPolicyMove(request.body),
  },
  query: {
    request: (i) => ({
      query: JSON.parse(`{"file":"public/q${i & 7}.txt"}`),
      headers: { host: '127.0.0.1' },
    }),
    declaration: {
      mode: 'read',
      paths: [{ query: 'file' }, { headers: 'x-path', optional: true }],
    },
    hand: (request) => inRoot(request.query.file),
    core: (request) => inPolicy(request.query.file),
  },
};
const WARMUP = 10_000;

const VARIANTS = ['none', 'hand', 'core', 'guarded'];
if (ROUTE_CHECKS[route] === undefined || !VARIANTS.includes(variant) || !(iterations > 0)) {
  console.error(
    'usage: node bench/instructions-worker.mjs <param|body|query> <none|hand|core|guarded> <iterations>',
  );
  process.exit(2);
}

/** The variant's check of one route's requests. */
function checkOf(routeChecks, name) {
  const guard = compileRouteGuard(POLICY, routeChecks.declaration, name);
  return {
    none: () => true,
    hand: routeChecks.hand,
    core: routeChecks.core,
    guarded: (request) => guard.checkRequest(request, guard.newInfo()).ok,
  }[variant];
}

const routes = Object.entries(ROUTE_CHECKS).map(([name, r]) => ({
  name,
  ...r,
  check: checkOf(r, name),
}));

/**
 * The requests `from` to `to` of one route, checked: how many passed. The
 * warm-up and the counted loop both run here, so the counted loop runs as
 * optimized code fed by the warm-up, whatever the build (a loop of its own
 * would first run without feedback, and V8 may leave it interpreted).
 */
function run(r, from, to) {
  let passed = 0;
  for (let i = from; i < to; i++) {
    if (r.check(r.request(i))) passed += 1;
  }
  return passed;
}

for (let i = 0; i < WARMUP; i += 100) {
  for (const r of routes) run(r, i, i + 100);
}
const passed = run(
  routes.find((r) => r.name === route),
  0,
  iterations,
);
console.log(`${route} ${variant}: ${passed} of ${iterations} passed`);
