import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';

// A clone may sit in a folder named with spaces, non-ASCII letters and glob
// characters. The core's `npm run build`, run in a copy of what it reads
// under such a folder (the repository's node_modules linked in), builds.
const REPO = fileURLToPath(new URL('..', import.meta.url));
const READ = ['tsconfig.base.json', 'tsup.base.ts', 'scripts', 'packages/core/src'].concat(
  ['package.json', 'tsconfig.json', 'tsup.config.ts'].map((file) => `packages/core/${file}`),
);

let top: string;
beforeAll(() => {
  top = mkdtempSync(join(tmpdir(), 'pathgate-odd-build-'));
});
afterAll(() => rmSync(top, { recursive: true, force: true }));

it('builds the core in a folder named `a b é [x]*{y}`', () => {
  const clone = join(top, 'a b é [x]*{y}');
  mkdirSync(join(clone, 'packages', 'core'), { recursive: true });
  for (const path of READ) cpSync(join(REPO, path), join(clone, path), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const core = join(clone, 'packages', 'core');
  execFileSync('npm', ['run', 'build'], { cwd: core, stdio: 'pipe' });
  const built = ['index.js', 'index.cjs', 'index.d.ts', 'http.js', 'cli.js'];
  expect(built.filter((file) => !existsSync(join(core, 'dist', file)))).toEqual([]);
}, 120_000);
