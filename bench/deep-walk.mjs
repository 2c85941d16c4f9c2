// Deep-walk benchmark: what the route guard's check of a client's value costs
// with `resolve: resolveSymlinks` when the value lies thousands of folders
// deep (a client that can make folders can make them that deep: a 4,096-
// character value holds 2,000 of them). The guard's walk is bounded to the
// root, so it looks at each folder in turn; a look-up of each from `/` made
// the walk cost the square of the depth (0.27 s at 2,000 folders), one from
// a folder held open every 32 (walked-folder.ts) makes it linear. Reported:
// the cost per folder at each depth, and its ratio to the cost per folder at
// 100 folders, taken inside each round. Linear keeps that ratio near 1; the
// square would make it 20 at 2,000 folders. The goal is at most 3.
//
// Method: a real tree under a temp folder (removed at the end); every depth
// is timed in each round, in a shuffled order, once warmed up; medians.
// Environment: DEEP_ROUNDS (rounds, 15).
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compileRouteGuard, PermissionPolicy, resolveSymlinks } from '@pathgate/core';
import { envNumber, median, shuffle, table } from './report.mjs';

const ROUNDS = envNumber('DEEP_ROUNDS', 15, 1);
const GOAL = 3;
const BASE_DEPTH = 100;
const DEPTHS = [BASE_DEPTH, 500, 2_000];

const base = realpathSync(mkdtempSync(path.join(tmpdir(), 'pathgate-deep-walk-')));
try {
  const root = `${base}/root`;
  const folders = (count) => Array.from({ length: count }, () => 'd').join('/');
  mkdirSync(`${root}/uploads/${folders(Math.max(...DEPTHS))}`, { recursive: true });
  const policy = new PermissionPolicy({
    root,
    permissions: { fs: ['rw:./uploads/**'] },
    resolve: resolveSymlinks,
  });
  const guard = compileRouteGuard(policy, { mode: 'read', paths: [{ body: 'p' }] }, 'POST /x');

  /** Microseconds for `reps` checks of a value `depth` folders below uploads/. */
  const time = (depth, reps) => {
    const body = { p: `uploads/${folders(depth)}/f.txt` };
    const start = process.hrtime.bigint();
    for (let i = 0; i < reps; i++) {
      if (!guard.checkRequest({ body }, guard.newInfo()).ok) throw new Error(`denied at ${depth}`);
    }
    return Number(process.hrtime.bigint() - start) / 1e3 / reps;
  };
  const reps = (depth) => Math.max(1, Math.round(20_000 / depth));

  for (const depth of DEPTHS) time(depth, 3); // warm-up
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const perFolder = new Map();
    for (const depth of shuffle(DEPTHS)) perFolder.set(depth, time(depth, reps(depth)) / depth);
    rounds.push(perFolder);
  }

  const ratio = (depth) => median(rounds.map((m) => m.get(depth) / m.get(BASE_DEPTH)));
  console.log(`route guard check with resolveSymlinks, ${ROUNDS} rounds, medians`);
  const rows = DEPTHS.map((depth) => [
    depth,
    (median(rounds.map((m) => m.get(depth))) * depth).toFixed(0),
    median(rounds.map((m) => m.get(depth))).toFixed(2),
    ratio(depth).toFixed(2),
  ]);
  console.log(table(['folders', 'µs a check', 'µs a folder', `ratio to ${BASE_DEPTH}`], rows));
  console.log('goals');
  for (const depth of DEPTHS.filter((d) => d !== BASE_DEPTH)) {
    const r = ratio(depth);
    const verdict = r <= GOAL ? 'PASS' : 'FAIL';
    console.log(
      `  ${verdict}  a folder at most ${GOAL}× one at ${BASE_DEPTH} — ${depth}: ${r.toFixed(2)}`,
    );
  }
} finally {
  await rm(base, { recursive: true, force: true });
}
