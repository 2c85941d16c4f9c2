import { describe, expect, it } from 'vitest';
import {
  checkFs,
  PermissionPolicy,
  SAND_PERM_CODES,
  SandboxPermissionError,
} from '../src/index.js';

// DESIGN.md, "Errors": SandboxPermissionError (extends Error) with `code`
// (from SAND_PERM_CODES, which holds at least DENIED), `message`, and
// `context: { capability: 'fs', reason }`.

const REASONS = [
  'path-not-in-allowlist',
  'mode-not-permitted',
  'not-a-string',
  'nul-byte',
  'invalid-unicode',
  'relative-root',
  'resolve-failed',
] as const;

describe('SAND_PERM_CODES', () => {
  it('holds DENIED as a non-empty string', () => {
    expect(typeof SAND_PERM_CODES.DENIED).toBe('string');
    expect(SAND_PERM_CODES.DENIED.length).toBeGreaterThan(0);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(SAND_PERM_CODES)).toBe(true);
    expect(() => {
      (SAND_PERM_CODES as { DENIED: string }).DENIED = 'changed';
    }).toThrow(TypeError);
    expect(SAND_PERM_CODES.DENIED).not.toBe('changed');
  });

  it('codes are distinct', () => {
    const codes = Object.values(SAND_PERM_CODES);
    expect(new Set(codes).size).toBe(codes.length);
  });
});

describe('SandboxPermissionError', () => {
  it.each(REASONS)('carries reason %s', (reason) => {
    const error = new SandboxPermissionError(reason);
    expect(error).toBeInstanceOf(SandboxPermissionError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('SandboxPermissionError');
    expect(error.code).toBe(SAND_PERM_CODES.DENIED);
    expect(Object.values(SAND_PERM_CODES)).toContain(error.code);
    expect(error.context).toEqual({ capability: 'fs', reason });
    expect(typeof error.message).toBe('string');
    expect(error.message.length).toBeGreaterThan(0);
    expect(typeof error.stack).toBe('string');
  });

  it('is caught as an Error and keeps its fields when thrown', () => {
    const thrown = (() => {
      try {
        throw new SandboxPermissionError('mode-not-permitted');
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).toMatchObject({
      name: 'SandboxPermissionError',
      code: SAND_PERM_CODES.DENIED,
      context: { capability: 'fs', reason: 'mode-not-permitted' },
    });
    expect(Object.prototype.toString.call(thrown)).toBe('[object Error]');
  });

  it('built from a checkFs deny, carries its reason and never the path or root', () => {
    const p = new PermissionPolicy({ root: '/srv/secret-root', permissions: { fs: ['./a'] } });
    const result = checkFs(p, 'hidden-name', 'read');
    if (result.outcome !== 'deny') throw new Error('expected a deny');
    const error = new SandboxPermissionError(result.reason);
    expect(error.context).toEqual({ capability: 'fs', reason: 'path-not-in-allowlist' });
    expect(error.message).not.toContain('secret-root');
    expect(error.message).not.toContain('hidden-name');
  });
});
