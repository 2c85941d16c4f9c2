import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The packages' type tests hold under exactOptionalPropertyTypes too, as a
// user who turns it on gets them: every optional option and spec field takes
// `undefined`, which pathgate reads as absent. `npx tsc -p tsconfig.json`
// checks them without it.

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('type tests under exactOptionalPropertyTypes', () => {
  it('compile', () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const config = join(ROOT, 'test', 'tsconfig.exact-optional.json');
    let output = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', config], { encoding: 'utf8' });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    expect(output).toBe('');
  }, 60_000);
});
