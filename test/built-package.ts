import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// STYLE.md habit 11: a built package is imported the way a user's app does,
// through its `exports` map, from a node_modules folder, in a plain `node`
// process (no vitest alias, no TypeScript), under ESM and under CJS.

/** What every package's build holds (the root `npm run check` builds first). */
export const BUILT = ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts'];

/** A probe's JSON report; `where` is the file the package name resolved to. */
export type Report = Record<string, unknown> & { where: string };

export interface Installed {
  /** The temp folder: node_modules/<name> links the package; also passed to the probe. */
  readonly tmp: string;
  /** The probe's report under `esm.mjs` (import) or `cjs.cjs` (require), run once each. */
  run(script: 'esm.mjs' | 'cjs.cjs'): Report;
  remove(): void;
}

/**
 * Links the package in `dir` as `name` into a fresh temp node_modules and
 * writes two scripts that load it (import, require) and print
 * `probe(mod, where, tmp)` as JSON; `probe` is the text of that function.
 * Throws when the build is missing.
 */
export function installBuilt(name: string, dir: string, probe: string): Installed {
  const missing = BUILT.filter((file) => !existsSync(join(dir, 'dist', file)));
  if (missing.length > 0) {
    throw new Error(`${dir}/dist is missing ${missing.join(', ')}: run \`npm run build\` first`);
  }
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-packaging-')));
  const [scope, base] = name.split('/') as [string, string];
  mkdirSync(join(tmp, 'node_modules', scope), { recursive: true });
  symlinkSync(dir, join(tmp, 'node_modules', scope, base), 'dir');
  const report = (mod: string, where: string) =>
    `${probe}\n${mod}\nconsole.log(JSON.stringify(probe(mod, ${where}, process.argv[2])));\n`;
  writeFileSync(
    join(tmp, 'esm.mjs'),
    report(
      `const mod = await import('${name}');`,
      // A path, not a URL's pathname, which spells a space `%20`.
      `(await import('node:url')).fileURLToPath(import.meta.resolve('${name}'))`,
    ),
  );
  writeFileSync(
    join(tmp, 'cjs.cjs'),
    report(`const mod = require('${name}');`, `require.resolve('${name}')`),
  );
  const reports = new Map<string, Report>();
  return {
    tmp,
    run(script) {
      let got = reports.get(script);
      if (!got) {
        const out = execFileSync(process.execPath, [join(tmp, script), tmp], {
          cwd: tmp,
          encoding: 'utf8',
        });
        got = JSON.parse(out) as Report;
        reports.set(script, got);
      }
      return got;
    },
    remove: () => rmSync(tmp, { recursive: true, force: true }),
  };
}
