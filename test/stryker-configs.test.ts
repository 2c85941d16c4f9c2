import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';

// The two mutation runs (`npm run test:mutation`, `test:mutation:adapters`)
// take an hour each, so they are not part of the suite, and their
// configurations can drift from the code unseen: three core files added
// after the core's list was written went unmutated, and both runs stopped
// at their dry run once a test loaded its package's build, which the
// sandbox left out. These read the configurations against the tree.

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface StrykerConfig {
  mutate: string[];
  testFiles: string[];
  ignorePatterns: string[];
}

const CONFIGS = ['stryker.config.json', 'stryker.adapters.json'].map((file) => ({
  file,
  config: JSON.parse(readFileSync(`${ROOT}${file}`, 'utf8')) as StrykerConfig,
}));

/** Source files no run mutates, each for a reason. */
const NOT_MUTATED: Record<string, string> = {
  'packages/core/src/index.ts': 're-exports',
  'packages/core/src/http.ts': 're-exports',
  'packages/core/src/errors.ts': 'error classes, one message each',
  'packages/core/src/cli/args.ts': 'the CLI, tested by cli.test.ts, which the core run leaves out',
  'packages/core/src/cli/main.ts': 'the CLI',
  'packages/core/src/cli/policy-file.ts': 'the CLI',
  'packages/core/src/cli/read-capped.ts': 'the CLI',
  'packages/fastify-plugin/src/index.ts': 're-exports',
  'packages/fastify-plugin/src/augment.ts': 'types only',
  'packages/express-middleware/src/index.ts': 're-exports',
  'packages/express-middleware/src/augment.ts': 'types only',
  'packages/express-middleware/src/cjs-shim.ts': 'the CommonJS entry',
};

/** Files below `dir` (relative to the root, recursive) whose name ends with `suffix`. */
function filesBelow(dir: string, suffix: string): string[] {
  return readdirSync(`${ROOT}${dir}`, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith(suffix))
    .map((name) => `${dir}/${name}`);
}

/**
 * Whether Stryker's pattern list takes `file`: a match of one pattern, none
 * of the `!` ones. Stryker matches with minimatch; for the patterns these
 * configurations hold (`*`, `!(cli)`, plain names) picomatch agrees.
 */
function takes(patterns: readonly string[], file: string): boolean {
  const negated = patterns.filter((p) => p.startsWith('!')).map((p) => p.slice(1));
  const positive = patterns.filter((p) => !p.startsWith('!'));
  return picomatch(positive)(file) && !picomatch(negated)(file);
}

describe('the mutation runs', () => {
  it('mutate every source file but those listed with a reason', () => {
    const sources = ['core', 'fastify-plugin', 'express-middleware'].flatMap((pkg) =>
      filesBelow(`packages/${pkg}/src`, '.ts').filter((file) => !file.endsWith('.d.ts')),
    );
    expect(sources.length).toBeGreaterThan(50);
    const unmutated = sources.filter(
      (file) => !CONFIGS.some(({ config }) => takes(config.mutate, file)),
    );
    expect(unmutated.sort()).toEqual(Object.keys(NOT_MUTATED).sort());
  });

  it.each(CONFIGS)('$file copies into its sandbox each build its tests load', ({ config }) => {
    const tests = ['packages', 'test']
      .flatMap((dir) => filesBelow(dir, '.test.ts'))
      .filter((file) => !file.includes('node_modules') && takes(config.testFiles, file));
    expect(tests.length).toBeGreaterThan(10);
    const loadsBuild = tests.filter((file) =>
      /['"]\.\.\/dist\//.test(readFileSync(`${ROOT}${file}`, 'utf8')),
    );
    const needed = loadsBuild.map((file) => `!/${file.replace(/\/test\/.*$/, '/dist')}`);
    for (const pattern of needed) expect(config.ignorePatterns).toContain(pattern);
  });
});
