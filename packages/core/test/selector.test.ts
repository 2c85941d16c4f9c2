import { describe, expect, it } from 'vitest';
import { compileSelector, MISSING, ownValue } from '../src/selector.js';

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
