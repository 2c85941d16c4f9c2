// Hook-cost benchmark: what pathgate's own hook costs inside a real server,
// next to the hand-written check, on the same requests. Every request to
// bench/hook-cost-server.mjs runs an empty function, the hand-written
// path.resolve + startsWith check and pathgate's real hook one after the
// other (the order rotating), each timed. Both checks therefore see the same
// request, the same process, the same caches and the same moment of the
// machine's drift: the per-process and per-moment noise that dominates
// bench/http.mjs cancels out of their ratio.
//
// It answers a narrower question than http.mjs: the time spent inside the
// hook, not what the hook costs the whole server (garbage collection of what
// it allocates, caches it evicts, hooks Fastify runs around it). It is a
// report: it exits 0 unless the set-up is wrong.
//
// `node bench/hook-cost.mjs` runs both frameworks, `node bench/hook-cost.mjs
// express` one. Environment: HOOK_PROCESSES (fresh server processes per
// framework and route, default 5), HOOK_WARMUP (requests before timing,
// 20000), HOOK_REQUESTS (timed requests per process, 20000), HOOK_EVICT_MB
// (0: warm caches; 16: each check starts on evicted caches, see the server).
import { fork } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { request } from './client.mjs';
import { envNumber, shuffle, summary, table } from './report.mjs';
import { ROUTES } from './routes.mjs';
import { serverReady } from './server-ready.mjs';

const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'hook-cost-server.mjs');
const FRAMEWORKS = ['fastify', 'express'];
const PROCESSES = envNumber('HOOK_PROCESSES', 5, 1);
const WARMUP = envNumber('HOOK_WARMUP', 20_000, 0);
const REQUESTS = envNumber('HOOK_REQUESTS', 20_000, 100);
const EVICT_MB = envNumber('HOOK_EVICT_MB', 0, 0); // read by the servers, from the environment
const CONNECTIONS = 4;

const live = new Set();

async function startServer(framework) {
  const child = fork(SERVER, [framework], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  live.add(child);
  child.on('exit', () => live.delete(child));
  return { child, port: await serverReady(child, framework) };
}

const ask = (child, type) =>
  new Promise((resolve) => {
    child.once('message', resolve);
    child.send({ type });
  });

/** The allowed request passes all three checks; the traversal is answered 403 by pathgate's hook. */
async function validate(framework, port, route) {
  const allowed = await request(port, route.allowed);
  if (allowed.status !== 200) {
    throw new Error(`${framework} ${route.label}: want 200, got ${allowed.status} ${allowed.body}`);
  }
  const traversal = await request(port, route.traversal);
  if (traversal.status !== 403 || typeof JSON.parse(traversal.body).reason !== 'string') {
    throw new Error(
      `${framework} ${route.label} traversal: want pathgate's 403, got ${traversal.status}`,
    );
  }
}

/** `amount` allowed requests; any other status than 200 stops the run. */
async function load(port, route, amount) {
  if (amount === 0) return;
  const { method, path: requestPath, headers, body } = route.allowed;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}${requestPath}`,
    method,
    headers,
    body,
    connections: CONNECTIONS,
    amount,
  });
  const non200 = result.non2xx + result.errors + result.timeouts;
  if (non200 > 0) throw new Error(`${route.label}: ${non200} requests failed under load`);
}

/** One fresh server: validated, warmed, then REQUESTS timed. Returns ns per call of each check. */
async function oneProcess(framework, route) {
  const { child, port } = await startServer(framework);
  try {
    await validate(framework, port, route);
    await load(port, route, WARMUP);
    await ask(child, 'reset');
    await load(port, route, REQUESTS);
    const report = await ask(child, 'report');
    if (report.problem) throw new Error(`${framework} ${route.label}: ${report.problem}`);
    return report.ns;
  } finally {
    child.kill();
  }
}

const fmt = (value, digits = 0) => value.toFixed(digits);
const cell = (values, digits) => {
  const { median, p25, p75 } = summary(values);
  return [fmt(median, digits), `${fmt(p25, digits)}–${fmt(p75, digits)}`];
};

async function main() {
  const wanted = process.argv.slice(2);
  const frameworks = wanted.length > 0 ? FRAMEWORKS.filter((f) => wanted.includes(f)) : FRAMEWORKS;
  if (frameworks.length === 0) {
    console.error(`usage: node bench/hook-cost.mjs [${FRAMEWORKS.join('|')}]…`);
    process.exit(2);
  }
  console.log(
    `pathgate hook-cost benchmark — node ${process.version}; ${PROCESSES} fresh server processes ` +
      `per framework and route, each warmed with ${WARMUP} requests, then ${REQUESTS} timed ` +
      `(${CONNECTIONS} connections). Per request: an empty function, the hand-written check and ` +
      `pathgate's hook, in rotating order, each timed with process.hrtime; the empty call's time ` +
      'is subtracted from the other two. ' +
      (EVICT_MB > 0
        ? `Caches evicted (${EVICT_MB} MB written) before each check.\n`
        : 'Warm caches (HOOK_EVICT_MB=16 evicts them before each check).\n'),
  );
  const samples = [];
  for (let i = 0; i < PROCESSES; i++) {
    for (const framework of frameworks) {
      for (const route of shuffle(ROUTES)) {
        samples.push({ framework, route: route.label, ns: await oneProcess(framework, route) });
      }
    }
  }
  const rows = [];
  for (const framework of frameworks) {
    for (const route of ROUTES) {
      const mine = samples.filter((s) => s.framework === framework && s.route === route.label);
      const hand = mine.map((s) => s.ns.hand - s.ns.empty);
      const guarded = mine.map((s) => s.ns.pathgate - s.ns.empty);
      const ratio = guarded.map((g, i) => g / hand[i]);
      rows.push([
        `${framework} ${route.label}`,
        ...cell(hand),
        ...cell(guarded),
        ...cell(ratio, 2),
        fmt(summary(mine.map((s) => s.ns.empty)).median),
      ]);
    }
  }
  const headers = ['route', 'hand ns', 'p25–p75', 'pathgate ns', 'p25–p75', 'pathgate/hand'];
  console.log(table([...headers, 'p25–p75', 'timer ns'], rows));
  console.log(
    "\nMedians over the processes of each one's mean ns per call; pathgate/hand below 1 means " +
      "pathgate's hook took less time than the hand-written check.",
  );
}

const stopAll = () => {
  for (const child of live) child.kill('SIGKILL');
};
process.on('SIGINT', () => {
  stopAll();
  process.exit(130);
});
try {
  await main();
} catch (error) {
  console.error(error.message);
  process.exitCode = 1;
} finally {
  stopAll();
}
