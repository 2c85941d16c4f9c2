/**
 * A fuzz campaign's test timeout (ms): the environment's `name` if set,
 * else `msPerRun` for each of its runs, so that raising a campaign's runs
 * (`*_RUNS`) raises its timeout too. A test that times out leaves its
 * property sending requests to servers the next tests share, and those
 * tests then fail on answers that are not theirs, with counterexamples
 * that look real.
 */
export const campaignTimeout = (name: string, runs: number, msPerRun: number): number =>
  Number(process.env[name] ?? runs * msPerRun);
