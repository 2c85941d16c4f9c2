import { randomUUID } from 'node:crypto';
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
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeSnippets } from './readme-code.js';
import { ROOT, tscErrors } from './tsc.js';

// The built d.ts files as a user's compiler meets them: checked with
// skipLibCheck off (a broken import in them is an error, not a silent
// `any`), under the strictest common flags, from an ES module and a CommonJS
// module on nodenext, and from a bundler-resolved module; the `/http`
// subpath too, which node10 resolution (no `exports`) finds only through
// `typesVersions`. Each expected
// error in the consumer goes unused, so fails the compile, when a type
// turns into `any`.

const CONSUMER = `
import { type CheckResult, checkFs, type PathSpec, PermissionPolicy } from '@pathgate/core';
import { bodyPending, DEFAULT_LINGER_MS, lingerClose } from '@pathgate/core/http';
import {
  pathgate as expressGate,
  PathgateDeniedError as ExpressDeniedError,
  PathgateStorageError,
} from '@pathgate/express';
import {
  pathgate as fastifyGate,
  PathgateAnsweredError,
  PathgateDeniedError,
  PathgateFieldTooLongError,
  PathgateRouteConfigError,
} from '@pathgate/fastify';
import express from 'express';
import Fastify from 'fastify';
import type { IncomingMessage } from 'node:http';

const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: ['rw:uploads/**'] } });
export const result: CheckResult = checkFs(policy, 'uploads/a.txt', 'write');

// An own key holding undefined counts as absent, as at run time.
export const spec: PathSpec = { params: 'a', query: undefined, under: undefined, optional: undefined };
// @ts-expect-error a spec names one source
export const twoSources: PathSpec = { params: 'a', query: 'b' };

// A third adapter's refusal of a body still arriving.
export const linger = (req: IncomingMessage): boolean =>
  bodyPending(req) && lingerClose(req, { lingerMs: DEFAULT_LINGER_MS });
// @ts-expect-error a boolean is not a string (it would be, were the type any)
export const lingerType: string = lingerClose({} as IncomingMessage);

const app = Fastify();
void app.register(fastifyGate, { policy });
app.setErrorHandler((error, _request, reply) => {
  if (error instanceof PathgateDeniedError) {
    const why: string = error.reason;
    const where: string = error.label;
    const status: 403 = error.statusCode;
    return reply.code(status).send({ why, where });
  }
  return reply.send(error);
});
// @ts-expect-error an error is not a number (it would be, were the type any)
export const denied: number = new PathgateDeniedError({ reason: 'nul-byte', label: 'body.to' });
// @ts-expect-error as above
export const misdeclared: number = new PathgateRouteConfigError();
// @ts-expect-error as above
export const tooLong: number = new PathgateFieldTooLongError();
// @ts-expect-error as above
export const answered: number = new PathgateAnsweredError();

const gate = expressGate({ policy });
express().get('/files/:name', gate.read({ params: 'name' }), (req, res) => {
  res.json({ path: req.pathgate?.params['name'] ?? null });
});
// @ts-expect-error as above
export const expressDenied: number = new ExpressDeniedError({ reason: 'nul-byte', label: 'x' });
// @ts-expect-error as above
export const storageError: number = new PathgateStorageError('PATHGATE_EXISTS', 'x');
`;

const STRICT = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  verbatimModuleSyntax: false,
  skipLibCheck: false,
  noEmit: true,
  target: 'es2022',
  types: ['node'],
};

const SETUPS = [
  {
    name: 'nodenext, an ES module and a CommonJS module',
    files: ['consumer.mts', 'consumer.cts'],
    options: { module: 'nodenext', moduleResolution: 'nodenext' },
  },
  {
    name: 'a bundler',
    files: ['consumer.ts'],
    options: { module: 'esnext', moduleResolution: 'bundler' },
  },
  {
    // An ES2021 target's default lib lacks ES2022's names (`ErrorOptions`).
    name: 'node10 resolution, CommonJS, an ES2021 target',
    files: ['consumer.ts'],
    options: {
      module: 'commonjs',
      moduleResolution: 'node10',
      target: 'es2021',
      esModuleInterop: true,
    },
  },
] as const;

// Inside the repository, so the packages resolve through its node_modules.
// Made before the first test, not on import: a run whose filter skips every
// test here runs no afterAll, and would leave the folder behind.
const dir = join(ROOT, `.consumer-types-${randomUUID()}`);
beforeAll(() => mkdirSync(dir));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Compiles `files` (name to text) in `project` under STRICT plus `options`: the errors, or ''. */
function compileProject(project: string, files: Record<string, string>, options: object): string {
  for (const [file, text] of Object.entries(files)) writeFileSync(join(project, file), text);
  const config = { compilerOptions: { ...STRICT, ...options }, files: Object.keys(files) };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(config));
  return tscErrors(project);
}

function compile(name: string, files: readonly string[], options: object, text = CONSUMER): string {
  const project = join(dir, name);
  rmSync(project, { recursive: true, force: true });
  mkdirSync(project);
  return compileProject(project, Object.fromEntries(files.map((f) => [f, text])), options);
}

describe('the packages’ types in a consumer, skipLibCheck off', () => {
  it.each(SETUPS)(
    '$name',
    ({ name, files, options }) => {
      expect(compile(name.replace(/\W+/g, '-'), files, options)).toBe('');
    },
    120_000,
  );
});

/** What `dist/index.d.ts` of `packages/<dir>` exports, but `default` and `pathgate` (REQUIRER's own names). */
function esmNames(dir: string): string[] {
  const types = readFileSync(join(ROOT, 'packages', dir, 'dist', 'index.d.ts'), 'utf8');
  const lists = [...types.matchAll(/^export (?:type )?\{([^}]*)\}/gm)].map((match) => match[1]);
  return lists
    .flatMap((list) => (list as string).split(','))
    .map((entry) => entry.trim().split(/\s+/).at(-1) as string)
    .filter((name) => name !== 'default' && name !== 'pathgate');
}

// A CommonJS project with verbatimModuleSyntax on takes each package by
// `import x = require()`: @pathgate/fastify is the plugin itself, as
// Fastify's own plugins are (its other names on it), @pathgate/express holds
// `pathgate`. Each name the ES module exports is found there too.
const REQUIRER = `
import core = require('@pathgate/core');
import pathgate = require('@pathgate/fastify');
import adapter = require('@pathgate/express');
import express = require('express');
import Fastify = require('fastify');
import type { ${esmNames('fastify-plugin').join(', ')} } from '@pathgate/fastify';
import type { ${esmNames('express-middleware').map((name) => `${name} as Express${name}`)} } from '@pathgate/express';

const options: PathgateOptions = { root: '/srv', fs: ['r:public/**'] };
const app = Fastify();
void app.register(pathgate, options);
void app.register(pathgate.default, options);
void app.register(pathgate.pathgate, options);
void app.register(pathgate, { policy: new core.PermissionPolicy({ root: '/srv', permissions: { fs: [] } }) });
app.get('/files/*', { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } },
  async (request) => request.pathgate?.params['*'] ?? null);
app.setErrorHandler((error, _request, reply) => {
  if (!(error instanceof pathgate.PathgateDeniedError)) return reply.send(error);
  const denied: PathgateDeniedError = error;
  return reply.code(denied.statusCode).send({ why: denied.reason });
});
// @ts-expect-error an error is not a number (it would be, were the type any)
const answered: number = new pathgate.PathgateAnsweredError();

const gate: ExpressPathgate = adapter.pathgate({ root: '/srv', fs: ['r:public/**'] });
express().get('/files/:name', gate.read({ params: 'name' }), (req, res) => {
  res.json({ path: req.pathgate?.params['name'] ?? null, answered });
});
`;

describe('the packages in a CommonJS consumer’s import = require(), verbatimModuleSyntax on', () => {
  it.each(['node16', 'nodenext'])(
    '%s',
    (module) => {
      const options = { module, moduleResolution: module, verbatimModuleSyntax: true };
      expect(compile(`require-${module}`, ['consumer.cts'], options, REQUIRER)).toBe('');
    },
    120_000,
  );
});

/** The packages, by name; the packages they install are found in their node_modules. */
const PACKAGES: Record<string, string> = {
  '@pathgate/core': join(ROOT, 'packages', 'core'),
  '@pathgate/fastify': join(ROOT, 'packages', 'fastify-plugin'),
  '@pathgate/express': join(ROOT, 'packages', 'express-middleware'),
};

/** Where `name` is installed: a package of the repository, or a dependency of one (or of the root). */
function installedAt(name: string): string {
  const own = PACKAGES[name];
  if (own !== undefined) return own;
  const found = [...Object.values(PACKAGES), ROOT]
    .map((dir) => join(dir, 'node_modules', name))
    .find((dir) => existsSync(dir));
  if (found === undefined) throw new Error(`${name} is not installed in the repository`);
  return realpathSync(found);
}

/** The packages the `npm install` lines of a README's first `sh` block name. */
function installLines(readme: string): string[] {
  const text = readFileSync(join(ROOT, readme), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(text)?.[1] ?? '';
  return block.split('\n').flatMap((line) => {
    const [npm, install, ...words] = line.replace(/#.*/, '').trim().split(/\s+/);
    return npm === 'npm' && install === 'install' ? words.filter((w) => !w.startsWith('-')) : [];
  });
}

/** Links `name` into `app`'s node_modules, as pnpm links a package the app lists. */
function link(app: string, name: string): void {
  mkdirSync(dirname(join(app, 'node_modules', name)), { recursive: true });
  symlinkSync(installedAt(name), join(app, 'node_modules', name), 'dir');
}

// pnpm gives an app's node_modules only the packages it lists: npm would
// hoist an adapter's peers and its own @types/express beside them, so an
// app's `import express from 'express'` finds them there without asking.
// Each README's examples compile in such an app, outside the repository
// (whose node_modules would lend the rest), with what its install lines name.
describe.each([
  'README.md',
  'packages/core/README.md',
  'packages/fastify-plugin/README.md',
  'packages/express-middleware/README.md',
])('the examples of %s in an app installed by pnpm', (readme) => {
  it('compile with what its install lines name, skipLibCheck off', () => {
    const app = mkdtempSync(join(tmpdir(), 'pathgate-pnpm-app-'));
    try {
      for (const name of [...installLines(readme), '@types/node']) link(app, name);
      const examples = completeSnippets(readme).map((code, i) => [
        `example${i}.mts`,
        `${code}\nexport {};\n`,
      ]);
      expect(examples.length).toBeGreaterThan(0);
      const options = { module: 'nodenext', moduleResolution: 'nodenext' };
      expect(compileProject(app, Object.fromEntries(examples), options)).toBe('');
    } finally {
      rmSync(app, { recursive: true, force: true });
    }
  }, 60_000);
});
