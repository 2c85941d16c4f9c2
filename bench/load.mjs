// Load check: each example app (examples/fastify-files, examples/express-files,
// the real routes, policy and disk writes) under mixed allowed and denied
// requests, with denied 10 MB multipart uploads running alongside: 20 s of
// warm-up, then 30 s measured, without a pause. Unlike the other benchmarks
// this is a pass/fail check: it exits 1 when any property below fails, and
// `.ci/run` runs it.
//
//   - zero wrong decisions: every answer has the expected status (and, for a
//     403, the expected reason), and allowed answers have the expected body;
//   - zero 5xx, zero timeouts, zero client errors;
//   - RSS in the last 5 s is less than 10% above the high-water mark of the
//     warm-up's second half (RSS swings by about that much on its own as the
//     collector and the allocator size their pools, so a single reading would
//     flip), and the heap after full collections (bench/load-probe.cjs) grows
//     by less than 10% from the end of the warm-up to the end: a leak fails both;
//   - once the load stops, the server's sockets and file descriptors return
//     to what they were before it (read from /proc/<pid>/fd);
//   - nothing is written but the allowed uploads, each intact, and the
//     seeded files are unchanged.
//
// Two load generators run at once. autocannon drives the keep-alive requests.
// A small client of node:http sends the 10 MB uploads: pathgate answers those
// with `Connection: close` while the body is still arriving, and autocannon,
// which reconnects on the close without dropping the request it queued, would
// pair later answers with the wrong requests.
//
// `node bench/load.mjs` checks both examples, `node bench/load.mjs express` one.
// Environment: LOAD_DURATION_S (30), LOAD_WARMUP_S (20), LOAD_CONNECTIONS (8),
// LOAD_UPLOADERS (2).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { request } from './client.mjs';
import { diskProblems, fifths, rssGrowthOf, Tally } from './load-judge.mjs';
import { envNumber, table } from './report.mjs';

const REPO = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const PROBE = path.join(REPO, 'bench', 'load-probe.cjs');
const ADAPTERS = ['fastify', 'express'];
const DURATION_S = envNumber('LOAD_DURATION_S', 30, 1);
const WARMUP_S = envNumber('LOAD_WARMUP_S', 20, 1);
const CONNECTIONS = envNumber('LOAD_CONNECTIONS', 8, 1);
const UPLOADERS = envNumber('LOAD_UPLOADERS', 2, 0);
const BIG = 10 * 1024 * 1024;
const GROWTH_LIMIT = 0.1;
const SETTLE_MS = 10_000; // lingering closes end within 2 s; the rest is slack for a slow machine
const TIMEOUT_S = 10; // autocannon's and the uploaders' wait for an answer

// The sandbox each example gets, as the examples seed it.
const SEED = {
  'public/readme.txt': 'Files in public/ can be read, never written.\n',
  'public/docs/guide.md': '# Guide\n\nAnything below public/ is readable.\n',
  'uploads/hello.txt': 'uploads/ can be read and written.\n',
  'secret.txt': 'Not in the allowlist: pathgate never lets a request reach this file.\n',
};
const UPLOADED = 'pathgate load test upload\n';
const BOUNDARY = '----pathgate-load-9f8e7d6c5b4a';

function multipart(filename, content) {
  const head =
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
    'Content-Type: application/octet-stream\r\n\r\n';
  return Buffer.concat([Buffer.from(head), content, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);
}

const MULTIPART = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
const JSON_TYPE = { 'content-type': 'application/json' };
const denied = (reason) => ({ status: 403, reason });
const ok = (status, check) => ({ status, check });

/**
 * The keep-alive mix autocannon cycles through, with the expected answers.
 * Every denial is decided before the body would matter, so none closes the
 * connection. Allowed uploads get a fresh name each (the examples never
 * overwrite: a reused name would be a 409).
 */
const MIX = [
  {
    name: 'read public file',
    method: 'GET',
    path: '/files/public/readme.txt',
    expect: ok(200, (body) => body === SEED['public/readme.txt']),
  },
  {
    name: 'encoded traversal',
    method: 'GET',
    path: '/files/public/..%2F..%2Fsecret.txt',
    expect: denied('path-not-in-allowlist'),
  },
  {
    name: 'secret outside rules',
    method: 'GET',
    path: '/files/secret.txt',
    expect: denied('path-not-in-allowlist'),
  },
  {
    name: 'list public',
    method: 'GET',
    path: '/api/list?dir=public',
    expect: ok(200, (body) => JSON.parse(body).entries.length === 2),
  },
  {
    name: 'query array traversal',
    method: 'GET',
    path: '/api/list?dir=public&dir=..%2F..%2Fetc',
    expect: denied('path-not-in-allowlist'),
  },
  {
    name: 'delete read-only',
    method: 'DELETE',
    path: '/files/public/readme.txt',
    expect: denied('mode-not-permitted'),
  },
  {
    name: 'move out of root',
    method: 'POST',
    path: '/api/move',
    headers: JSON_TYPE,
    body: JSON.stringify({ from: 'uploads/hello.txt', to: '../../evil.txt' }),
    expect: denied('path-not-in-allowlist'),
  },
  {
    name: 'move into read-only',
    method: 'POST',
    path: '/api/move',
    headers: JSON_TYPE,
    body: JSON.stringify({ from: 'uploads/hello.txt', to: 'public/hello.txt' }),
    expect: denied('mode-not-permitted'),
  },
  {
    name: 'NUL in JSON',
    method: 'POST',
    path: '/api/move',
    headers: JSON_TYPE,
    body: JSON.stringify({ from: 'uploads/hello.txt', to: 'uploads/x\u0000.txt' }),
    expect: denied('nul-byte'),
  },
  {
    name: 'allowed upload',
    method: 'POST',
    path: '/api/upload',
    headers: MULTIPART,
    upload: true,
    expect: ok(201, (body) => JSON.parse(body).size === UPLOADED.length),
  },
];

/** The 10 MB uploads, refused on their filename before a byte is stored. */
const BIG_UPLOADS = [
  {
    name: '10 MB out of root',
    filename: '../../evil.bin',
    expect: denied('path-not-in-allowlist'),
  },
  {
    name: '10 MB over a secret',
    filename: '../secret.txt',
    expect: denied('path-not-in-allowlist'),
  },
  {
    name: '10 MB into read-only',
    filename: '../public/big.bin',
    expect: denied('mode-not-permitted'),
  },
];

/** What the server process holds, from /proc: resident memory, file descriptors, sockets. */
function processState(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
  let fds = 0;
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target = '';
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed while we looked
    }
    fds += 1;
    if (target.startsWith('socket:')) sockets += 1;
  }
  return { rss: rssKb * 1024, fds, sockets };
}

/** Starts an example through tsx on port 0 with the given root; resolves with its pid and port. */
function startExample(adapter, root) {
  const server = path.join(REPO, 'examples', `${adapter}-files`, 'server.ts');
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--require', PROBE, '--import', 'tsx', server, '--root', root, '--port', '0'],
    {
      cwd: REPO,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${adapter} example did not start: ${output}`)),
      30_000,
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${adapter} example exited with ${code}: ${output}`));
    });
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1];
      if (port === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({ child, pid: child.pid, port: Number(port) });
    });
  });
}

/** The example's memory after two full collections (bench/load-probe.cjs). */
function memoryAfterGc(child) {
  return new Promise((resolve, reject) => {
    let line = '';
    const timer = setTimeout(() => reject(new Error('no memory report within 10 s')), 10_000);
    const read = (chunk) => {
      line += chunk;
      const json = /pathgate-load-memory (\{.*\})\n/.exec(line)?.[1];
      if (json === undefined) return;
      clearTimeout(timer);
      child.stdout.off('data', read);
      resolve(JSON.parse(json));
    };
    child.stdout.on('data', read);
    child.kill('SIGUSR2');
  });
}

function stopExample(child) {
  if (child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
}

let uploadCount = 0;
const uploadName = () => `load-${process.pid}-${++uploadCount}.txt`;

/** autocannon's request list: the mix, each answer checked as it arrives. */
function autocannonRequests(tally) {
  return MIX.map((entry) => ({
    method: entry.method,
    path: entry.path,
    headers: entry.headers,
    body: entry.body,
    ...(entry.upload && {
      setupRequest: (req) => ({ ...req, body: multipart(uploadName(), Buffer.from(UPLOADED)) }),
    }),
    onResponse: (status, body, _context, headers) => {
      if (String(headers?.connection).toLowerCase() === 'close') {
        tally.record(entry.name, { status: -1 }, status, 'closed a keep-alive connection');
      } else tally.record(entry.name, entry.expect, status, body);
    },
  }));
}

/** Sends denied 10 MB uploads one after the other until `deadline`. */
async function uploader(port, tally, deadline, errors) {
  const filler = Buffer.alloc(BIG, 0x61);
  for (let i = 0; Date.now() < deadline; i += 1) {
    const big = BIG_UPLOADS[i % BIG_UPLOADS.length];
    const body = multipart(big.filename, filler);
    try {
      const got = await request(
        port,
        {
          method: 'POST',
          path: '/api/upload',
          headers: { ...MULTIPART, 'content-length': String(body.length) },
          body,
        },
        TIMEOUT_S * 1000,
      );
      tally.record(big.name, big.expect, got.status, got.body);
    } catch (error) {
      errors.push(`${big.name}: ${error.message}`);
    }
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The load, without a pause: WARMUP_S of warm-up, then DURATION_S measured;
 * autocannon and the uploaders together, RSS sampled every 250 ms. The heap
 * is read after full collections twice under the same load: as the warm-up
 * ends, and 2 s before the load does.
 */
async function load(port, child, tally) {
  const errors = [];
  const samples = [];
  const sampler = setInterval(() => samples.push(processState(child.pid).rss), 250);
  const seconds = WARMUP_S + DURATION_S;
  const deadline = Date.now() + seconds * 1000;
  const memoryWarm = sleep(WARMUP_S * 1000).then(() => memoryAfterGc(child));
  const memoryEnd = sleep((seconds - 2) * 1000).then(() => memoryAfterGc(child));
  const uploads = Array.from({ length: UPLOADERS }, () => uploader(port, tally, deadline, errors));
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: seconds,
    timeout: TIMEOUT_S,
    requests: autocannonRequests(tally),
  });
  await Promise.all(uploads);
  clearInterval(sampler);
  const warmSamples = Math.round(WARMUP_S * 4);
  return {
    result,
    errors,
    warmup: samples.slice(0, warmSamples),
    run: samples.slice(warmSamples),
    memoryWarm: await memoryWarm,
    memoryEnd: await memoryEnd,
  };
}

/** Polls until the server holds no more sockets and fds than `baseline`, or SETTLE_MS passed. */
async function settle(pid, baseline) {
  const until = Date.now() + SETTLE_MS;
  let state = processState(pid);
  while (Date.now() < until && (state.sockets > baseline.sockets || state.fds > baseline.fds)) {
    await sleep(200);
    state = processState(pid);
  }
  return state;
}

/** Every file under `dir` with its sha256, by path relative to `dir`. */
function tree(dir, base = dir, files = new Map()) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) tree(full, base, files);
    else files.set(path.relative(base, full), sha256(readFileSync(full)));
  }
  return files;
}

const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const sameTree = (a, b) => a.size === b.size && [...a].every(([file, sha]) => b.get(file) === sha);

/**
 * The tree once it stops changing: a request cut off as the load stopped may
 * still be finishing (an upload removing its `.part`). Two walks 500 ms apart
 * must agree; a file vanishing mid-walk means another walk.
 */
async function settledTree(dir) {
  const until = Date.now() + SETTLE_MS;
  let last;
  while (true) {
    let now;
    try {
      now = tree(dir);
    } catch (error) {
      if (error.code !== 'ENOENT') throw error;
    }
    if (now && last && sameTree(now, last)) return now;
    if (Date.now() > until) return now ?? tree(dir);
    last = now;
    await sleep(500);
  }
}

/** What the sandbox's parent folder holds beyond the seed and the allowed uploads. */
async function writtenProblems(top, uploaded) {
  const seeded = new Map(
    Object.entries(SEED).map(([file, text]) => [path.join('sandbox', file), sha256(text)]),
  );
  const upload = { name: /^sandbox\/uploads\/load-\d+-\d+\.txt$/, sha: sha256(UPLOADED) };
  // A load can end with an allowed upload stored but its answer not yet read: one per connection.
  return diskProblems(await settledTree(top), seeded, upload, [uploaded, uploaded + CONNECTIONS]);
}

/** Each request kind once, before any load: the set-up must give every expected answer. */
async function validate(port) {
  const tally = new Tally();
  for (const entry of MIX) {
    const body = entry.upload ? multipart(uploadName(), Buffer.from(UPLOADED)) : entry.body;
    const got = await request(port, { ...entry, body });
    tally.record(entry.name, entry.expect, got.status, got.body);
  }
  const big = BIG_UPLOADS[0];
  const got = await request(port, {
    method: 'POST',
    path: '/api/upload',
    headers: MULTIPART,
    body: multipart(big.filename, Buffer.alloc(BIG)),
  });
  tally.record(big.name, big.expect, got.status, got.body);
  if (tally.wrongCount > 0) throw new Error(`set-up is wrong: ${tally.wrong.join('; ')}`);
  return tally.uploaded;
}

async function check(adapter) {
  const top = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'pathgate-load-')));
  const root = path.join(top, 'sandbox');
  for (const [file, text] of Object.entries(SEED)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const { child, pid, port } = await startExample(adapter, root);
  try {
    const started = processState(pid);
    let uploaded = await validate(port);
    // The baseline: idle after every route ran once (opening what opens lazily, once).
    const idle = await settle(pid, { sockets: started.sockets, fds: Number.POSITIVE_INFINITY });
    const tally = new Tally();
    const loaded = await load(port, child, tally);
    const after = await settle(pid, idle);
    uploaded += tally.uploaded;
    return { adapter, tally, loaded, idle, after, written: await writtenProblems(top, uploaded) };
  } finally {
    await stopExample(child);
    rmSync(top, { recursive: true, force: true });
  }
}

function report(run) {
  const { adapter, tally, loaded, idle, after, written } = run;
  const { result, errors, memoryWarm, memoryEnd } = loaded;
  const { highWater, end, growth: rssGrowth } = rssGrowthOf(loaded.warmup, loaded.run);
  const heapGrowth = memoryEnd.heapUsed / memoryWarm.heapUsed - 1;
  const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  const pct = (ratio) => `${(ratio * 100).toFixed(1)}%`;
  console.log(
    `\n${adapter}: ${WARMUP_S} s of warm-up, then ${DURATION_S} s; ${CONNECTIONS} keep-alive connections (autocannon) + ${UPLOADERS} uploaders of 10 MB`,
  );
  console.log(
    table(
      ['request', 'answers', 'wrong'],
      [...tally.byKind].map(([kind, { right, wrong }]) => [
        kind,
        String(right + wrong),
        String(wrong),
      ]),
    ),
  );
  console.log(
    `autocannon: ${result.requests.total} requests, ${Math.round(result.requests.average)} req/s, p99 latency ${result.latency.p99} ms, ${result.timeouts} timeouts, ${result.errors} errors`,
  );
  console.log(`RSS, each fifth of the warm-up: ${fifths(loaded.warmup).map(mb).join(', ')}`);
  console.log(`RSS, each fifth of the run: ${fifths(loaded.run).map(mb).join(', ')}`);
  console.log(
    `RSS: warm-up high-water ${mb(highWater)}, last 5 s ${mb(end)} (${pct(rssGrowth)}); heap after full GCs ${mb(memoryWarm.heapUsed)} → ${mb(memoryEnd.heapUsed)} (${pct(heapGrowth)})`,
  );
  console.log(
    `idle before: ${idle.fds} fds, ${idle.sockets} sockets; after: ${after.fds} fds, ${after.sockets} sockets`,
  );
  const props = [
    [
      tally.wrongCount === 0,
      'zero wrong decisions',
      `${tally.wrongCount} wrong of ${tally.total}${tally.wrong.map((w) => `\n        ${w}`).join('')}`,
    ],
    [tally.fivexx === 0, 'zero 5xx', `${tally.fivexx}`],
    [
      result.timeouts === 0 && result.errors === 0,
      'no hung or failed keep-alive connections',
      `${result.timeouts} timeouts, ${result.errors} errors`,
    ],
    [
      errors.length === 0,
      'every 10 MB upload answered',
      errors.slice(0, 5).join('; ') || '0 failures',
    ],
    [rssGrowth < GROWTH_LIMIT, `RSS growth < ${GROWTH_LIMIT * 100}% after warm-up`, pct(rssGrowth)],
    [
      heapGrowth < GROWTH_LIMIT,
      `heap after full GCs grows < ${GROWTH_LIMIT * 100}%`,
      pct(heapGrowth),
    ],
    [
      after.fds <= idle.fds && after.sockets <= idle.sockets,
      'fds and sockets back to baseline',
      `${after.fds}/${idle.fds} fds, ${after.sockets}/${idle.sockets} sockets`,
    ],
    [
      written.length === 0,
      'nothing written but the allowed uploads',
      written.slice(0, 5).join('; ') || 'clean',
    ],
  ];
  for (const [pass, what, detail] of props)
    console.log(`  ${pass ? 'PASS' : 'FAIL'}  ${adapter}: ${what} — ${detail}`);
  return props.every(([pass]) => pass);
}

const chosen = process.argv.slice(2);
const adapters = chosen.length === 0 ? ADAPTERS : chosen;
for (const adapter of adapters) {
  if (!ADAPTERS.includes(adapter)) {
    console.error(`usage: node bench/load.mjs [${ADAPTERS.join('|')}]…`);
    process.exit(2);
  }
}
console.log(`pathgate load check — node ${process.version}, ${os.cpus().length} CPUs`);
let allPass = true;
for (const adapter of adapters) allPass = report(await check(adapter)) && allPass;
process.exitCode = allPass ? 0 : 1;
