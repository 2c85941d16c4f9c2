import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';

// A clone may sit in a folder named with spaces, non-ASCII letters, glob and
// URL characters. A copy of what the build reads, installed there from
// pnpm's store (offline) as `npm run setup` installs, builds, and the build
// works there. Only the core and the Express adapter are built: between them
// they use every part of the build (several entries, a bin, tsup's shims).
const REPO = fileURLToPath(new URL('..', import.meta.url));
const TOP = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'tsconfig.base.json'];
const READ = [...TOP, 'tsup.base.ts', 'scripts'];
const OWN = ['package.json', 'tsconfig.json', 'tsup.config.ts', 'src'];
// Every workspace member, for the lockfile; the two built ones in full.
const MEMBERS = ['packages/fastify-plugin', 'examples/fastify-files', 'examples/express-files'];
const BUILT = ['packages/core', 'packages/express-middleware'];

let clone: string;
beforeAll(() => {
  clone = join(mkdtempSync(join(tmpdir(), 'pathgate-odd-build-')), 'a b é [x]*{y}#%');
  const paths = READ.concat(
    MEMBERS.map((dir) => `${dir}/package.json`),
    BUILT.flatMap((dir) => OWN.map((path) => `${dir}/${path}`)),
  );
  for (const path of paths) {
    mkdirSync(join(clone, path, '..'), { recursive: true });
    cpSync(join(REPO, path), join(clone, path), { recursive: true });
  }
  const pnpm = ['-y', 'pnpm@10.34.9', 'install', '--frozen-lockfile', '--offline'];
  execFileSync('npx', pnpm, { cwd: clone, stdio: 'pipe' });
}, 120_000);
// A whole install: on a busy machine its removal outlasted the 10 s default.
afterAll(() => rmSync(join(clone, '..'), { recursive: true, force: true }), 120_000);

const build = (dir: string) =>
  execFileSync('npm', ['run', 'build'], { cwd: join(clone, dir), stdio: 'pipe' });

it('builds the core', () => {
  build('packages/core');
  const built = ['index.js', 'index.cjs', 'index.d.ts', 'http.js', 'cli.js'];
  const dist = join(clone, 'packages/core/dist');
  expect(built.filter((file) => !existsSync(join(dist, file)))).toEqual([]);
}, 120_000);

// Both builds find the optional multer peer from their own file's URL.
it('builds the Express adapter, whose builds find multer', () => {
  build('packages/express-middleware');
  const load = (file: string, type: string, from: string) =>
    execFileSync(
      process.execPath,
      [`--input-type=${type}`, '-e', `(${from}('./dist/${file}')).pathgate({ fs: [] }).multer()`],
      { cwd: join(clone, 'packages/express-middleware'), encoding: 'utf8' },
    );
  expect(load('index.js', 'module', 'await import')).toBe('');
  expect(load('index.cjs', 'commonjs', 'require')).toBe('');
}, 120_000);
