// What every benchmark of this folder shares: the shuffled order of a round,
// quantiles of per-round samples and the precision of their median, and
// plain-text tables.

/** The q-quantile of `values`, interpolated between the nearest ranks. */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  return sorted[lo] + (sorted[Math.ceil(at)] - sorted[lo]) * (at - lo);
}

export const median = (values) => quantile(values, 0.5);

/** Median and interquartile range: what the reports print for every sample set. */
export const summary = (values) => ({
  median: quantile(values, 0.5),
  p25: quantile(values, 0.25),
  p75: quantile(values, 0.75),
});

/**
 * A 95% interval of the median of `values`: the 2.5th and 97.5th
 * percentiles of the medians of 2,000 resamples (with replacement). With
 * `groups` (one key per value), whole groups are resampled: values that
 * share a cause of error (rounds timed on the same server processes) are
 * not independent, and resampling them one by one would narrow the
 * interval as if they were. It leaves out what drifts between runs: read
 * it as the least uncertainty a median carries.
 */
export function medianInterval(values, groups = values.map((_, i) => i), resamples = 2000) {
  const byGroup = new Map();
  values.forEach((value, i) => {
    const members = byGroup.get(groups[i]) ?? [];
    members.push(value);
    byGroup.set(groups[i], members);
  });
  const clusters = [...byGroup.values()];
  const medians = [];
  for (let i = 0; i < resamples; i++) {
    const drawn = clusters.flatMap(() => clusters[Math.floor(Math.random() * clusters.length)]);
    medians.push(median(drawn));
  }
  return { low: quantile(medians, 0.025), high: quantile(medians, 0.975) };
}

/** A left-aligned text table with a dashed rule under the headers. */
export function table(headers, rows) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) =>
    cells
      .map((c, i) => String(c).padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** A shuffled copy (Fisher–Yates): each round times its variants in a new order. */
export function shuffle(items) {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** A numeric setting from the environment, at least `min`; a bad value stops the script (exit 2). */
export function envNumber(name, fallback, min) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) {
    console.error(`${name} must be a number ≥ ${min}, got ${raw}`);
    process.exit(2);
  }
  return value;
}
