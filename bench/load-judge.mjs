// The judging half of bench/load.mjs, without I/O, so tests can show that
// each property fails when it should: answers, RSS growth, files on disk.
import { median } from './report.mjs';

/** Tallies answers per request kind: what was right, what was wrong and why. */
export class Tally {
  constructor() {
    this.byKind = new Map();
    this.wrong = [];
    this.fivexx = 0;
    this.uploaded = 0;
  }

  record(kind, expect, status, body) {
    const count = this.byKind.get(kind) ?? { right: 0, wrong: 0 };
    this.byKind.set(kind, count);
    if (status >= 500) this.fivexx += 1;
    const problem = judge(expect, status, body);
    if (problem === undefined) {
      count.right += 1;
      if (status === 201) this.uploaded += 1;
      return;
    }
    count.wrong += 1;
    if (this.wrong.length < 10) this.wrong.push(`${kind}: ${problem}`);
  }

  get total() {
    let sum = 0;
    for (const { right, wrong } of this.byKind.values()) sum += right + wrong;
    return sum;
  }

  get wrongCount() {
    let sum = 0;
    for (const { wrong } of this.byKind.values()) sum += wrong;
    return sum;
  }
}

/** Undefined when the answer is the expected one, else what is wrong with it. */
export function judge(expect, status, body) {
  if (status !== expect.status)
    return `status ${status}, want ${expect.status}: ${body.slice(0, 120)}`;
  try {
    if (expect.reason !== undefined) {
      const reason = JSON.parse(body).reason;
      return reason === expect.reason ? undefined : `reason ${reason}, want ${expect.reason}`;
    }
    return expect.check(body) ? undefined : `unexpected body ${body.slice(0, 120)}`;
  } catch (error) {
    return `unreadable body (${error.message}): ${body.slice(0, 120)}`;
  }
}

/** The median of each fifth of the samples: growth that levels off, or a leak that keeps climbing. */
export const fifths = (samples) =>
  [0, 1, 2, 3, 4].map((i) =>
    median(
      samples.slice(
        Math.floor((i * samples.length) / 5),
        Math.floor(((i + 1) * samples.length) / 5),
      ),
    ),
  );

/** 1-second medians of 250 ms samples. */
const seconds = (samples) =>
  Array.from({ length: Math.floor(samples.length / 4) }, (_, i) =>
    median(samples.slice(i * 4, i * 4 + 4)),
  );

/**
 * RSS growth after the warm-up: the median of the last 5 s of the run over
 * the highest 1-second median of the warm-up's second half. Under load, RSS
 * moves by about 10% on its own as the collector and the allocator size
 * their pools, so a single reading is no baseline; a leak climbs past the
 * high-water mark. Samples are taken every 250 ms.
 */
export function rssGrowthOf(warmup, run) {
  const highWater = Math.max(...seconds(warmup.slice(Math.floor(warmup.length / 2))));
  const end = median(run.slice(-20));
  return { highWater, end, growth: end / highWater - 1 };
}

/**
 * What a folder holds that it should not. `files` and `seeded` map relative
 * paths to sha256; a file matching `upload.name` with `upload.sha` is an
 * allowed upload, and their count must lie within `answered` ([low, high]).
 */
export function diskProblems(files, seeded, upload, [low, high]) {
  const problems = [];
  const missing = new Map(seeded);
  let uploads = 0;
  for (const [file, sha] of files) {
    if (missing.has(file)) {
      if (missing.get(file) !== sha) problems.push(`${file} changed`);
      missing.delete(file);
    } else if (upload.name.test(file) && sha === upload.sha) uploads += 1;
    else problems.push(`unexpected file ${file}`);
  }
  for (const file of missing.keys()) problems.push(`${file} is gone`);
  if (uploads < low || uploads > high) {
    problems.push(`${uploads} uploads on disk, ${low} answered 201`);
  }
  return problems;
}
