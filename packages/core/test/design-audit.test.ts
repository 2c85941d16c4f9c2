// DESIGN.md statements a statement-by-statement audit found with no exact
// test, run against the public entry as an outside tester would (the rest of
// the contract is in design-conformance.test.ts and its -extra twin).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type CanonicalizeOptions,
  canonicalize,
  checkFs,
  escapes,
  inside,
  isInside,
  PermissionPolicy,
} from '@pathgate/core';
import { describe, expect, it } from 'vitest';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/** Every module the main entry loads, with the specifiers it imports from outside the package. */
function outsideImports(entry: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const queue = [entry];
  for (const file of queue) {
    if (found.has(file)) continue;
    const text = readFileSync(join(SRC, file), 'utf8');
    const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]);
    const outside: string[] = [];
    for (const specifier of specifiers as string[]) {
      if (specifier.startsWith('./'))
        queue.push(join(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else outside.push(specifier);
    }
    found.set(file, outside);
  }
  return found;
}

describe('Packages: core has no framework imports, no I/O except in the realpath resolver', () => {
  it('the main entry imports nothing from outside the package but node:fs, in realpath.ts alone', () => {
    const outside = [...outsideImports('index.ts')].filter(([, specifiers]) => specifiers.length);
    expect(outside).toEqual([['realpath.ts', ['node:fs']]]);
  });
});

describe('isInside, inside, escapes: "the canonical root" is the resolved one', () => {
  // /srv is a symlink to /data: a resolver that follows it wherever it appears.
  const resolve = (path: string) => path.replace(/^\/srv(?=\/|$)/, '/data');
  const options: CanonicalizeOptions = { resolve };

  it.each([
    ['a', true],
    ['/srv/a', true],
    ['/data/a', true],
    ['/data', true],
    ['/srv2/a', false],
    ['../etc', false],
  ])('%j against /srv → %s', (value, expected) => {
    expect(isInside(value, '/srv', options)).toBe(expected);
    expect(inside('p', '/srv', options)({ p: value })).toBe(expected);
    expect(escapes('p', '/srv', options)({ p: value })).toBe(!expected);
  });

  it('a value that resolves out of the resolved root is outside', () => {
    // A relative value is joined to the resolved root, so the link is looked up there.
    const out: CanonicalizeOptions = {
      resolve: (path) => (path === '/data/link' ? '/etc/passwd' : resolve(path)),
    };
    expect(isInside('link', '/srv', out)).toBe(false);
    expect(escapes('p', '/srv', out)({ p: ['a', 'link'] })).toBe(true);
  });
});

describe('canonicalize step 8: the answer goes through steps 2-7 in their order', () => {
  const answer = (text: string) => ({ resolve: (path: string) => (path === '/srv' ? path : text) });

  it.each([
    ['NUL before a lone surrogate', '/\uD800\0', 'nul-byte'],
    ['a lone surrogate', '/a\uDC00', 'invalid-unicode'],
  ])('value answer: %s', (_name, text, reason) => {
    expect(canonicalize('a', '/srv', answer(text))).toStrictEqual({ ok: false, reason });
  });

  it('root answer: NUL before a lone surrogate', () => {
    const resolve = (path: string) => (path === '/srv' ? '/\uD800\0' : path);
    expect(canonicalize('a', '/srv', { resolve })).toStrictEqual({ ok: false, reason: 'nul-byte' });
  });
});

describe("literal root: DESIGN's own examples, verbatim", () => {
  const build = (root: string, rule: string) => () =>
    new PermissionPolicy({ root, permissions: { fs: [rule] } });

  it('/srv/uploads is the literal root of /srv/uploads/*.png', () => {
    expect(build('/srv/uploads', '/srv/uploads/*.png')).not.toThrow();
    expect(build('/srv/uploads/a', '/srv/uploads/*.png')).toThrow(TypeError);
    expect(build('/srv/uploads/a', '/srv/uploads/*.png')).toThrow('lies outside the root');
  });

  it('/example is the literal root of /example/foo*', () => {
    expect(build('/example', '/example/foo*')).not.toThrow();
    expect(build('/example/foo', '/example/foo*')).toThrow('lies outside the root');
  });

  it.each([
    ['/example/foo', 'allow'],
    ['/example/foobar', 'allow'],
    ['/example', 'deny'],
    ['/examplefoo', 'deny'],
    ['/example/foo/x', 'deny'],
    ['/srv/uploads/a.png', 'deny'],
  ])('root /, /example/foo* vs %j → %s', (path, outcome) => {
    const p = new PermissionPolicy({ permissions: { fs: ['/example/foo*'] } });
    expect(checkFs(p, path, 'read').outcome).toBe(outcome);
  });
});

describe('glob syntax: fine points no row pinned', () => {
  const outcome = (rule: string, path: string, dot = false) =>
    checkFs(new PermissionPolicy({ root: '/srv', permissions: { fs: [rule] }, dot }), path, 'read')
      .outcome;

  it.each([
    ['a[!b]c', 'a/c', 'deny'],
    ['a[^b]c', 'a/c', 'deny'],
    ['a[!b]c', 'axc', 'allow'],
    ['a[^b]c', 'axc', 'allow'],
  ])('a negated class never matches "/": %j vs %j → %s', (rule, path, expected) => {
    expect(outcome(rule, path)).toBe(expected);
  });

  it('a brace alternative that begins with an escaped dot begins with a literal "."', () => {
    expect(outcome('{\\.a,b}', '.a')).toBe('allow');
    expect(outcome('{\\.a,b}', 'b')).toBe('allow');
    expect(outcome('{\\.a,b}*', '.ax')).toBe('allow');
  });

  it('"{}" is one empty alternative, as "{a}" is one alternative', () => {
    expect(outcome('a{}', 'a')).toBe('allow');
    expect(outcome('a{}', 'a{}')).toBe('deny');
  });
});
