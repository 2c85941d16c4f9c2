import { describe, expect, it } from 'vitest';
import { compileSelector, MISSING, ownValue, select, selectedValues } from '../src/selector.js';

// A route guard reads a one-key selector with `ownValue`, without the walk (route-guard.ts);
// the walk reads every key step with it too. What a request's value can hide behind a key.

describe('selector: the one-key read', () => {
  it('is marked only on one-key selectors', () => {
    expect(compileSelector('path')?.key).toBe('path');
    expect(compileSelector(['path'])?.key).toBe('path');
    expect(compileSelector(['a', 'b'])?.key).toBeUndefined();
    expect(compileSelector([0])?.key).toBeUndefined();
  });

  it('never reads the prototype chain, and a key holding undefined is missing', () => {
    expect(ownValue({}, 'toString')).toBe(MISSING);
    expect(ownValue(JSON.parse('{"__proto__":"x"}'), '__proto__')).toBe('x');
    expect(ownValue({ path: undefined }, 'path')).toBe(MISSING);
    expect(ownValue(['x'], '0')).toBe(MISSING);
    expect(ownValue(null, 'path')).toBe(MISSING);
    expect(ownValue('path', 'length')).toBe(MISSING);
    expect(ownValue({ path: null }, 'path')).toBe(null);
  });
});

describe('selector: holes and undefined', () => {
  it('a hole in a selector list is malformed, as undefined is', () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case under test
    expect(compileSelector([, 'path'])).toBeUndefined();
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case under test
    expect(compileSelector(['a', , 'b'])).toBeUndefined();
    expect(compileSelector([undefined, 'path'])).toBeUndefined();
  });

  it('an in-bounds index holding undefined or a hole selects a failing value, even mid-selector', () => {
    const files = compileSelector(['files', 0, 'path']);
    if (files === undefined) throw new Error('expected a selector');
    expect(select({ files: [undefined] }, files)).toBeUndefined();
    // biome-ignore lint/suspicious/noSparseArray: the hole is the case under test
    expect(select({ files: [, { path: 'x' }] }, files)).toBeUndefined();
    expect(select({ files: [] }, files)).toBe(MISSING);
    expect(select({ files: [{}] }, files)).toBe(MISSING);
    expect(select({ files: [{ path: 'a' }] }, files)).toBe('a');
  });
});

describe('selector: a selected list is read up to its first element that is not a string', () => {
  it('that element fails, so none after it is read', () => {
    const reads: string[] = [];
    const list = new Proxy(['a', 42, 'b', 'c'], {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads.push(key);
        return Reflect.get(target, key, receiver);
      },
    });
    expect(selectedValues(list)).toEqual(['a', 42]);
    expect(reads).toEqual(['0', '1']);
  });

  it('a sparse list of the longest length (multer makes one from `to[4294967294]`) stops at its first hole', () => {
    const list: unknown[] = ['a'];
    list[2 ** 32 - 2] = 'b';
    expect(selectedValues(list)).toEqual(['a', undefined]);
  });
});
