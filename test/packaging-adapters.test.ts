import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Installed, installBuilt } from './built-package.js';

// The adapters' builds, imported as ESM and CJS from a node_modules folder;
// their d.ts files carry the declaration merging.

const SCRIPTS = ['esm.mjs', 'cjs.cjs'] as const;

interface Adapter {
  readonly name: string;
  readonly dir: string;
  readonly probe: string;
  /** The whole report but `where`, for both module systems. */
  readonly expected: object;
  /** What the d.ts files must declare: the declaration merging. */
  readonly types: readonly (string | RegExp)[];
}

const EXPRESS: Adapter = {
  name: '@pathgate/express',
  dir: fileURLToPath(new URL('../packages/express-middleware', import.meta.url)),
  probe: `
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
}`,
  expected: {
    names: ['PathgateDeniedError', 'PathgateStorageError', 'STORAGE_CODES', 'default', 'pathgate'],
    sameDefault: true,
    middleware: ['function', 'function'],
    multer: ['function', 'function', 'function', 'function', 'function'],
    error: 'body.to: path denied (nul-byte)',
    thrown: ['TypeError', 'pathgate: unknown option "nope"'],
  },
  types: [
    /declare global \{\s*namespace Express \{\s*interface Request extends PathgateRequestFields/,
    /namespace Multer \{\s*interface File extends PathgateFileFields/,
    'pathgate?: ExpressPathgateInfo;',
    /interface ExpressPathgateInfo extends PathgateInfo \{\s*readonly params: Readonly<Record<string, string>>;/,
    'pathgatePath?: string;',
  ],
};

/** What @pathgate/fastify exports, under import and require alike. */
const FASTIFY_NAMES = [
  'PathgateAnsweredError',
  'PathgateDeniedError',
  'PathgateFieldTooLongError',
  'PathgateRouteConfigError',
  'default',
  'pathgate',
];

const FASTIFY: Adapter = {
  name: '@pathgate/fastify',
  dir: fileURLToPath(new URL('../packages/fastify-plugin', import.meta.url)),
  probe: `
function probe(mod, where) {
  const plugin = mod.default.pathgate ?? mod.default;
  const denied = new mod.PathgateDeniedError({ reason: 'nul-byte', label: 'body.to' });
  return {
    where,
    // Not fastify-plugin's alias, on the plugin require() returns.
    names: Object.keys(mod).filter((name) => name !== 'pathgateFastify').sort(),
    sameDefault: plugin === mod.pathgate,
    meta: plugin[Symbol.for('plugin-meta')],
    skipOverride: plugin[Symbol.for('skip-override')],
    denied: [
      denied instanceof Error,
      denied.statusCode,
      denied.code,
      denied.message,
      denied.reason,
      denied.label,
    ],
    config: new mod.PathgateRouteConfigError().statusCode,
    tooLong: [new mod.PathgateFieldTooLongError().statusCode, new mod.PathgateFieldTooLongError().code],
    answered: [new mod.PathgateAnsweredError().statusCode, new mod.PathgateAnsweredError().code],
  };
}`,
  expected: {
    names: FASTIFY_NAMES,
    sameDefault: true,
    meta: { fastify: '5.x', name: '@pathgate/fastify' },
    skipOverride: true,
    denied: [
      true,
      403,
      'PATHGATE_DENIED',
      'body.to: path denied (nul-byte)',
      'nul-byte',
      'body.to',
    ],
    config: 500,
    tooLong: [413, 'PATHGATE_FIELD_TOO_LONG'],
    answered: [500, 'PATHGATE_ANSWERED'],
  },
  types: [
    /declare module 'fastify' \{\s*interface FastifyContextConfig \{[^}]*pathgate\?: RouteGuardOptions \| undefined;/,
    /interface FastifyRequest \{[^}]*readonly pathgate: PathgateInfo \| null \| undefined;/,
    /declare module '@fastify\/multipart' \{\s*interface MultipartFile \{[^}]*pathgatePath\?: string;/,
  ],
};

/**
 * The text of `dist/<file>` and of the declaration files it takes types from
 * by a relative import (`./api.cjs` is api.d.cts), as a compiler reads them.
 */
function declarations(dir: string, file: string): string {
  const text = readFileSync(join(dir, 'dist', file), 'utf8');
  const local = [...text.matchAll(/from '\.\/([^']+)\.(c?)js'/g)].map(
    ([, name, c]) => `${name}.d.${c}ts`,
  );
  return [text, ...local.map((name) => declarations(dir, name))].join('\n');
}

describe.each([EXPRESS, FASTIFY])('$name as a built package', (adapter) => {
  let installed: Installed;
  beforeAll(() => {
    installed = installBuilt(adapter.name, adapter.dir, adapter.probe);
  });
  afterAll(() => installed?.remove());

  it.each([
    ['esm.mjs', 'index.js'],
    ['cjs.cjs', 'index.cjs'],
  ] as const)('%s resolves dist/%s and works', (script, file) => {
    const { where, ...report } = installed.run(script);
    expect(where).toBe(join(adapter.dir, 'dist', file));
    expect(report).toEqual(adapter.expected);
  });

  it('exports the same names under import and require', () => {
    const [esm, cjs] = SCRIPTS.map((script) => installed.run(script));
    expect(cjs?.names).toEqual(esm?.names);
  });

  it.each(['index.d.ts', 'index.d.cts'])('%s carries the declaration merging', (file) => {
    const types = declarations(adapter.dir, file);
    for (const declared of adapter.types) {
      if (typeof declared === 'string') expect(types).toContain(declared);
      else expect(types).toMatch(declared);
    }
  });
});

// As with Fastify's own plugins, require() returns the plugin itself, the
// ES module's names on it: `const pathgate = require('@pathgate/fastify')`
// registers as it is, and `.default` and `.pathgate` are the plugin too.
describe('@pathgate/fastify under require()', () => {
  let installed: Installed;
  beforeAll(() => {
    installed = installBuilt(
      FASTIFY.name,
      FASTIFY.dir,
      `function probe(mod) {
  return {
    kind: typeof mod,
    itself: [mod.default, mod.pathgate].map((plugin) => plugin === mod),
    meta: mod[Symbol.for('plugin-meta')],
    names: Object.keys(mod).sort(),
  };
}`,
    );
  });
  afterAll(() => installed?.remove());

  it('is the plugin, with the default and named exports on it', () => {
    const { names, ...cjs } = installed.run('cjs.cjs');
    expect(cjs).toEqual({
      kind: 'function',
      itself: [true, true],
      meta: { fastify: '5.x', name: '@pathgate/fastify' },
    });
    // Beside fastify-plugin's own alias of a plugin named @pathgate/fastify.
    expect(names).toEqual([...FASTIFY_NAMES, 'pathgateFastify'].sort());
  });
});

// An ES module app that imports the adapter while a CommonJS module of its
// own requires it holds two copies, which do not see each other's
// middleware: on one route they fail closed (the README's Limitations).
describe('@pathgate/express, both builds in one app', () => {
  let installed: Installed;
  beforeAll(() => {
    installed = installBuilt(EXPRESS.name, EXPRESS.dir, 'function probe() {}');
  });
  afterAll(() => installed?.remove());

  it("refuses an upload a gate of one build leaves to the other's gate.multer(), storing nothing", () => {
    const root = join(installed.tmp, 'root');
    mkdirSync(root);
    const script = join(installed.tmp, 'mixed.mjs');
    writeFileSync(
      script,
      `import { createRequire } from 'node:module';
import * as esm from '@pathgate/express';
const require = createRequire(import.meta.url);
const cjs = require('@pathgate/express');
const express = createRequire(require.resolve('@pathgate/express'))('express');
const [one, other] = [esm, cjs].map((mod) => mod.pathgate({ root: ${JSON.stringify(root)}, fs: ['rw:**'], log: () => {} }));
const app = express();
app.post('/u', other.write({ file: 'f' }), one.multer().single('f'), (req, res) => res.json('stored'));
app.get('/two/:p/:q', one.read({ params: 'p' }), other.read({ params: 'q' }), (req, res) => res.json(req.pathgate.params));
const server = app.listen(0, '127.0.0.1', async () => {
  const base = 'http://127.0.0.1:' + server.address().port;
  const form = new FormData();
  form.append('f', new Blob(['hi']), 'a.txt');
  const upload = await fetch(base + '/u', { method: 'POST', body: form });
  const two = await fetch(base + '/two/a/b');
  console.log(JSON.stringify([upload.status, (await upload.json()).reason, await two.json()]));
  server.close();
});
`,
    );
    const out = execFileSync(process.execPath, [script], { cwd: installed.tmp, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual([403, 'missing-path', { q: join(root, 'b') }]);
    expect(readdirSync(root)).toEqual([]);
  });
});

interface Manifest {
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** `express` for `express`, `@fastify/error` for `@fastify/error/types`. */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/** The packages a d.ts file imports types from (`from 'x'`, `import('x')`). */
function typeImports(text: string): string[] {
  const specifiers = [...text.matchAll(/(?:from |import\()'([^'./][^']*)'/g)];
  return [...new Set(specifiers.map((match) => packageOf(match[1] as string)))];
}

/** Whether the package installed beside `dir` declares its own types. */
function shipsTypes(dir: string, name: string): boolean {
  const file = createRequire(join(dir, 'package.json')).resolve(`${name}/package.json`);
  const manifest = readFileSync(file, 'utf8');
  return /"(types|typings)"\s*:/.test(manifest);
}

// A TypeScript user (skipLibCheck off) gets every type the d.ts files import
// from what installing the adapter brings: a dependency or a required peer
// that has its own types, or its `@types` package as a dependency. An
// optional peer (multer) is missing from most apps; before @types/multer was
// a dependency, an Express app without multer failed to compile (TS2307).
describe.each([EXPRESS, FASTIFY])('$name: the declaration files', (adapter) => {
  it.each(['index.d.ts', 'index.d.cts'])('%s imports only types its install brings', (file) => {
    const manifest = JSON.parse(
      readFileSync(join(adapter.dir, 'package.json'), 'utf8'),
    ) as Manifest;
    const dependencies = manifest.dependencies ?? {};
    const optional = manifest.peerDependenciesMeta ?? {};
    const installed = (name: string) =>
      Object.hasOwn(dependencies, name) ||
      (Object.hasOwn(manifest.peerDependencies ?? {}, name) && optional[name]?.optional !== true);
    const typesPackage = (name: string) => `@types/${name.replace(/^@/, '').replace('/', '__')}`;
    const imports = typeImports(declarations(adapter.dir, file));
    expect(imports).toContain('@pathgate/core');
    const unbrought = imports.filter(
      (name) =>
        !Object.hasOwn(dependencies, typesPackage(name)) &&
        !(installed(name) && shipsTypes(adapter.dir, name)),
    );
    expect(unbrought).toEqual([]);
  });
});
