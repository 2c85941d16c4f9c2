import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The built package, imported as ESM and as CJS through its exports map from
// a node_modules folder in a plain node process; its d.ts carries the
// declaration merging. The builds are assumed present (`npm run build`).

const PKG = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(PKG, 'dist');
const BUILT = ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts'];
const NAMES = [
  'PathgateDeniedError',
  'PathgateStorageError',
  'STORAGE_CODES',
  'default',
  'pathgate',
];

const PROBE = `
function probe(mod, where) {
  const gate = mod.pathgate({ root: '/srv', fs: ['rw:uploads/**'] });
  const upload = gate.multer();
  let thrown;
  try { mod.pathgate({ fs: [], nope: 1 }); } catch (e) { thrown = [e.constructor.name, e.message]; }
  return {
    where,
    names: Object.keys(mod).sort(),
    sameDefault: (mod.default.pathgate ?? mod.default) === mod.pathgate,
    middleware: [typeof gate.read({ params: 'path' }), typeof gate.write({ file: 'avatar' })],
    multer: ['single', 'array', 'fields', 'any', 'none'].map((m) => typeof upload[m]),
    error: new mod.PathgateDeniedError({ reason: 'nul-byte', label: 'body.to' }).message,
    thrown,
  };
}
`;
const ESM = `${PROBE}
const mod = await import('@pathgate/express');
console.log(JSON.stringify(probe(mod, new URL(import.meta.resolve('@pathgate/express')).pathname)));
`;
const CJS = `${PROBE}
const mod = require('@pathgate/express');
console.log(JSON.stringify(probe(mod, require.resolve('@pathgate/express'))));
`;

let tmp = '';
const run = (script: string) =>
  JSON.parse(execFileSync(process.execPath, [join(tmp, script)], { cwd: tmp, encoding: 'utf8' }));

beforeAll(() => {
  const missing = BUILT.filter((file) => !existsSync(join(DIST, file)));
  if (missing.length > 0) {
    throw new Error(
      `packages/express-middleware/dist is missing ${missing.join(', ')}: run \`npm run build\` first`,
    );
  }
  tmp = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-express-packaging-')));
  mkdirSync(join(tmp, 'node_modules', '@pathgate'), { recursive: true });
  symlinkSync(PKG, join(tmp, 'node_modules', '@pathgate', 'express'), 'dir');
  writeFileSync(join(tmp, 'esm.mjs'), ESM);
  writeFileSync(join(tmp, 'cjs.cjs'), CJS);
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('@pathgate/express as a built package', () => {
  it.each([
    ['esm.mjs', 'index.js'],
    ['cjs.cjs', 'index.cjs'],
  ])('%s resolves dist/%s and works', (script, file) => {
    const report = run(script);
    expect(report).toEqual({
      where: join(PKG, 'dist', file),
      names: NAMES,
      sameDefault: true,
      middleware: ['function', 'function'],
      multer: ['function', 'function', 'function', 'function', 'function'],
      error: 'body.to: path denied (nul-byte)',
      thrown: ['TypeError', 'pathgate: unknown option "nope"'],
    });
  });

  it.each(['index.d.ts', 'index.d.cts'])('%s carries the declaration merging', (file) => {
    const types = readFileSync(join(DIST, file), 'utf8');
    expect(types).toMatch(
      /declare global \{\s*namespace Express \{\s*interface Request extends PathgateRequestFields/,
    );
    expect(types).toMatch(/namespace Multer \{\s*interface File extends PathgateFileFields/);
    expect(types).toContain('pathgate?: PathgateInfo;');
    expect(types).toContain('pathgatePath?: string;');
  });
});
