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
 * percentiles of the medians of 2,000 resamples (with replacement). It
 * treats the samples as independent, so it leaves out what drifts between
 * runs: read it as the least uncertainty a median carries.
 */
export function medianInterval(values, resamples = 2000) {
  const medians = [];
  for (let i = 0; i < resamples; i++) {
    medians.push(median(values.map(() => values[Math.floor(Math.random() * values.length)])));
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
