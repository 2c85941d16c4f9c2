import { describe, expect, it } from 'vitest';
import { readAdapterOptions } from '../src/index.js';
import { DEFAULT_LINGER_BYTES, DEFAULT_LINGER_MS } from '../src/linger.js';

// Claims of this package's README (and the options tables of the root and
// adapter READMEs) that no other test pins, one `it` each, under the section that makes them.

describe('README, "For adapter authors"', () => {
  it('lingerClose defaults to DEFAULT_LINGER_MS (2000) and DEFAULT_LINGER_BYTES (64 MiB)', () => {
    expect([DEFAULT_LINGER_MS, DEFAULT_LINGER_BYTES]).toEqual([2000, 64 * 1024 * 1024]);
  });

  it('readAdapterOptions fills the defaults the options tables list', () => {
    const { settings } = readAdapterOptions({ fs: [] }, []);
    expect(settings).toEqual({
      policy: expect.objectContaining({ root: '/', rules: [], dot: false }),
      onDeny: undefined,
      reportOnly: false,
      linger: { lingerMs: 2000, lingerBytes: 67108864 },
    });
  });
});
