import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkFs,
  compileRouteGuard,
  escapes,
  inside,
  isInside,
  PermissionPolicy,
} from '../src/index.js';
import { resolveSymlinks } from '../src/realpath.js';
import { runGuard } from './guard-run.js';

// What a denied value may tell a client about the disk, with the resolver on:
// nothing about what lies outside the root, and nothing about what lies
// inside it that the rules do not grant. The route guard's deny reason is
// what an adapter sends; it must depend on the value and the rules, not on
// which names exist. checkFs and the predicates keep DESIGN.md's steps: they
// resolve every value, and answer the application, not a client.

let base = '';
/** The names the resolver was asked about, in order. */
const asked: string[] = [];
const watching = (p: string): string => {
  asked.push(p);
  return resolveSymlinks(p);
};

/** Longer than any name the kernel accepts (NAME_MAX, 255 bytes). */
const LONG = 'n'.repeat(300);

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pathgate-oracle-')));
  for (const dir of ['root/uploads', 'root/private', 'root-alias-target', 'out/dir']) {
    fs.mkdirSync(`${base}/${dir}`, { recursive: true });
  }
  fs.symlinkSync('loop', `${base}/out/loop`);
  fs.symlinkSync(`${base}/root/uploads`, `${base}/out/in`);
  fs.symlinkSync('root', `${base}/alias`);
});

afterAll(() => {
  if (base !== '') fs.rmSync(base, { recursive: true, force: true });
});

const policyOf = (root = `${base}/root`) =>
  new PermissionPolicy({ root, permissions: { fs: ['rw:./uploads/**'] }, resolve: watching });

/** The reason the route guard denies each value (a body's `p`) for, or `allow`. */
function reasons(policy: PermissionPolicy, values: readonly string[]): string[] {
  const guard = compileRouteGuard(policy, { mode: 'read', paths: [{ body: 'p' }] }, 'POST /x');
  return values.map((value) => {
    const { result } = runGuard(guard, { body: { p: value } });
    return result.ok ? 'allow' : result.denial.reason;
  });
}

describe('a client value lexically outside the root, with a resolver', () => {
  it('is never passed to the resolver, so no file outside is looked at', () => {
    const policy = policyOf();
    asked.length = 0;
    const outside = [`${base}/out/dir/x`, '../out/loop', '/etc/passwd', `${base}/out/in/a`];
    reasons(policy, outside);
    expect(asked).toEqual([]);
  });

  it('is denied path-not-in-allowlist whether what it names exists, loops or is missing', () => {
    const values = [
      `${base}/out/loop`,
      `${base}/out/missing`,
      `${base}/out/dir/${LONG}`,
      `${base}/missing/${LONG}`,
      `${base}/out/in/a`,
    ];
    expect(reasons(policyOf(), values)).toEqual(values.map(() => 'path-not-in-allowlist'));
  });

  it('is still resolved below the root as it was given, a link to the resolved root', () => {
    const policy = policyOf(`${base}/alias`);
    expect(reasons(policy, [`${base}/alias/uploads/a`, `${base}/root/uploads/a`])).toEqual([
      'allow',
      'allow',
    ]);
  });
});

describe('checkFs and the predicates, with a resolver (DESIGN.md step 8 for every value)', () => {
  it('resolve a value outside the root: a link back in is inside, a loop resolve-failed', () => {
    const policy = policyOf();
    const read = (value: string) => checkFs(policy, value, 'read');
    expect([read(`${base}/out/in/a`), read(`${base}/out/loop`)]).toMatchObject([
      { outcome: 'allow' },
      { outcome: 'deny', reason: 'resolve-failed' },
    ]);
    const value = `${base}/out/in/a`;
    const options = { resolve: watching };
    expect(isInside(value, `${base}/root`, options)).toBe(true);
    expect(inside('p', `${base}/root`, options)({ p: value })).toBe(true);
    expect(escapes('p', `${base}/root`, options)({ p: value })).toBe(false);
  });
});

describe('a name too long for any folder, with resolveSymlinks', () => {
  it('is denied alike below an existing folder the rules do not grant and a missing one', () => {
    expect(reasons(policyOf(), [`private/${LONG}`, `nowhere/${LONG}`])).toEqual([
      'path-not-in-allowlist',
      'path-not-in-allowlist',
    ]);
  });

  it('is judged by the rules where they grant it: opening it is what fails', () => {
    expect(reasons(policyOf(), [`uploads/${LONG}`, `uploads/none/${LONG}`])).toEqual([
      'allow',
      'allow',
    ]);
  });
});
