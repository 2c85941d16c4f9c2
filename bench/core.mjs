// Core benchmark: what one `checkFs(policy, path, 'read')` costs with 10,
// 1,000 and 10,000 rules, beside the naive floor (`path.posix.resolve` plus a
// prefix test) and beside a picomatch loop over the same rules, and on a plain
// path under a policy of directory rules only. Prints a table,
// the ratios and a "goals" section; it is a report, so it always exits 0
// unless the set-up itself is wrong (then the numbers would mean nothing).
//
// Method (see bench/README.md): warm every variant up, then run many short
// rounds; in each, every variant is timed in a shuffled order (three passes,
// its fastest batch kept); report medians of ns/op and medians of the
// per-round ratios. The machine's speed drifts for seconds at a time and a
// round lasts about a tenth of a second, so ratios taken inside one round
// cancel most of the drift. Environment: CORE_ROUNDS (recorded rounds, 41).
import os from 'node:os';
import path from 'node:path';
import { checkFs, PermissionPolicy } from '@pathgate/core';
import picomatch from 'picomatch';
import { envNumber, median, shuffle, summary, table } from './report.mjs';

const ROOT = '/srv/sandbox';
const ROOT_SLASH = `${ROOT}/`;
const SIZES = [10, 1_000, 10_000];
const ROUNDS = envNumber('CORE_ROUNDS', 41, 1);
const PASSES = 3;
const WARMUP_ROUNDS = 7;
const WARMUP_MS = 150;
const BATCH_NS = 2e6; // a batch of calls lasts ~2 ms: far above timer noise, short enough to dodge drift

// The sample paths. MISS lies in a directory that holds rules (the trie walk
// reaches /srv/sandbox/d42/sub3 and tests its rules) but matches none. They are
// built at run time, as a request parser builds them: a source literal is an
// internalized string, for which V8 caches `split` results, which requests never get.
const MATCH = requestString('./d42/sub3/quarterly-report.txt');
const MISS = requestString('./d42/sub3/quarterly-report.bin');
const LONG = requestString(longPath(500));
// A plain value (no `./`, `..` or dotfile) under a policy of directory rules only: what
// most routes see, decided on the text itself (packages/core/src/prefix-rules.ts).
const PLAIN = requestString('d42/sub3/quarterly-report.txt');
const SAMPLES = { match: MATCH, miss: MISS, long: LONG, plain: PLAIN };
// Combining marks out of canonical order, 1,000 then 2,000 of them: doubling the
// run should double the cost (String#normalize alone reorders them in quadratic time).
const MARKS_1K = requestString(marksPath(1000));
const MARKS_2K = requestString(marksPath(2000));
const DIRECTORY_RULES = ['./d42/**', 'rw:./uploads/*', './public/**'];

// Present in every policy, so every size answers the sample paths alike.
const ANCHORS = ['./d42/sub3/*.txt', 'rw:./d42/sub3/*.{csv,json}', './d42/deep/**/*.txt'];

let sink = 0; // every batch adds its results here so V8 cannot drop the calls

/** A fresh, flat, non-internalized copy of `text`, like a string decoded from a request. */
function requestString(text) {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/** A file name of `count` marks, each U+0323 after every U+0301: the order ICU moves most. */
function marksPath(count) {
  return `d42/sub3/a${'\u0301'.repeat(count / 2)}${'\u0323'.repeat(count / 2)}.txt`;
}

/** A relative path whose canonical form is exactly `length` characters: ~50 segments below d42/deep. */
function longPath(length) {
  const parts = ['d42', 'deep'];
  const canonicalLength = () => ROOT.length + 1 + parts.join('/').length;
  while (canonicalLength() < length - 20) parts.push(`level-${parts.length}`);
  const room = length - canonicalLength() - 1 - '.txt'.length;
  parts.push(`${'f'.repeat(room)}.txt`);
  return `./${parts.join('/')}`;
}

/** Filler rule `j`: 1,000 directories × 10 sub-directories, ten rule shapes, none under d42/sub3 or d42/deep. */
function fillerRule(j) {
  const d = j % 1000;
  const s = Math.floor(j / 1000) % 10;
  const shapes = [
    `./d${d}/sub${s}/*.txt`,
    `./d${d}/cache${s}/**`,
    `rw:./uploads/u${j}/*.png`,
    `./d${d}/sub${s}/*.md`,
    `r:./d${d}/sub${s}/notes-?.txt`,
    `rw:./d${d}/tmp${s}/*`,
    `./d${d}/sub${s}/[a-c]*.log`,
    `./d${d}/sub${s}/*.{csv,json}`,
    `./d${d}/docs${s}/**/*.pdf`,
    `./d${d}/sub${s}/report-*.txt`,
  ];
  return shapes[(d + s) % 10];
}

/** `size` rules: fillers with the anchors spliced into the middle (picomatch's `some` scans half on a match). */
function makeRules(size) {
  const fillers = Array.from({ length: size - ANCHORS.length }, (_, j) => fillerRule(j));
  const half = Math.floor(fillers.length / 2);
  return [...fillers.slice(0, half), ...ANCHORS, ...fillers.slice(half)];
}

/** The same rule as a picomatch glob: mode prefix dropped, relative globs joined to the root. */
function toPicomatchGlob(rule) {
  const glob = rule.replace(/^(?:rw|r):/, '');
  return glob.startsWith('/') ? glob : path.posix.join(ROOT, glob);
}

function floor(p) {
  const resolved = path.posix.resolve(ROOT, p);
  return resolved.startsWith(ROOT_SLASH) ? resolved : undefined;
}

function picomatchAllows(matchers, p) {
  const resolved = path.posix.resolve(ROOT, p);
  return matchers.some((m) => m(resolved));
}

// One loop function per kind, so each call site in a loop stays monomorphic.
const checkLoop = (policy, p) => (n) => {
  let acc = 0;
  for (let i = 0; i < n; i++) acc += checkFs(policy, p, 'read').outcome.length;
  return acc;
};

const floorLoop = (p) => (n) => {
  let acc = 0;
  for (let i = 0; i < n; i++) acc += floor(p)?.length ?? 0;
  return acc;
};

const picomatchLoop = (matchers, p) => (n) => {
  let acc = 0;
  for (let i = 0; i < n; i++) acc += picomatchAllows(matchers, p) ? 1 : 0;
  return acc;
};

/** Wall time of one set-up step, for information only (one shot, not a median). */
function timed(build) {
  const start = process.hrtime.bigint();
  const value = build();
  return { value, ms: Number(process.hrtime.bigint() - start) / 1e6 };
}

function buildFixtures() {
  return SIZES.map((size) => {
    const rules = makeRules(size);
    const policy = timed(() => new PermissionPolicy({ root: ROOT, permissions: { fs: rules } }));
    const matchers = timed(() => rules.map((r) => picomatch(toPicomatchGlob(r))));
    return {
      size,
      policy: policy.value,
      matchers: matchers.value,
      policyMs: policy.ms,
      picoMs: matchers.ms,
    };
  });
}

/** Refuses to time anything unless both sides give the expected answers on the sample paths. */
function validate(fixtures) {
  const plain = checkFs(directoryPolicy, PLAIN, 'read');
  if (plain.outcome !== 'allow' || plain.path !== floor(PLAIN)) {
    throw new Error(`directory rules, ${PLAIN}: checkFs ${plain.outcome}, want allow`);
  }
  for (const p of [MARKS_1K, MARKS_2K]) {
    const result = checkFs(directoryPolicy, p, 'read');
    if (result.outcome !== 'allow' || result.path !== floor(p.normalize('NFC'))) {
      throw new Error(`directory rules, ${p.length} marks: checkFs ${result.outcome}, want allow`);
    }
  }
  const expected = { [MATCH]: 'allow', [MISS]: 'path-not-in-allowlist', [LONG]: 'allow' };
  for (const { size, policy, matchers } of fixtures) {
    for (const [p, want] of Object.entries(expected)) {
      const result = checkFs(policy, p, 'read');
      const got = result.outcome === 'allow' ? 'allow' : result.reason;
      const pico = picomatchAllows(matchers, p) ? 'allow' : 'path-not-in-allowlist';
      // `path` is an optional field of a result: compared with the floor's when present.
      const canonicalOk = result.path === undefined || result.path === floor(p);
      if (got !== want || pico !== want || !canonicalOk) {
        throw new Error(`${size} rules, ${p}: checkFs ${got}, picomatch ${pico}, want ${want}`);
      }
    }
  }
}

const directoryPolicy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: DIRECTORY_RULES },
});

function makeVariants(fixtures) {
  const variants = [];
  const add = (id, kind, rules, sample, run) =>
    variants.push({ id, kind, rules, sample, run, n: 1 });
  for (const [name, p] of Object.entries(SAMPLES)) {
    add(`floor/${name}`, 'floor', '—', name, floorLoop(p));
  }
  // The long path goes through the largest policy only: past the trie, rule count does not matter.
  for (const { size, policy, matchers } of fixtures) {
    for (const [name, p] of [
      ['match', MATCH],
      ['miss', MISS],
    ]) {
      add(`checkFs/${size}/${name}`, 'checkFs', size, name, checkLoop(policy, p));
      add(`picomatch/${size}/${name}`, 'picomatch', size, name, picomatchLoop(matchers, p));
    }
  }
  const largest = fixtures[fixtures.length - 1];
  add('checkFs/long', 'checkFs', largest.size, 'long', checkLoop(largest.policy, LONG));
  const dirs = `${DIRECTORY_RULES.length} dirs`;
  add('checkFs/dirs/plain', 'checkFs', dirs, 'plain', checkLoop(directoryPolicy, PLAIN));
  add('checkFs/dirs/marks1k', 'checkFs', dirs, 'marks1k', checkLoop(directoryPolicy, MARKS_1K));
  add('checkFs/dirs/marks2k', 'checkFs', dirs, 'marks2k', checkLoop(directoryPolicy, MARKS_2K));
  return variants;
}

/** ns per call of one batch of `variant.n` calls. */
function timeBatch(variant) {
  const start = process.hrtime.bigint();
  sink += variant.run(variant.n);
  return Number(process.hrtime.bigint() - start) / variant.n;
}

/** Runs a variant for WARMUP_MS, growing its batch until one batch lasts about BATCH_NS. */
function warmUp(variant) {
  const end = process.hrtime.bigint() + BigInt(WARMUP_MS * 1e6);
  while (process.hrtime.bigint() < end) {
    const ns = timeBatch(variant) * variant.n;
    variant.n = Math.max(1, Math.round((variant.n * BATCH_NS) / Math.max(ns, 1)));
  }
}

/**
 * One round: PASSES shuffled passes over every variant (so no variant always
 * runs after the same neighbour); a variant's time for the round is its fastest
 * pass, which drops the batches that another process's time slice landed in.
 */
function round(variants) {
  const nsPerOp = {};
  for (let pass = 0; pass < PASSES; pass++) {
    for (const v of shuffle(variants)) {
      const ns = timeBatch(v);
      nsPerOp[v.id] = Math.min(ns, nsPerOp[v.id] ?? ns);
    }
  }
  return nsPerOp;
}

/** Sizes each batch from the median of the unrecorded rounds: one slow moment cannot skew it. */
function calibrate(variants, rounds) {
  for (const v of variants)
    v.n = Math.max(1, Math.round(BATCH_NS / median(rounds.map((r) => r[v.id]))));
}

function measure(variants) {
  for (const v of variants) warmUp(v);
  // Unrecorded rounds: every variant has now run after every other, so V8's feedback is settled.
  const unrecorded = Array.from({ length: WARMUP_ROUNDS }, () => round(variants));
  calibrate(variants, unrecorded);
  return Array.from({ length: ROUNDS }, () => round(variants));
}

// The ratios are taken per round, then summarised: numerator and denominator ran in the same round.
const perSample = (group, num, den) =>
  ['match', 'miss'].map((p) => ({
    group,
    id: `${group}, ${p}`,
    num: `${num}/${p}`,
    den: `${den}/${p}`,
  }));

const RATIOS = [
  ...perSample('checkFs(10)/floor', 'checkFs/10', 'floor'),
  ...perSample('checkFs(10k)/checkFs(10)', 'checkFs/10000', 'checkFs/10'),
  ...perSample('picomatch(10k)/checkFs(10k)', 'picomatch/10000', 'checkFs/10000'),
  { group: '500', id: 'checkFs(500 chars)/floor', num: 'checkFs/long', den: 'floor/long' },
  {
    group: 'dirs',
    id: 'checkFs(directory rules)/floor',
    num: 'checkFs/dirs/plain',
    den: 'floor/plain',
  },
  {
    group: 'marks',
    id: 'checkFs(2,000 marks)/checkFs(1,000 marks)',
    num: 'checkFs/dirs/marks2k',
    den: 'checkFs/dirs/marks1k',
  },
];

// Each goal is judged on the median ratio of every sample path of its group.
const GOALS = [
  { group: 'checkFs(10)/floor', text: '10 rules ≤ 0.5× floor', ok: (r) => r <= 0.5 },
  { group: 'checkFs(10k)/checkFs(10)', text: '10k rules ≤ 1.2× 10 rules', ok: (r) => r <= 1.2 },
  {
    group: 'picomatch(10k)/checkFs(10k)',
    text: '10k rules ≥ 5,000× faster than picomatch',
    ok: (r) => r >= 5000,
  },
  { group: '500', text: '500-char path under the floor', ok: (r) => r < 1 },
  { group: 'marks', text: 'twice the marks ≤ 2.5× the cost (linear)', ok: (r) => r <= 2.5 },
];

function ratioSummaries(rounds) {
  const out = {};
  for (const { id, num, den } of RATIOS) out[id] = summary(rounds.map((r) => r[num] / r[den]));
  return out;
}

const fmtNs = (ns) => (ns >= 1e5 ? ns.toExponential(2) : ns.toFixed(ns >= 100 ? 0 : 1));
const fmtRatio = (r) => (r >= 100 ? r.toFixed(0) : r.toFixed(r >= 10 ? 1 : 3));

function printHeader(fixtures, variants) {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  console.log(`pathgate core benchmark — node ${process.version}, ${cpu} ×${os.cpus().length}`);
  console.log(
    `${ROUNDS} rounds × ${PASSES} passes × ${variants.length} variants, batches of ~${BATCH_NS / 1e6} ms`,
  );
  const lengths = [MATCH, MISS, LONG, PLAIN].map((p) => floor(p).length).join(' / ');
  console.log(`canonical path lengths (match / miss / long / plain): ${lengths}`);
  for (const f of fixtures) {
    console.log(
      `  ${f.size} rules: policy built in ${f.policyMs.toFixed(1)} ms, picomatch in ${f.picoMs.toFixed(1)} ms`,
    );
  }
  console.log('');
}

function printTimes(variants, rounds) {
  const rows = variants.map((v) => {
    const s = summary(rounds.map((r) => r[v.id]));
    return [v.kind, v.rules, v.sample, fmtNs(s.median), `${fmtNs(s.p25)}–${fmtNs(s.p75)}`, v.n];
  });
  console.log(table(['variant', 'rules', 'path', 'median ns/op', 'p25–p75', 'calls/batch'], rows));
  console.log('');
}

function printRatios(ratios) {
  const rows = RATIOS.map(({ id }) => {
    const s = ratios[id];
    return [id, fmtRatio(s.median), `${fmtRatio(s.p25)}–${fmtRatio(s.p75)}`];
  });
  console.log(table(['ratio (median of per-round ratios)', 'median', 'p25–p75'], rows));
  console.log('');
}

function printGoals(ratios) {
  console.log('goals');
  for (const goal of GOALS) {
    for (const { id } of RATIOS.filter((r) => r.group === goal.group)) {
      const value = ratios[id].median;
      console.log(
        `  ${goal.ok(value) ? 'PASS' : 'FAIL'}  ${goal.text} — ${id}: ${fmtRatio(value)}`,
      );
    }
  }
}

function main() {
  const fixtures = buildFixtures();
  validate(fixtures);
  const variants = makeVariants(fixtures);
  const rounds = measure(variants);
  printHeader(fixtures, variants);
  printTimes(variants, rounds);
  const ratios = ratioSummaries(rounds);
  printRatios(ratios);
  printGoals(ratios);
  // Printed so the sink is observably used; its value has no meaning.
  console.log(`\n(result sink ${sink})`);
}

main();
