// Runs every test again on another Node.js release: the packages promise
// `engines: >=20`, and the machine the README sets up has Node 20 alone. The
// binary comes from the npm registry (the `node-<os>-<cpu>` packages carry
// Node's official builds, and `npm pack` checks the registry's integrity
// hash), into a temp folder removed afterwards. Usage:
// `node scripts/test-on-node.mjs [version]`, after a build (tests load the
// packages' builds). Linux and macOS.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { arch, platform, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The newest LTS line the suite was last checked on (bump with the line).
const DEFAULT_VERSION = '26.12.1';

const version = process.argv[2] ?? DEFAULT_VERSION;
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs a command (its stderr shown), returns its stdout; a failure throws, naming it. */
function run(command, args, options = {}) {
  const stdio = ['ignore', 'pipe', 'inherit'];
  const done = spawnSync(command, args, { encoding: 'utf8', stdio, ...options });
  if (done.error || done.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${done.error ?? `exit ${done.status}`})`);
  }
  return done.stdout;
}

/** Unpacks the release's npm package into `dir`; returns the folder its `node` is in. */
function fetchNode(dir) {
  const name = `node-${platform()}-${arch()}`;
  const tarball = run('npm', ['pack', `${name}@${version}`, '--pack-destination', dir])
    .trim()
    .split('\n')
    .pop();
  run('tar', ['-xzf', join(dir, tarball), '-C', dir]);
  return join(dir, 'package', 'bin');
}

const dir = mkdtempSync(join(tmpdir(), 'pathgate-node-'));
let status = 1;
try {
  const bin = fetchNode(dir);
  // First on PATH, so that npx, vitest and the workers it forks all run it.
  const env = { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH}` };
  const seen = run('node', ['--version'], { env }).trim();
  if (seen !== `v${version}`) throw new Error(`PATH's node is ${seen}, not v${version}`);
  console.log(`every test again, on Node ${seen}`);
  const tests = spawnSync('node', ['scripts/run-tests.mjs'], { cwd: ROOT, env, stdio: 'inherit' });
  status = tests.status;
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status ?? 1);
