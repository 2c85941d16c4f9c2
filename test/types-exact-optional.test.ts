import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, tscErrors } from './tsc.js';

// The packages' type tests hold under exactOptionalPropertyTypes too, as a
// user who turns it on gets them: every optional option and spec field takes
// `undefined`, which pathgate reads as absent. `npx tsc -p tsconfig.json`
// checks them without it.

describe('type tests under exactOptionalPropertyTypes', () => {
  it('compile', () => {
    expect(tscErrors(join(ROOT, 'test', 'tsconfig.exact-optional.json'))).toBe('');
  }, 60_000);
});
