import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// What `npm publish` would put in each package's tarball, listed by
// `npm pack --dry-run` (nothing is written): the licence its package.json
// declares, the README, the build, and nothing else (no sources, tests or
// local config).

const PACKAGES = ['core', 'fastify-plugin', 'express-middleware'];

/** The paths `npm pack` would put in the tarball of `packages/<name>`. */
function packed(name: string): string[] {
  const cwd = fileURLToPath(new URL(`../packages/${name}`, import.meta.url));
  const json = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return (JSON.parse(json) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
}

const LICENSE = readFileSync(new URL('../LICENSE', import.meta.url), 'utf8');

describe.each(PACKAGES)('the packed @pathgate/%s', (name) => {
  const files = packed(name);

  it('holds the MIT licence its package.json names, and the README', () => {
    const pkg = JSON.parse(
      readFileSync(new URL(`../packages/${name}/package.json`, import.meta.url), 'utf8'),
    ) as { license: string };
    expect(pkg.license).toBe('MIT');
    expect(LICENSE).toMatch(/^MIT License\n/);
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'README.md', 'package.json']));
    const own = readFileSync(new URL(`../packages/${name}/LICENSE`, import.meta.url), 'utf8');
    expect(own).toBe(LICENSE);
  });

  it('holds the build and nothing else: no sources, tests or config', () => {
    const others = files.filter(
      (path) =>
        !path.startsWith('dist/') && !['LICENSE', 'README.md', 'package.json'].includes(path),
    );
    expect(others).toEqual([]);
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.cjs');
  });
});
