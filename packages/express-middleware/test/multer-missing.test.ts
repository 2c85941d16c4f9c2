import { describe, expect, it, vi } from 'vitest';
import { pathgate } from '../src/index.js';

// multer is an optional peer dependency: an app that never installed it can
// use every gate but gate.multer(), which says what to install.

vi.mock('node:module', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:module')>();
  /** A require that cannot find multer, as in an app that never installed it. */
  const withoutMulter = (url: string | URL) => {
    const real = actual.createRequire(url);
    return Object.assign((id: string) => {
      if (id === 'multer') {
        throw Object.assign(new Error("Cannot find module 'multer'"), { code: 'MODULE_NOT_FOUND' });
      }
      return real(id);
    }, real);
  };
  return {
    ...actual,
    default: { ...actual, createRequire: withoutMulter },
    createRequire: withoutMulter,
  };
});

describe('gate.multer() without the multer package', () => {
  it('throws a TypeError that says what to install; the other gates work', () => {
    const gate = pathgate({ root: '/srv', fs: ['rw:uploads/**'] });
    expect(() => gate.multer()).toThrow(
      new TypeError('pathgate: gate.multer(): needs the multer package (npm install multer@^2.2)'),
    );
    expect(typeof gate.write({ file: 'f', under: 'uploads' })).toBe('function');
  });
});
