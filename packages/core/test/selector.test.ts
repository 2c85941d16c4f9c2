import { describe, expect, it } from 'vitest';
import { compileSelector, MISSING, ownValue, select } from '../src/selector.js';

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
