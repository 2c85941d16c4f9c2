// HTTP benchmark: requests/s of a route guarded by pathgate, beside the same
// route unguarded ("bare"), a second unguarded server as an A/A control
// ("bare2"), the route behind an empty hook ("empty hook"), behind a
// hand-written path.resolve + startsWith check ("hand-written") and behind a
// hook that calls the core's checkFs on each value and nothing else
// ("checkFs alone": what the check costs without the adapter). Two routes,
// GET /files/<wildcard> (a param) and POST /move {from,to} (a JSON body), for
// Fastify and Express. Prints the ratios to bare, the same ratios computed
// from each server's CPU time per request, and a "goals" section; a report,
// so it exits 0 unless the set-up is wrong.
//
// Method (see bench/README.md): this process (the load generator, autocannon)
// runs on one core, every server on the other, each variant in its own fresh
// process (bench/http-server.mjs). All variants of a framework are loaded at
// once, for short rounds, so a slowdown of the machine hits them alike; the
// ratios are taken within each round, then summarised by their median and
// p25–p75. The servers are restarted every few rounds: a process's own speed
// varies from one start to the next, so one start must not decide the result.
//
// `node bench/http.mjs` runs both frameworks, `node bench/http.mjs express` one.
// Environment: BENCH_ROUNDS (default 30), BENCH_RESTART_EVERY (5),
// BENCH_WINDOW_S (1.5), BENCH_CONNECTIONS (4), BENCH_WARMUP_REQUESTS (20000),
// BENCH_WARMUP_MAX_S (30); BENCH_JSON=<file> also writes every round's numbers.
// `node bench/http.mjs --pool <file>…` reports the rounds of several such
// files taken together, with no new measurement.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { request } from './client.mjs';
import { envNumber, median, medianInterval, shuffle, summary, table } from './report.mjs';
import { ROUTES } from './routes.mjs';
import { serverReady } from './server-ready.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const SERVER = path.join(HERE, 'http-server.mjs');
const PIN_ENV = 'PATHGATE_HTTP_BENCH_PIN'; // set in the re-executed process: "<client cpu>,<server cpu>" or "none: why"

const FRAMEWORKS = ['fastify', 'express'];
const ROUNDS = envNumber('BENCH_ROUNDS', 30, 1);
const RESTART_EVERY = envNumber('BENCH_RESTART_EVERY', 5, 1);
const WINDOW_MS = envNumber('BENCH_WINDOW_S', 1.5, 0.1) * 1000;
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 4, 1);
const LEAD_MS = 100; // load runs this long before the counted window: connections open, queues fill
// After each (re)start, unrecorded: until the slowest server answered WARMUP_REQUESTS (both routes), at most WARMUP_MAX_MS.
const WARMUP_REQUESTS = envNumber('BENCH_WARMUP_REQUESTS', 20_000, 0);
const WARMUP_MAX_MS = envNumber('BENCH_WARMUP_MAX_S', 30, 0) * 1000;
const WARMUP_STEP_MS = 500;

// Every server is one of these; bare runs twice (bare2 is the A/A control).
const VARIANTS = [
  { id: 'bare', server: 'bare' },
  { id: 'bare2', server: 'bare' },
  { id: 'empty', server: 'empty' },
  { id: 'hand', server: 'hand' },
  { id: 'core', server: 'core' },
  { id: 'guarded', server: 'guarded' },
];

const RATIOS = [
  { id: 'guarded/bare', num: 'guarded', den: 'bare' },
  { id: 'hand-written/bare', num: 'hand', den: 'bare' },
  { id: 'checkFs alone/bare', num: 'core', den: 'bare' },
  { id: 'empty hook/bare', num: 'empty', den: 'bare' },
  { id: 'bare2/bare (A/A)', num: 'bare2', den: 'bare' },
  { id: 'guarded/hand-written', num: 'guarded', den: 'hand' },
  { id: 'guarded/checkFs alone', num: 'guarded', den: 'core' },
];

// Judged on the medians of the per-round ratios, per route.
const GOALS = {
  fastify: [
    { ratio: 'guarded/bare', text: 'guarded ≥ 0.96× bare', ok: (r) => r >= 0.96 },
    { ratio: 'guarded/hand-written', text: 'guarded ≥ hand-written', ok: (r) => r >= 1 },
  ],
  express: [
    { ratio: 'guarded/bare', text: 'guarded ≥ 0.97× bare', ok: (r) => r >= 0.97 },
    { ratio: 'guarded/hand-written', text: 'guarded ≥ hand-written', ok: (r) => r >= 1 },
  ],
};

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- CPU pinning

/** "0-2,5" → [0, 1, 2, 5]. */
function cpuList(text) {
  return text.split(',').flatMap((part) => {
    const [lo, hi = lo] = part.split('-').map(Number);
    return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
  });
}

/** The CPUs this process may use, per `taskset`; a string saying why not when it cannot pin. */
function allowedCpus() {
  const out = spawnSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' });
  if (out.error || out.status !== 0) return 'taskset is not available';
  const cpus = cpuList(out.stdout.split(':').pop().trim());
  return cpus.length >= 2 ? cpus : `only CPU ${cpus.join(',')} is available`;
}

/**
 * Re-runs this script under `taskset -c <first cpu>` and mirrors its exit
 * code; the servers will get the second CPU. Without taskset (or with one
 * CPU) the script runs unpinned and says so.
 */
function reexecPinned() {
  const cpus = allowedCpus();
  if (typeof cpus === 'string') {
    process.env[PIN_ENV] = `none: ${cpus}`;
    return false;
  }
  const [client, server] = cpus;
  const child = spawn(
    'taskset',
    ['-c', String(client), process.execPath, ...process.execArgv, SELF, ...process.argv.slice(2)],
    // The IPC channel only tells the child when this process is gone (even by SIGKILL).
    {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, [PIN_ENV]: `${client},${server}` },
    },
  );
  // A Ctrl-C reaches both processes; a signal sent to this one alone is passed on.
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    process.exitCode = code ?? (signal === 'SIGINT' ? 130 : 1);
  });
  return true;
}

// -------------------------------------------------------------- the servers

const live = new Set(); // every server process still running
const activeLoads = new Set(); // autocannon instances still running

/** [client CPU, server CPU] from the re-exec, or undefined when unpinned. */
function pinnedCpus() {
  const pin = process.env[PIN_ENV] ?? 'none';
  return pin.startsWith('none') ? undefined : pin.split(',');
}

/**
 * Starts one server process; resolves once it listens. It runs on both CPUs
 * until `pinServers`: six servers start and warm up in about half the time.
 */
async function startServer(framework, variant) {
  const cpus = pinnedCpus();
  const argv = [SERVER, framework, variant.server];
  const stdio = ['ignore', 'inherit', 'inherit', 'ipc'];
  const child =
    cpus === undefined
      ? spawn(process.execPath, argv, { stdio })
      : spawn('taskset', ['-c', cpus.join(','), process.execPath, ...argv], { stdio });
  live.add(child);
  child.on('exit', () => live.delete(child));
  const port = await serverReady(child, `${framework}/${variant.id}`);
  return { ...variant, framework, child, port };
}

/** Moves every thread of every server to the server CPU (before any recorded request). */
function pinServers(servers) {
  const cpus = pinnedCpus();
  if (cpus === undefined) return;
  for (const { framework, id, child } of servers) {
    // taskset exec'd node, so the child's pid is the server's; -a: all of its threads.
    const pin = spawnSync('taskset', ['-a', '-p', '-c', cpus[1], String(child.pid)]);
    if (pin.status !== 0) throw new Error(`${framework}/${id}: taskset -a -p failed`);
  }
}

/** Stops the servers and waits until every process has exited. */
async function stopServers(servers) {
  await Promise.all(
    servers.map(
      ({ child }) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const force = setTimeout(() => child.kill('SIGKILL'), 3000);
          child.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** Total CPU time (µs) of one server, asked over IPC. */
function serverCpuTime({ child }) {
  return new Promise((resolve) => {
    const onMessage = (message) => {
      if (message?.type !== 'cpu') return;
      child.off('message', onMessage);
      resolve(message.usage.user + message.usage.system);
    };
    child.on('message', onMessage);
    child.send({ type: 'cpu' });
  });
}

function cleanUp() {
  for (const load of activeLoads) load.stop();
  for (const child of live) child.kill('SIGKILL');
}

// ---------------------------------------------------------------- validation

/**
 * Refuses to time anything unless every variant answers the allowed request
 * with the same 200 body, pathgate and the hand-written check deny the
 * traversal (pathgate with a reason), and bare lets it through (so the 403
 * comes from the guard, not from the router). Returns pathgate's reasons.
 */
async function validate(servers) {
  const reasons = {};
  const fail = (server, what, got) => {
    throw new Error(`${server.framework}/${server.id}: ${what}, got ${got.status} ${got.body}`);
  };
  for (const route of ROUTES) {
    let reference;
    for (const server of servers) {
      const got = await request(server.port, route.allowed);
      reference ??= got.body;
      if (got.status !== 200 || got.body !== reference) {
        fail(server, `${route.label} allowed request: want 200 ${reference}`, got);
      }
      const traversal = await request(server.port, route.traversal);
      if (server.server === 'bare' || server.server === 'empty') {
        if (traversal.status !== 200) fail(server, `${route.label} traversal unguarded`, traversal);
        continue;
      }
      if (traversal.status !== 403) fail(server, `${route.label} traversal: want 403`, traversal);
      if (server.server === 'guarded') {
        const reason = JSON.parse(traversal.body).reason;
        if (typeof reason !== 'string' || reason === '') {
          fail(server, `${route.label} traversal: want a reason`, traversal);
        }
        reasons[route.id] = reason;
      }
    }
  }
  return reasons;
}

// --------------------------------------------------------------- measurement

/**
 * Loads every server at once with the allowed request of each of `routes`
 * and counts the 200s each server answers inside one common window (the same
 * timers open and close it for all). Returns req/s per variant and how busy
 * both CPUs were.
 */
async function loadRound(servers, routes, windowMs) {
  const counts = new Map(servers.map((s) => [s.id, 0])); // 200s inside the window
  const served = new Map(servers.map((s) => [s.id, 0])); // 200s while the CPU time was counted
  let recording = false;
  let problem;
  const cpuBefore = await Promise.all(servers.map(serverCpuTime));
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const pairs = servers.flatMap((server) => routes.map((route) => ({ server, route })));
  const loads = shuffle(pairs).map(({ server, route }) => {
    const { method, path: requestPath, headers, body } = route.allowed;
    const load = autocannon({
      url: `http://127.0.0.1:${server.port}${requestPath}`,
      method,
      headers,
      body,
      connections: CONNECTIONS,
      pipelining: 1,
      duration: (LEAD_MS + windowMs) / 1000 + 30, // stopped by hand below; this only bounds a hang
      sampleInt: 50, // stop() takes effect at the next sample tick
      skipAggregateResult: true,
    });
    activeLoads.add(load);
    const name = `${server.framework}/${server.id} ${route.label}`;
    load.on('response', (_client, status) => {
      if (status !== 200) problem ??= `${name} answered ${status}`;
      else {
        served.set(server.id, served.get(server.id) + 1);
        if (recording) counts.set(server.id, counts.get(server.id) + 1);
      }
    });
    load.on('reqError', (error) => {
      problem ??= `${name}: ${error.message}`;
    });
    return load;
  });
  await sleep(LEAD_MS);
  recording = true;
  const windowStart = performance.now();
  await sleep(windowMs);
  recording = false;
  const windowS = (performance.now() - windowStart) / 1000;
  for (const load of loads) load.stop();
  await Promise.all(loads);
  for (const load of loads) activeLoads.delete(load);
  const wallUs = (performance.now() - started) * 1000;
  const cpuAfter = await Promise.all(servers.map(serverCpuTime));
  const client = process.cpuUsage(clientBefore);
  if (problem) throw new Error(problem);
  const rps = {};
  for (const [id, count] of counts) rps[id] = count / windowS;
  const cpuUs = {};
  servers.forEach(({ id }, i) => {
    cpuUs[id] = (cpuAfter[i] - cpuBefore[i]) / served.get(id);
  });
  const serverUs = cpuAfter.reduce((sum, t, i) => sum + t - cpuBefore[i], 0);
  return {
    rps,
    cpuUs,
    serverBusy: serverUs / wallUs,
    clientBusy: (client.user + client.system) / wallUs,
  };
}

/**
 * Loads both routes on every server until the slowest server has answered
 * WARMUP_REQUESTS, or for WARMUP_MAX_MS: the steady state a long-running
 * server lives in. V8 optimizes each function only once it is hot; after 3,000
 * requests the guard's code was still partly unoptimized, and guarded/bare
 * read 0.92 where the steady state reads 0.96. Returns the slowest count.
 */
async function warmUp(servers) {
  const answered = new Map(servers.map((s) => [s.id, 0]));
  const started = performance.now();
  const slowest = () => Math.min(...answered.values());
  while (slowest() < WARMUP_REQUESTS && performance.now() - started < WARMUP_MAX_MS) {
    const { rps } = await loadRound(servers, ROUTES, WARMUP_STEP_MS);
    for (const [id, r] of Object.entries(rps)) {
      answered.set(id, answered.get(id) + (r * WARMUP_STEP_MS) / 1000);
    }
  }
  return Math.round(slowest());
}

/**
 * One generation: fresh servers for every variant of `framework`, validated,
 * warmed up together, then `rounds` recorded rounds (each route once per
 * round, in a random order), then stopped.
 */
async function generation(framework, rounds, results) {
  const setupStart = performance.now();
  const servers = await Promise.all(VARIANTS.map((v) => startServer(framework, v)));
  const generation = results.generations.length;
  try {
    results.reasons = await validate(servers);
    const warmStart = performance.now();
    const warmRequests = await warmUp(servers);
    pinServers(servers);
    results.generations.push({
      startMs: warmStart - setupStart,
      warmMs: performance.now() - warmStart,
      warmRequests,
    });
    for (let r = 0; r < rounds; r++) {
      for (const route of shuffle(ROUTES)) {
        results.rounds[route.id].push({
          generation,
          ...(await loadRound(servers, [route], WINDOW_MS)),
        });
      }
    }
  } finally {
    await stopServers(servers);
  }
}

async function measure(frameworks) {
  const results = Object.fromEntries(
    frameworks.map((f) => [
      f,
      { reasons: {}, generations: [], rounds: Object.fromEntries(ROUTES.map((r) => [r.id, []])) },
    ]),
  );
  // Generations alternate between the frameworks, so both see the same stretch of the machine's drift.
  for (let done = 0; done < ROUNDS; done += RESTART_EVERY) {
    const rounds = Math.min(RESTART_EVERY, ROUNDS - done);
    for (const framework of frameworks) await generation(framework, rounds, results[framework]);
  }
  return results;
}

// -------------------------------------------------------------------- report

const fmtRatio = (r) => r.toFixed(3);
const fmtRps = (r) => Math.round(r).toLocaleString('en-US');
const fmtPct = (r) => `${Math.round(r * 100)}%`;
const range = (s, fmt) => `${fmt(s.p25)}–${fmt(s.p75)}`;

function version(name) {
  const require = createRequire(import.meta.url);
  return require(`${name}/package.json`).version;
}

function printHeader(frameworks) {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`pathgate HTTP benchmark — node ${process.version}, ${cpu} ×${os.cpus().length}`);
  const pin = process.env[PIN_ENV] ?? 'none';
  if (pin.startsWith('none')) {
    console.log(
      `NOT PINNED (${pin}): load generator and servers share the CPUs; expect more noise`,
    );
  } else {
    const [client, server] = pin.split(',');
    console.log(
      `load generator (autocannon) on CPU ${client}, every server on CPU ${server} (taskset)`,
    );
  }
  const generations = Math.ceil(ROUNDS / RESTART_EVERY);
  console.log(
    `${ROUNDS} rounds per framework, fresh servers every ${RESTART_EVERY} rounds (${generations} generation${generations === 1 ? '' : 's'}); ` +
      `per round and route, ${VARIANTS.length} servers loaded together for ${WINDOW_MS / 1000} s, ` +
      `${CONNECTIONS} connections each, pipelining 1`,
  );
  for (const route of ROUTES) {
    const body = route.allowed.body ? ` ${route.allowed.body}` : '';
    console.log(`  ${route.label}: ${route.allowed.method} ${route.allowed.path}${body}`);
  }
  console.log(`frameworks: ${frameworks.map((f) => `${f} ${version(f)}`).join(', ')}`);
  console.log('');
}

/** One row per statistic: its median and p25–p75 for each route. */
const row = (label, perRoute, pick, fmt) => [
  label,
  ...perRoute.flatMap((p) => {
    const s = pick(p);
    return [fmt(s.median), range(s, fmt)];
  }),
];

/** One throughput ratio (`RATIOS`) in each round of a route. */
const ratioValues = (list, { num, den }) => list.map((x) => x.rps[num] / x.rps[den]);

/**
 * A goal's verdict on the median of its ratio's per-round `values`, with the
 * median's 95% interval, resampled by generation (`generations`, one per
 * value): a fresh server process keeps its own speed for its whole life
 * (bench/README.md), so the rounds of one generation share that error.
 */
function goalLine(framework, label, goal, values, generations) {
  const value = median(values);
  const { low, high } = medianInterval(values, generations);
  const verdict = goal.ok(value) ? 'PASS' : 'FAIL';
  const interval = `95% interval ${fmtRatio(low)}–${fmtRatio(high)}`;
  return `  ${verdict}  ${framework} ${label}: ${goal.text} — ${goal.ratio} ${fmtRatio(value)} (${interval})`;
}

/** Per framework: the table, the CPU use, the goals. Returns the goal lines. */
function printFramework(framework, { reasons, rounds, generations }) {
  const perRoute = ROUTES.map((route) => {
    const list = rounds[route.id];
    const of = (f) => summary(list.map(f));
    // Throughput ratios: num req/s over den req/s, in the same window.
    const ratios = Object.fromEntries(RATIOS.map((r) => [r.id, ratioValues(list, r)]));
    return {
      route,
      ratios,
      rps: Object.fromEntries(RATIOS.map((r) => [r.id, summary(ratios[r.id])])),
      // The same from CPU time per request: den µs over num µs, so it reads like a throughput ratio.
      cpu: Object.fromEntries(
        RATIOS.map((r) => [r.id, of((x) => x.cpuUs[r.den] / x.cpuUs[r.num])]),
      ),
      bareRps: of((x) => x.rps.bare),
      bareUs: of((x) => x.cpuUs.bare),
      serverBusy: of((x) => x.serverBusy),
      clientBusy: of((x) => x.clientBusy),
    };
  });
  const headers = ['', ...perRoute.flatMap((p) => [p.route.label, 'p25–p75'])];
  const rows = [
    row('bare req/s', perRoute, (p) => p.bareRps, fmtRps),
    ...RATIOS.map(({ id }) => row(id, perRoute, (p) => p.rps[id], fmtRatio)),
    row(
      'bare CPU µs/request',
      perRoute,
      (p) => p.bareUs,
      (v) => v.toFixed(0),
    ),
    ...RATIOS.map(({ id }) => row(`${id}, by CPU`, perRoute, (p) => p.cpu[id], fmtRatio)),
    row('server CPU busy', perRoute, (p) => p.serverBusy, fmtPct),
    row('load CPU busy', perRoute, (p) => p.clientBusy, fmtPct),
  ];
  const denied = ROUTES.map((r) => `${r.label} → ${reasons[r.id]}`).join(', ');
  const seconds = (key) => summary(generations.map((g) => g[key] / 1000)).median.toFixed(1);
  const warmed = Math.min(...generations.map((g) => g.warmRequests));
  console.log(
    `${framework}: ${rounds[ROUTES[0].id].length} rounds, ${generations.length} generation${generations.length === 1 ? '' : 's'} ` +
      `(median start ${seconds('startMs')} s, warm-up ${seconds('warmMs')} s; ` +
      `every server warmed with ≥ ${warmed} requests)`,
  );
  console.log(`traversal denied by pathgate: ${denied}`);
  console.log(table(headers, rows));
  const clientBound = perRoute.some((p) => p.clientBusy.median > 0.85);
  if (clientBound) {
    console.log(
      "WARNING: the load generator's CPU is nearly saturated: the ratios are compressed towards 1",
    );
  }
  console.log('');
  return perRoute.flatMap((p) =>
    GOALS[framework].map((goal) =>
      goalLine(
        framework,
        p.route.label,
        goal,
        p.ratios[goal.ratio],
        rounds[p.route.id].map((x) => x.generation),
      ),
    ),
  );
}

function printGoals(goals) {
  console.log('goals (medians of the per-round ratios)');
  for (const line of goals) console.log(line);
}

/**
 * One framework's results of several runs, as if one run had made all their
 * rounds; each run's generations are numbered after the previous runs'.
 */
function pooled(results) {
  const firsts = [];
  let count = 0;
  for (const result of results) {
    firsts.push(count);
    count += result.generations.length;
  }
  const rounds = (id) =>
    results.flatMap((x, i) =>
      x.rounds[id].map((round) => ({ ...round, generation: firsts[i] + round.generation })),
    );
  return {
    reasons: results[0].reasons,
    rounds: Object.fromEntries(ROUTES.map((r) => [r.id, rounds(r.id)])),
    generations: results.flatMap((x) => x.generations),
  };
}

/**
 * `--pool a.json b.json …`: the report of the BENCH_JSON files' rounds
 * taken together. One run's median moves with the day (bench/README.md);
 * more rounds from more runs narrow that down.
 */
function pool(files) {
  if (files.length === 0) {
    console.error('usage: node bench/http.mjs --pool <BENCH_JSON file>…');
    process.exit(2);
  }
  const runs = files.map((file) => JSON.parse(readFileSync(file, 'utf8')));
  console.log(`pathgate HTTP benchmark, pooled: ${files.join(', ')}\n`);
  const goals = FRAMEWORKS.flatMap((framework) => {
    const results = runs.map((run) => run[framework]).filter((r) => r !== undefined);
    return results.length === 0 ? [] : printFramework(framework, pooled(results));
  });
  printGoals(goals);
}

async function main() {
  const words = process.argv.slice(2);
  if (words[0] === '--pool') return pool(words.slice(1));
  const frameworks = words.length === 0 ? FRAMEWORKS : FRAMEWORKS.filter((f) => words.includes(f));
  if (frameworks.length === 0) {
    console.error(`usage: node bench/http.mjs [${FRAMEWORKS.join('] [')}]`);
    process.exit(2);
  }
  const started = performance.now();
  const results = await measure(frameworks);
  // Raw per-round numbers, for a closer look: BENCH_JSON=out.json.
  if (process.env.BENCH_JSON)
    writeFileSync(process.env.BENCH_JSON, JSON.stringify(results, null, 1));
  printHeader(frameworks);
  printGoals(frameworks.flatMap((f) => printFramework(f, results[f])));
  console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s)`);
}

if (process.env[PIN_ENV] !== undefined || !reexecPinned()) {
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = true;
      cleanUp();
      process.exit(130);
    });
  }
  // Last resort: no server outlives this process (they also exit when their IPC channel closes).
  process.on('exit', cleanUp);
  // Re-executed under taskset: stop when the parent process goes away.
  if (process.channel) {
    process.channel.unref();
    process.on('disconnect', () => {
      cleanUp();
      process.exit(130);
    });
  }
  main().catch((error) => {
    console.error(error);
    cleanUp();
    process.exit(1);
  });
}
