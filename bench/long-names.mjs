// Long-names benchmark: what `checkFs` costs on a name an attacker made long
// (a 1 MB JSON value, a 100 KB one), under rules whose segments hold `?` or
// classes over five brace alternatives, beside the same name under a rule of
// `*` and literals only (a native string search reads it). A class is tested
// in JavaScript, code point by code point, so tens of times the search is
// expected; a matcher whose work grew with the rule's length times the
// name's (a table per alternative, as before 2026-12-03) read 570–790×. The
// goal is at most 50×.
//
// Method: every variant is timed in each round, in a shuffled order, once
// warmed up; the ratios are taken inside a round (the machine drifts between
// rounds) and their medians reported.
import { checkFs, PermissionPolicy } from '@pathgate/core';
import { median, shuffle, table } from './report.mjs';

const ROUNDS = 15;
const GOAL = 50;
const DIRS = '{a,b,c,d}';
const EXTS = '{png,jpg,jpeg,gif,webp}';
/** Each denies the names below after reading them: a `y`, or a letter, looked for in vain. */
const RULES = {
  star: `rw:./up/${DIRS}/IMG_*y*.${EXTS}`,
  classes: `rw:./up/${DIRS}/IMG_[0-9][0-9][0-9][0-9].${EXTS}`,
  'classes and *': `rw:./up/${DIRS}/IMG_[0-9]*[a-z]*.${EXTS}`,
};
/** Names that pass each rule's literal ends and first class. */
const NAMES = {
  '1 MB': `up/a/IMG_0${'7'.repeat(1_000_000)}.png`,
  '100 KB': `up/a/IMG_0${'7'.repeat(100_000)}.png`,
};

const policies = Object.fromEntries(
  Object.entries(RULES).map(([id, rule]) => [
    id,
    new PermissionPolicy({ root: '/srv', permissions: { fs: [rule] } }),
  ]),
);
const variants = Object.keys(RULES).flatMap((rule) =>
  Object.keys(NAMES).map((name) => ({ rule, name })),
);

function time({ rule, name }) {
  const start = process.hrtime.bigint();
  const result = checkFs(policies[rule], NAMES[name], 'write');
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.outcome !== 'deny') throw new Error(`${rule} allowed the ${name} name`);
  return ms;
}

for (const v of variants) for (let i = 0; i < 3; i++) time(v); // warm-up
const rounds = [];
for (let r = 0; r < ROUNDS; r++) {
  const ms = new Map();
  for (const v of shuffle(variants)) ms.set(`${v.rule}|${v.name}`, time(v));
  rounds.push(ms);
}

const cell = (rule, name) => median(rounds.map((ms) => ms.get(`${rule}|${name}`)));
const ratio = (rule, name) =>
  median(rounds.map((ms) => ms.get(`${rule}|${name}`) / ms.get(`star|${name}`)));
console.log(`checkFs on long names, ${ROUNDS} rounds, medians (ms; ratio to the * rule)`);
const rows = variants.map(({ rule, name }) => [
  rule,
  name,
  cell(rule, name).toFixed(2),
  ratio(rule, name).toFixed(2),
]);
console.log(table(['rule', 'name', 'ms', 'ratio'], rows));
console.log('goals');
for (const [rule, name, , r] of rows.filter(([rule]) => rule !== 'star')) {
  const ok = Number(r) <= GOAL;
  console.log(`  ${ok ? 'PASS' : 'FAIL'}  at most ${GOAL}× the * rule — ${rule}, ${name}: ${r}`);
}
