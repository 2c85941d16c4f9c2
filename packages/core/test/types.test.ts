import { describe, expect, expectTypeOf, it } from 'vitest';
import { type LingeringRequest, lingerClose } from '../src/http.js';
import {
  type CanonicalizeFailure,
  type CanonicalizeOptions,
  type CanonicalizeResult,
  type CheckedFile,
  type CheckedPaths,
  type CheckResult,
  canonicalize,
  checkFs,
  compileRouteGuard,
  type DenyBody,
  type DenyReason,
  denyBody,
  escapes,
  type FileResult,
  type FsAccessMode,
  type GuardDenyReason,
  type GuardResult,
  inside,
  isInside,
  type PathDenial,
  type PathgateInfo,
  type PathSource,
  type PathSpec,
  PermissionPolicy,
  type PermissionPolicyOptions,
  type RecordingInfo,
  type RouteGuard,
  type RouteGuardOptions,
  resolveSymlinks,
  SAND_PERM_CODES,
  SandboxPermissionError,
  type SandPermCode,
  type Selector,
} from '../src/index.js';

// Type tests for the public API. `expectTypeOf` is checked by the root
// `tsc -p tsconfig.json` (what CI runs); at run time it does nothing, so the
// few runtime expectations below keep the literal types honest.

const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: ['uploads/*'] } });

describe('canonicalize', () => {
  it('CanonicalizeResult narrows on ok', () => {
    const result = canonicalize('a', '/srv');
    expectTypeOf(result).toEqualTypeOf<CanonicalizeResult>();
    if (result.ok) {
      expectTypeOf(result.path).toEqualTypeOf<string>();
      // @ts-expect-error a success has no reason
      result.reason;
    } else {
      expectTypeOf(result.reason).toEqualTypeOf<CanonicalizeFailure>();
      // @ts-expect-error a failure has no path
      result.path;
    }
    expect(result).toEqual({ ok: true, path: '/srv/a' });
  });

  it('CanonicalizeFailure is the five contract reasons', () => {
    expectTypeOf<CanonicalizeFailure>().toEqualTypeOf<
      'not-a-string' | 'nul-byte' | 'invalid-unicode' | 'relative-root' | 'resolve-failed'
    >();
  });

  it('takes unknown values and roots, and an optional resolve', () => {
    expectTypeOf(canonicalize).parameter(0).toEqualTypeOf<unknown>();
    expectTypeOf(canonicalize).parameter(1).toEqualTypeOf<unknown>();
    expectTypeOf<CanonicalizeOptions['resolve']>().toEqualTypeOf<
      ((path: string) => string) | undefined
    >();
    canonicalize('a', '/srv', { resolve: (p) => p });
    canonicalize('a', '/srv', { resolve: resolveSymlinks });
    // @ts-expect-error resolve returns a string
    canonicalize('a', '/srv', { resolve: (p: string) => p.length });
  });
});

describe('checkFs', () => {
  it('CheckResult narrows on outcome; only a deny has a reason', () => {
    const result = checkFs(policy, 'uploads/a', 'read');
    expectTypeOf(result).toEqualTypeOf<CheckResult>();
    if (result.outcome === 'deny') {
      expectTypeOf(result.reason).toEqualTypeOf<DenyReason>();
    } else {
      expectTypeOf(result.outcome).toEqualTypeOf<'allow'>();
      // @ts-expect-error an allow has no reason
      result.reason;
    }
    expect(result.outcome).toBe('allow');
  });

  it('DenyReason is the policy reasons plus the canonicalize failures', () => {
    expectTypeOf<DenyReason>().toEqualTypeOf<
      'path-not-in-allowlist' | 'mode-not-permitted' | CanonicalizeFailure
    >();
    expectTypeOf<Extract<CheckResult, { outcome: 'deny' }>['reason']>().toEqualTypeOf<DenyReason>();
  });

  it('FsAccessMode accepts only read and write', () => {
    expectTypeOf<FsAccessMode>().toEqualTypeOf<'read' | 'write'>();
    expectTypeOf(checkFs).parameter(2).toEqualTypeOf<FsAccessMode>();
    checkFs(policy, 'a', 'write');
    // @ts-expect-error not a mode
    expect(() => checkFs(policy, 'a', 'rw')).toThrow(
      new TypeError('checkFs: mode must be "read" or "write", got rw'),
    );
    // @ts-expect-error modes are lower case
    expect(() => checkFs(policy, 'a', 'READ')).toThrow(TypeError);
    // @ts-expect-error no execute mode
    const execute: FsAccessMode = 'execute';
    expect(execute).toBe('execute');
  });

  it('takes an unknown path (the request value as parsed)', () => {
    expectTypeOf(checkFs).parameter(1).toEqualTypeOf<unknown>();
    expectTypeOf(checkFs).parameter(0).toEqualTypeOf<PermissionPolicy>();
  });
});

describe('selectors and predicates', () => {
  it('Selector is a key or a readonly list of keys and indexes', () => {
    expectTypeOf<Selector>().toEqualTypeOf<string | readonly (string | number)[]>();
    expectTypeOf<'path'>().toExtend<Selector>();
    expectTypeOf<readonly ['files', 0, 'path']>().toExtend<Selector>();
    expectTypeOf<(string | number)[]>().toExtend<Selector>();
    expectTypeOf<number>().not.toExtend<Selector>();
    expectTypeOf<boolean[]>().not.toExtend<Selector>();
    const tuple = ['files', 0, 'path'] as const;
    inside(tuple, '/srv');
    // @ts-expect-error a bare index is not a selector
    expect(() => escapes(0, '/srv')).toThrow(TypeError);
  });

  it('inside and escapes build predicates over unknown args', () => {
    expectTypeOf(inside('path', '/srv')).toEqualTypeOf<(args: unknown) => boolean>();
    expectTypeOf(escapes('path', '/srv')).toEqualTypeOf<(args: unknown) => boolean>();
    expectTypeOf(isInside).returns.toEqualTypeOf<boolean>();
    expectTypeOf(resolveSymlinks).toExtend<(path: string) => string>();
  });
});

describe('PermissionPolicy', () => {
  it('PermissionPolicyOptions requires permissions.fs', () => {
    new PermissionPolicy({ permissions: { fs: [] } });
    new PermissionPolicy({ root: '/srv', permissions: { fs: ['rw:a/**'] }, dot: true });
    const frozen: readonly string[] = Object.freeze(['a/*']);
    new PermissionPolicy({ permissions: { fs: frozen } });
    // @ts-expect-error permissions is required
    const noPermissions: PermissionPolicyOptions = { root: '/srv' };
    // @ts-expect-error permissions.fs is required
    const noFs: PermissionPolicyOptions = { permissions: {} };
    // @ts-expect-error rules are strings
    const numbers: PermissionPolicyOptions = { permissions: { fs: [1] } };
    // @ts-expect-error dot is a boolean
    const dotString: PermissionPolicyOptions = { permissions: { fs: [] }, dot: 'yes' };
    expect([noPermissions, noFs, numbers, dotString]).toHaveLength(4);
  });

  it('exposes its root, rules and dot read-only', () => {
    expectTypeOf(policy.root).toEqualTypeOf<string>();
    expectTypeOf(policy.rules).toEqualTypeOf<readonly string[]>();
    expectTypeOf(policy.dot).toEqualTypeOf<boolean>();
    expect(() => {
      // @ts-expect-error root is readonly
      policy.root = '/';
    }).toThrow(TypeError);
    expect(policy.root).toBe('/srv');
  });
});

describe('errors', () => {
  it('SandboxPermissionError carries code, message and context', () => {
    const error = new SandboxPermissionError('nul-byte');
    expectTypeOf(error).toExtend<Error>();
    expectTypeOf(error.code).toEqualTypeOf<SandPermCode>();
    expectTypeOf(error.message).toEqualTypeOf<string>();
    expectTypeOf(error.context.capability).toEqualTypeOf<'fs'>();
    expectTypeOf(error.context.reason).toEqualTypeOf<DenyReason>();
    expectTypeOf<
      ConstructorParameters<typeof SandboxPermissionError>[0]
    >().toEqualTypeOf<DenyReason>();
    // @ts-expect-error the guard's own reasons are not core reasons
    new SandboxPermissionError('missing-path');
    expect(error.context).toEqual({ capability: 'fs', reason: 'nul-byte' });
  });

  it('SAND_PERM_CODES.DENIED is a literal type', () => {
    expectTypeOf(SAND_PERM_CODES.DENIED).toEqualTypeOf<'PATHGATE_DENIED'>();
    expectTypeOf<SandPermCode>().toEqualTypeOf<'PATHGATE_DENIED'>();
    expect(() => {
      // @ts-expect-error the codes are read-only
      SAND_PERM_CODES.DENIED = 'X';
    }).toThrow(TypeError);
    expect(SAND_PERM_CODES.DENIED).toBe('PATHGATE_DENIED');
  });
});

describe('route guard', () => {
  it('PathSpec requires a source key', () => {
    const specs: PathSpec[] = [
      { params: '*' },
      { query: ['dirs', 0], optional: true },
      { body: 'from', under: 'uploads' },
      { headers: 'x-path' },
      { file: 'avatar', under: 'uploads' },
      { file: true },
    ];
    // @ts-expect-error under alone names no source
    const underOnly: PathSpec = { under: 'x' };
    // @ts-expect-error optional alone names no source
    const optionalOnly: PathSpec = { optional: true };
    // @ts-expect-error a header is named by one string
    const headerList: PathSpec = { headers: ['x-path'] };
    // @ts-expect-error file is a field name or true
    const fileFalse: PathSpec = { file: false };
    // @ts-expect-error optional is a boolean
    const optionalString: PathSpec = { body: 'a', optional: 'yes' };
    // @ts-expect-error unknown keys are refused
    const unknownKey: PathSpec = { body: 'a', dir: 'x' };
    expect([
      underOnly,
      optionalOnly,
      headerList,
      fileFalse,
      optionalString,
      unknownKey,
    ]).toHaveLength(6);
    expect(specs).toHaveLength(6);
  });

  it('PathSource and RouteGuardOptions', () => {
    expectTypeOf<PathSource>().toEqualTypeOf<'params' | 'query' | 'body' | 'headers'>();
    expectTypeOf<RouteGuardOptions['mode']>().toEqualTypeOf<FsAccessMode>();
    expectTypeOf<RouteGuardOptions['paths']>().toEqualTypeOf<readonly PathSpec[]>();
  });

  it('RouteGuard results narrow on ok', () => {
    const guard = compileRouteGuard(policy, { mode: 'read', paths: [{ body: 'a' }] }, 'GET /');
    expectTypeOf(guard).toEqualTypeOf<RouteGuard>();
    expectTypeOf(guard.mode).toEqualTypeOf<FsAccessMode>();
    const info = guard.newInfo();
    expectTypeOf(info).toEqualTypeOf<RecordingInfo>();
    expectTypeOf(info).toMatchTypeOf<PathgateInfo>();
    expectTypeOf<PathgateInfo['files']>().toEqualTypeOf<readonly CheckedFile[]>();
    expectTypeOf(info.body).toEqualTypeOf<Readonly<Record<string, string | string[]>>>();
    expectTypeOf(info.body).toEqualTypeOf<CheckedPaths>();
    expectTypeOf(info.files).toEqualTypeOf<CheckedFile[]>();
    const result = guard.checkRequest({ body: { a: 'uploads/x' } }, info);
    expectTypeOf(result).toEqualTypeOf<GuardResult>();
    if (!result.ok) {
      expectTypeOf(result.denial).toEqualTypeOf<PathDenial>();
      expectTypeOf(result.denial.reason).toEqualTypeOf<GuardDenyReason>();
      expectTypeOf(result.denial.result).toEqualTypeOf<CheckResult | undefined>();
    }
    const file = guard.checkFile('f', 'a');
    expectTypeOf(file).toEqualTypeOf<FileResult>();
    if (file.ok) expectTypeOf(file.file).toEqualTypeOf<CheckedFile | undefined>();
    if (file.ok && file.file) expectTypeOf(file.file.path).toEqualTypeOf<string>();
    expect(result).toEqual({ ok: true });
  });

  it('an adapter passes its optional settings on as they are: undefined is absent', () => {
    const settings: { lingerMs?: number | undefined; paramSegments?: boolean | undefined } = {};
    const guard = compileRouteGuard(policy, { mode: 'read', paths: [{ params: 'p' }] }, 'GET /', {
      paramSegments: settings.paramSegments,
      authorityHost: undefined,
    });
    expect(guard.checkRequest({ params: { p: ['uploads', 'a'] } }, guard.newInfo()).ok).toBe(false);
    // Compiled, never run: it needs a request.
    const linger = (req: LingeringRequest) =>
      lingerClose(req, { lingerMs: settings.lingerMs, lingerBytes: undefined });
    expectTypeOf(linger).returns.toEqualTypeOf<boolean>();
  });

  it('a denial rebuilt field by field is a denial: its result may be undefined', () => {
    // An onDeny or a check of the app's own relabels a denial; under
    // exactOptionalPropertyTypes an optional `result` must take undefined.
    const relabel = (denial: PathDenial, label: string): PathDenial => ({
      reason: denial.reason,
      label,
      result: denial.result,
    });
    const denial = relabel({ reason: 'missing-path', label: 'body.a' }, 'upload');
    expectTypeOf(denial.result).toEqualTypeOf<CheckResult | undefined>();
    expect(denyBody(denial).message).toBe('upload: path denied (missing-path)');
  });

  it('GuardDenyReason adds missing-path, unexpected-file and path-too-long', () => {
    expectTypeOf<GuardDenyReason>().toEqualTypeOf<
      DenyReason | 'missing-path' | 'unexpected-file' | 'path-too-long'
    >();
  });

  it('DenyBody has literal status, code and error', () => {
    const body = denyBody({ reason: 'missing-path', label: 'body.a' });
    expectTypeOf(body).toEqualTypeOf<DenyBody>();
    expectTypeOf(body.statusCode).toEqualTypeOf<403>();
    expectTypeOf(body.code).toEqualTypeOf<'PATHGATE_DENIED'>();
    expectTypeOf(body.error).toEqualTypeOf<'Forbidden'>();
    expectTypeOf(body.reason).toEqualTypeOf<GuardDenyReason>();
    expectTypeOf(body.message).toEqualTypeOf<string>();
    expect(body.statusCode).toBe(403);
  });
});
