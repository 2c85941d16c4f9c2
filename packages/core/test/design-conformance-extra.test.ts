// DESIGN.md statements an audit found without a test of their own, run
// against the public entry as an outside tester would. The rest of the
// contract is in design-conformance.test.ts.
import { checkFs, escapes, inside, isInside, PermissionPolicy } from '@pathgate/core';
import { describe, expect, it } from 'vitest';

const policy = (fs: readonly string[], resolve?: (path: string) => string) =>
  new PermissionPolicy({ root: '/srv', permissions: { fs }, resolve });

describe('a leading "!" is an error; "\\x" is the character x', () => {
  it.each(['\\!x', 'r:\\!x', 'rw:\\!x'])('%j names the file !x', (rule) => {
    const p = policy([rule]);
    expect(checkFs(p, '!x', 'read')).toMatchObject({ outcome: 'allow' });
    expect(checkFs(p, 'x', 'read')).toMatchObject({ outcome: 'deny' });
  });

  it('an unescaped leading "!" still fails the build', () => {
    expect(() => policy(['!x'])).toThrow(TypeError);
  });
});

describe('checkFs: a resolver answer is normalized again through steps 2-7', () => {
  const answer = (text: string) => (path: string) => (path === '/srv/link' ? text : path);

  it('a lone surrogate in the answer is invalid-unicode', () => {
    const p = policy(['**'], answer('/srv/\uD800'));
    expect(checkFs(p, 'link', 'read')).toMatchObject({
      outcome: 'deny',
      reason: 'invalid-unicode',
    });
  });

  it('an NFD answer with dot segments is matched in its canonical form', () => {
    const p = policy(['caf\u00e9/*'], answer('/srv/x/../cafe\u0301/./a/'));
    expect(checkFs(p, 'link', 'read')).toMatchObject({ outcome: 'allow' });
  });
});

describe('the root of everything: .. at / stays at /', () => {
  it('every string lies inside /, whatever it climbs', () => {
    expect(isInside('../../etc', '/')).toBe(true);
    expect(inside('p', '/')({ p: '../../etc' })).toBe(true);
    expect(escapes('p', '/')({ p: ['../..', '/x/../..'] })).toBe(false);
  });

  it('a value that fails to canonicalize still escapes /', () => {
    expect(escapes('p', '/')({ p: 42 })).toBe(true);
    expect(inside('p', '/')({ p: 'a\0' })).toBe(false);
  });
});

describe('"costs almost nothing per request": `**` segments never backtrack', () => {
  // Ten `**` around eight `a`s and a `b` (both ends `**`, so no fixed segment
  // to test first) against fifty `a` segments and no `b`: a matcher that
  // tries every placement of the `a`s took 65 s to say no, far past the
  // test's timeout; the real one answers in under a millisecond.
  const stars = `**/${'a/**/'.repeat(8)}b/**`;
  const deep = `${'a/'.repeat(50)}c`;

  it('decides a deep path against many `**` at once', () => {
    const p = policy([stars]);
    expect(checkFs(p, deep, 'read')).toMatchObject({ outcome: 'deny' });
    expect(checkFs(p, `${deep}/b`, 'read')).toMatchObject({ outcome: 'allow' });
  });
});
