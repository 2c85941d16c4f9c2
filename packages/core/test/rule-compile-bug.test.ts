import { describe, expect, it, vi } from 'vitest';
import { PermissionPolicy } from '../src/index.js';

// A rule's problems are TypeErrors naming it; anything else compiling it
// throws is a bug, and must stay one: the CLI answers a TypeError as a bad
// policy (exit 2) and a bug as exit 3, and an app must not read a crash as
// its own typo. The bug is injected: no rule makes the compiler throw one.
vi.mock('../src/glob-compile.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/glob-compile.js')>();
  return {
    ...real,
    compileGlob: (glob: string, ...rest: [readonly string[], boolean]) => {
      if (glob.includes('bug')) throw new RangeError('a bug in the compiler');
      return real.compileGlob(glob, ...rest);
    },
  };
});

describe('a rule whose compiling fails with a bug', () => {
  it('throws the bug as it is, not a TypeError naming the rule', () => {
    const build = () => new PermissionPolicy({ root: '/srv', permissions: { fs: ['./bug/*'] } });
    expect(build).toThrow(RangeError);
    expect(build).toThrow('a bug in the compiler');
  });
});
