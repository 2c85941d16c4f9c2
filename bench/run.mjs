// Runs the benchmarks of this folder one after the other, each in its own node
// process: a fresh heap and JIT per benchmark, so one cannot warm up, slow
// down or leave garbage for the next. `npm run bench` builds the packages,
// then runs this. `node bench/run.mjs core` runs only the scripts whose file
// name starts with one of the given words.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// One line per benchmark, in run order; each is a script of this folder run with `node`.
const BENCHMARKS = [
  'core.mjs', // checkFs per call vs the path.resolve floor and a picomatch loop, 10 to 10k rules
  'long-names.mjs', // checkFs on 100 KB and 1 MB names under class rules vs a `*` rule
  'deep-walk.mjs', // the route guard with resolveSymlinks on values 100 to 2,000 folders deep, per folder
  'http.mjs', // req/s of guarded Fastify and Express routes vs bare, an empty hook and a hand-written check
  'hook-cost.mjs', // ns inside pathgate's hook vs the hand-written check, on the same requests of one server
  'instructions.mjs', // instructions per request (callgrind) of the route guard, checkFs alone and the hand-written check
  'load.mjs', // both examples under 30 s of mixed load with 10 MB denied uploads: a pass/fail check
];

const here = path.dirname(fileURLToPath(import.meta.url));

function selected(words) {
  if (words.length === 0) return BENCHMARKS;
  const chosen = BENCHMARKS.filter((file) => words.some((w) => file.startsWith(w)));
  if (chosen.length === 0) {
    console.error(`no benchmark matches ${words.join(', ')}; known: ${BENCHMARKS.join(', ')}`);
    process.exit(2);
  }
  return chosen;
}

/** Runs one script; returns a failure line, or undefined when it exited 0. */
function run(file) {
  console.log(`\n=== ${file} ===\n`);
  const child = spawnSync(process.execPath, [path.join(here, file)], { stdio: 'inherit' });
  if (child.error) return `${file}: ${child.error.message}`;
  if (child.status === 0) return undefined;
  return `${file} exited with ${child.status ?? child.signal}`;
}

const failures = selected(process.argv.slice(2))
  .map(run)
  .filter((f) => f !== undefined);
if (failures.length > 0) {
  for (const failure of failures) console.error(failure);
  // Benchmarks import the built packages (dist/): `npm run bench` builds them first.
  console.error('(an ERR_MODULE_NOT_FOUND for @pathgate/* means: run `npm run build` first)');
  process.exitCode = 1;
}
