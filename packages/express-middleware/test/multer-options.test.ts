import { describe, expect, it } from 'vitest';
import { pathgate } from '../src/index.js';

// gate.multer(options) is validated when it is called: options that are not
// an object are a TypeError naming them, never silently spread into multer's.

describe('gate.multer(options) that are not an object', () => {
  const gate = pathgate({ root: '/srv', fs: ['rw:uploads/**'] });
  const ROWS: readonly (readonly [string, unknown])[] = [
    ['a string', 'uploads'],
    ['a number', 42],
    ['a boolean', true],
    ['a function', () => ({})],
  ];
  it.each(ROWS)('%s → TypeError', (_name, options) => {
    expect(() => gate.multer(options as never)).toThrow(
      new TypeError('pathgate: gate.multer(): options must be an object'),
    );
    expect(() => gate.multer(options as never)).toThrow(TypeError);
  });
});
