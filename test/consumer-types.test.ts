import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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
const dir = mkdtempSync(join(ROOT, '.consumer-types-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function compile(name: string, files: readonly string[], options: object): string {
  const project = join(dir, name);
  rmSync(project, { recursive: true, force: true });
  mkdirSync(project);
  for (const file of files) writeFileSync(join(project, file), CONSUMER);
  const config = { compilerOptions: { ...STRICT, ...options }, files };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify(config));
  return tscErrors(project);
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
