import { describe, expect, it } from 'vitest';
import { loggedPath } from '../src/index.js';

// What the adapters' deny log lines show of a canonical path the client made long.

describe('loggedPath', () => {
  it('keeps a path of up to 1,024 characters whole', () => {
    const path = `/${'a'.repeat(1023)}`;
    expect(loggedPath(path)).toBe(path);
  });

  it('cuts a longer one at 1,024 characters and counts the rest', () => {
    expect(loggedPath(`/${'a'.repeat(1_000_000)}`)).toBe(
      `/${'a'.repeat(1023)}… (${1_000_001 - 1024} more characters)`,
    );
  });

  it('never cuts a surrogate pair in half', () => {
    const shown = loggedPath(`/${'a'.repeat(1022)}${'😀'.repeat(10)}`);
    expect(shown.startsWith(`/${'a'.repeat(1022)}… (`)).toBe(true);
    expect(shown.isWellFormed()).toBe(true);
  });

  // The first and last high surrogates (U+10000, U+10FFFF), one pair across the cut, then ASCII.
  it.each(['\u{10000}', '😀', '\u{10FFFF}'])(
    'cuts before a pair %s that straddles the cut',
    (pair) => {
      expect(loggedPath(`/${'a'.repeat(1022)}${pair}bc`)).toBe(
        `/${'a'.repeat(1022)}… (4 more characters)`,
      );
    },
  );

  it('keeps a pair that ends at the 1,024th character, and cuts after it', () => {
    const whole = `/${'a'.repeat(1021)}😀`;
    expect(loggedPath(whole)).toBe(whole);
    expect(loggedPath(`${whole}b`)).toBe(`${whole}… (1 more character)`);
  });
});
