// Instruction counts: how many machine instructions pathgate's per-request
// check executes, beside the hand-written check and checkFs alone, counted
// by valgrind's callgrind (bench/instructions-worker.mjs runs the loop).
// Unlike every timing here, a count repeats to within about 100 instructions
// a request whatever else the machine is doing, so it can tell apart two
// builds whose times this machine cannot (bench/README.md, instructions.mjs).
//
// It answers a narrower question than bench/http.mjs: the work of the check
// on warm caches, not its time in a loaded server, where cache misses weigh
// more than instructions. It is a report: it exits 0 unless the set-up is
// wrong, and skips itself when valgrind is missing.
//
// Method: each variant runs twice under callgrind, for SMALL and LARGE
// iterations; the difference divided by LARGE - SMALL is the count per
// request, free of start-up and compilation. The `none` variant (building
// the request alone) is subtracted from the others.
//
// `node bench/instructions.mjs` runs both routes; `node bench/instructions.mjs
// body` one. Environment: INSTR_SMALL (50000), INSTR_LARGE (150000).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { envNumber, table } from './report.mjs';

const WORKER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'instructions-worker.mjs');
const ROUTES = { param: 'GET /files/* (1 value)', body: 'POST /move (2 values)' };
const SMALL = envNumber('INSTR_SMALL', 50_000, 1000);
const LARGE = envNumber('INSTR_LARGE', 150_000, SMALL + 1000);

/** Instructions callgrind collected over one worker run (every thread: V8 compiles on its own). */
function collected(route, variant, iterations) {
  const run = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      '--callgrind-out-file=/dev/null',
      process.execPath,
      // One thread: no compiler or GC threads whose timing would vary the count.
      '--single-threaded',
      WORKER,
      route,
      variant,
      String(iterations),
    ],
    { encoding: 'utf8' },
  );
  const found = /Collected : (\d+)/.exec(run.stderr ?? '');
  if (run.status !== 0 || !found || !run.stdout.includes(`${iterations} of ${iterations} passed`)) {
    throw new Error(`${route} ${variant}: the worker failed\n${run.stdout}${run.stderr}`);
  }
  return Number(found[1]);
}

const perRequest = (route, variant) =>
  (collected(route, variant, LARGE) - collected(route, variant, SMALL)) / (LARGE - SMALL);

function main() {
  const probe = spawnSync('valgrind', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    console.log('valgrind is not installed: instruction counts skipped.');
    return;
  }
  const wanted = process.argv.slice(2);
  const routes = wanted.length > 0 ? wanted : Object.keys(ROUTES);
  const unknown = routes.filter((r) => !(r in ROUTES));
  if (unknown.length > 0) {
    console.error(`usage: node bench/instructions.mjs [${Object.keys(ROUTES).join('|')}]…`);
    process.exit(2);
  }
  console.log(
    `pathgate instruction counts — node ${process.version}, ${probe.stdout.trim()}; per request, ` +
      `from runs of ${SMALL} and ${LARGE} requests, building the request subtracted; warm caches.\n`,
  );
  const rows = routes.map((route) => {
    const base = perRequest(route, 'none');
    const [hand, core, guarded] = ['hand', 'core', 'guarded'].map(
      (v) => perRequest(route, v) - base,
    );
    const fmt = (n) => Math.round(n).toLocaleString('en-US');
    return [
      ROUTES[route],
      fmt(hand),
      fmt(core),
      fmt(guarded),
      (guarded / hand).toFixed(2),
      (guarded / core).toFixed(2),
    ];
  });
  const headers = [
    'route',
    'hand-written',
    'checkFs alone',
    'RouteGuard',
    'guard/hand',
    'guard/checkFs',
  ];
  console.log(table(headers, rows));
  console.log(
    '\nRouteGuard is what both adapters run per request (the Fastify wrapper and the Express ' +
      'middleware add their own few hundred). Instructions are not time: in a loaded server a ' +
      "check's cache misses cost more than its instructions (bench/README.md).",
  );
}

try {
  main();
} catch (error) {
  console.error(error.message);
  process.exitCode = 1;
}
