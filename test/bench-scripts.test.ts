import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// `npm run bench` runs every script of bench/ (bench/run.mjs). Each sets up
// servers or guards of its own through the public API and checks them before
// it times anything, so a change to the packages can stop a script at
// start-up (as hook-cost.mjs was, once the Fastify plugin made a guarded
// route's handler non-configurable). Each runs here at its smallest size:
// it must set up, validate and report. The figures are not judged; load.mjs,
// the one script with goals that fail, runs in full in .ci/run.

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Each script takes 1–15 s here; minutes on a machine busy with the rest of the suite. */
const SCRIPT_MS = 180_000;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <args>` from the repository's root with `env` added; SIGINT on a timeout (each script stops its servers on it). */
function runNode(args: readonly string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        timeout: SCRIPT_MS - 10_000,
        killSignal: 'SIGINT',
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const SMALL_HTTP = {
  BENCH_ROUNDS: '1',
  BENCH_RESTART_EVERY: '1',
  BENCH_WARMUP_REQUESTS: '0',
  BENCH_WARMUP_MAX_S: '0',
  BENCH_WINDOW_S: '0.1',
};
const SMALL_HOOK = { HOOK_PROCESSES: '1', HOOK_WARMUP: '0', HOOK_REQUESTS: '100' };

describe('each benchmark script sets up, validates and reports', () => {
  it.each([
    ['core.mjs', { CORE_ROUNDS: '1' }, /goals/],
    ['long-names.mjs', {}, /checkFs on long names/],
    ['deep-walk.mjs', { DEEP_ROUNDS: '1' }, /goals/],
    ['http.mjs', SMALL_HTTP, /express POST \/move: guarded ≥ hand-written/],
    ['hook-cost.mjs', SMALL_HOOK, /express POST \/move +\d+/],
  ] as const)(
    '%s',
    async (script, env, report) => {
      const ran = await runNode([`bench/${script}`], env);
      expect(ran.stderr).not.toMatch(/Error/);
      expect(ran).toMatchObject({ code: 0 });
      expect(ran.stdout).toMatch(report);
    },
    SCRIPT_MS,
  );

  // instructions.mjs runs this worker under valgrind, a minute at its
  // smallest; the worker alone shows its checks still pass every request.
  it.each(['param', 'body', 'query'])(
    'instructions-worker.mjs passes every %s request in each variant',
    async (route) => {
      for (const variant of ['none', 'hand', 'core', 'guarded']) {
        const ran = await runNode(['bench/instructions-worker.mjs', route, variant, '1000']);
        expect(ran).toMatchObject({
          code: 0,
          stdout: `${route} ${variant}: 1000 of 1000 passed\n`,
        });
      }
    },
    SCRIPT_MS,
  );
});
