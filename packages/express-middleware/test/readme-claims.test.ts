import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type PathgateOptions, pathgate } from '../src/index.js';

// Claims of this package's README that no other test pins, one `it` each,
// named by the README line.

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The message of the TypeError that `pathgate(options)` throws. */
function thrownBy(options: unknown): string {
  try {
    pathgate(options as PathgateOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as Error).message;
  }
  throw new Error('expected a TypeError');
}

describe('README, "Options"', () => {
  it('lines 66-70: the messages it quotes are the ones thrown, whole', () => {
    const quoted = [
      thrownBy({ fs: [], roots: '/srv' }),
      thrownBy({ root: 'srv', fs: [] }),
      thrownBy({ root: '/srv', fs: ['wr:./x'] }),
    ];
    for (const message of quoted) expect(README).toContain(`\`${message}\``);
  });
});
