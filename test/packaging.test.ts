import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT, type Installed, installBuilt } from './built-package.js';

const CORE = fileURLToPath(new URL('../packages/core', import.meta.url));
const DIST = join(CORE, 'dist');

const NAMES = [
  'callCatching',
  'callWatching',
  'canonicalize',
  'checkFs',
  'compileRouteGuard',
  'denyBody',
  'escapes',
  'hookBody',
  'inside',
  'isInside',
  'loggedPath',
  'optionError',
  'requiredParams',
  'PermissionPolicy',
  'readAdapterOptions',
  'readFunction',
  'readOwn',
  'recordView',
  'resolveSymlinks',
  'RouteGuard',
  'setOwn',
  'SAND_PERM_CODES',
  'SandboxPermissionError',
  'UNEXPECTED_FILE',
  'UNREADABLE_PART',
];

// One probe, run under both module systems: `core` is the package, `where` the file it resolved to.
const PROBE = `
function probe(core, where, tmp) {
  const policy = new core.PermissionPolicy({ root: '/srv', permissions: { fs: ['rw:uploads/*', 'docs/**'] } });
  const guard = core.compileRouteGuard(policy, { mode: 'write', paths: [{ body: 'to', under: 'uploads' }] }, 'POST /up');
  const info = guard.newInfo();
  const allowed = guard.checkRequest({ body: { to: '/a.png' } }, info);
  const denied = guard.checkRequest({ body: { to: '../docs/x' } }, guard.newInfo());
  const error = new core.SandboxPermissionError('nul-byte');
  let buildError;
  try { core.compileRouteGuard(policy, { mode: 'x', paths: [] }, 'GET /'); } catch (e) { buildError = [e.constructor.name, e.message]; }
  return {
    where,
    names: Object.keys(core).sort(),
    kinds: Object.fromEntries(Object.keys(core).sort().map((k) => [k, typeof core[k]])),
    canonicalize: [
      core.canonicalize('../../etc/passwd', '/srv/sandbox'),
      core.canonicalize('a/./b//c/..', '/srv'),
      core.canonicalize('a\\0b', '/srv'),
    ],
    checkFs: [
      core.checkFs(policy, 'uploads/a.png', 'write').outcome,
      core.checkFs(policy, 'docs/a', 'write').reason,
      core.checkFs(policy, '../etc/passwd', 'read').reason,
    ],
    predicates: [
      core.isInside('/srv/a', '/srv'),
      core.isInside('/srv2', '/srv'),
      core.inside('path', '/srv')({ path: 'a' }),
      core.escapes('path', '/srv')({ path: '../x' }),
    ],
    resolved: core.resolveSymlinks(tmp + '/link/missing'),
    guard: { allowed, info, denied, body: denied.ok ? null : core.denyBody(denied.denial), isGuard: guard instanceof core.RouteGuard },
    buildError,
    error: [error instanceof Error, error.name, error.code, error.message, error.context],
    codes: core.SAND_PERM_CODES,
    frozen: Object.isFrozen(core.SAND_PERM_CODES),
  };
}
`;

let installed: Installed;
const run = (script: 'esm.mjs' | 'cjs.cjs') => installed.run(script);

beforeAll(() => {
  installed = installBuilt('@pathgate/core', CORE, PROBE);
  // For resolveSymlinks: a link to a real folder, then a name missing below it.
  mkdirSync(join(installed.tmp, 'real'));
  symlinkSync(join(installed.tmp, 'real'), join(installed.tmp, 'link'), 'dir');
});

afterAll(() => installed?.remove());

describe('@pathgate/core as a built package', () => {
  it('ships the ESM, CJS and both declaration files', () => {
    for (const file of BUILT) expect(existsSync(join(DIST, file)), file).toBe(true);
    for (const file of ['index.d.ts', 'index.d.cts']) {
      const types = readFileSync(join(DIST, file), 'utf8');
      for (const name of NAMES)
        expect(types, `${file} declares ${name}`).toMatch(new RegExp(`\\b${name}\\b`));
    }
  });

  it('resolves import to dist/index.js and require to dist/index.cjs through exports', () => {
    expect(run('esm.mjs').where).toBe(join(CORE, 'dist', 'index.js'));
    expect(run('cjs.cjs').where).toBe(join(CORE, 'dist', 'index.cjs'));
  });

  it('exposes the same named exports under import and require', () => {
    const esm = run('esm.mjs');
    const cjs = run('cjs.cjs');
    expect(esm.names).toEqual([...NAMES].sort());
    expect(cjs.names).toEqual(esm.names);
    expect(cjs.kinds).toEqual(esm.kinds);
    expect(esm.kinds).toEqual({
      callCatching: 'function',
      callWatching: 'function',
      canonicalize: 'function',
      checkFs: 'function',
      compileRouteGuard: 'function',
      denyBody: 'function',
      escapes: 'function',
      hookBody: 'function',
      inside: 'function',
      isInside: 'function',
      loggedPath: 'function',
      optionError: 'function',
      requiredParams: 'function',
      PermissionPolicy: 'function',
      readAdapterOptions: 'function',
      readFunction: 'function',
      readOwn: 'function',
      recordView: 'function',
      resolveSymlinks: 'function',
      RouteGuard: 'function',
      setOwn: 'function',
      SAND_PERM_CODES: 'object',
      SandboxPermissionError: 'function',
      UNEXPECTED_FILE: 'object',
      UNREADABLE_PART: 'object',
    });
  });

  it.each(['esm.mjs', 'cjs.cjs'] as const)('%s: the exports work', (script) => {
    const { where: _where, ...report } = run(script);
    expect(report).toEqual({
      names: [...NAMES].sort(),
      kinds: expect.any(Object),
      canonicalize: [
        { ok: true, path: '/etc/passwd' },
        { ok: true, path: '/srv/a/b' },
        { ok: false, reason: 'nul-byte' },
      ],
      checkFs: ['allow', 'mode-not-permitted', 'path-not-in-allowlist'],
      predicates: [true, false, true, true],
      resolved: join(installed.tmp, 'real', 'missing'),
      guard: {
        allowed: { ok: true },
        info: {
          mode: 'write',
          params: {},
          query: {},
          body: { to: '/srv/uploads/a.png' },
          headers: {},
          files: [],
        },
        denied: {
          ok: false,
          denial: {
            reason: 'mode-not-permitted',
            label: 'body.to',
            result: {
              outcome: 'deny',
              reason: 'mode-not-permitted',
              path: '/srv/docs/x',
              rule: 'docs/**',
            },
          },
        },
        body: {
          statusCode: 403,
          code: 'PATHGATE_DENIED',
          error: 'Forbidden',
          message: 'body.to: path denied (mode-not-permitted)',
          reason: 'mode-not-permitted',
        },
        isGuard: true,
      },
      buildError: ['TypeError', 'pathgate: route GET /: mode must be "read" or "write"'],
      error: [
        true,
        'SandboxPermissionError',
        'PATHGATE_DENIED',
        'path denied: nul-byte',
        { capability: 'fs', reason: 'nul-byte' },
      ],
      codes: { DENIED: 'PATHGATE_DENIED' },
      frozen: true,
    });
  });

  it('a policy built by the other module build is refused with a message that says so', () => {
    // The ES module and CommonJS builds are two copies: each knows only its own policies.
    const script = join(installed.tmp, 'mixed.mjs');
    writeFileSync(
      script,
      `import { createRequire } from 'node:module';
import * as esm from '@pathgate/core';
const cjs = createRequire(import.meta.url)('@pathgate/core');
const fails = (check) => { try { check(); return null; } catch (e) { return [e.constructor.name, e.message]; } };
const options = { root: '/srv', permissions: { fs: ['docs/**'] } };
console.log(JSON.stringify([
  fails(() => cjs.checkFs(new esm.PermissionPolicy(options), 'docs/a', 'read')),
  fails(() => esm.checkFs(new cjs.PermissionPolicy(options), 'docs/a', 'read')),
  fails(() => esm.checkFs({ root: '/srv' }, 'docs/a', 'read')),
  fails(() => cjs.readAdapterOptions({ policy: new esm.PermissionPolicy(options) }, [])),
  esm.checkFs(new esm.PermissionPolicy(options), 'docs/a', 'read').outcome,
]));
`,
    );
    const out = execFileSync(process.execPath, [script], { cwd: installed.tmp, encoding: 'utf8' });
    const otherCopy =
      'policy was built by another copy of @pathgate/core (its ES module and CommonJS builds are two copies): load @pathgate/core and the pathgate adapters the same way, all by import or all by require';
    const other = ['TypeError', `checkFs: ${otherCopy}`];
    expect(JSON.parse(out)).toEqual([
      other,
      other,
      ['TypeError', 'checkFs: policy must be a PermissionPolicy'],
      ['TypeError', `pathgate: option ${otherCopy}`],
      'allow',
    ]);
  });
});
