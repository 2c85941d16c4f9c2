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
  it('the main entry imports nothing from outside the package but node:fs, in the resolver alone', () => {
    const outside = [...outsideImports('index.ts')].filter(([, specifiers]) => specifiers.length);
    // resolveSymlinks (realpath.ts) and the folder its walk holds open (walked-folder.ts).
    expect(outside.sort()).toEqual([
      ['realpath.ts', ['node:fs']],
      ['walked-folder.ts', ['node:fs']],
    ]);
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

describe('"The root is literal text": glob syntax beyond "[", "{", "*" is ordinary in it too', () => {
  const roots = [
    '/srv\\',
    '/s\\*',
    '/srv?',
    '/**',
    '/a/**',
    '/!x',
    '/a]',
    '/a}',
    '/a,b',
    '/a\\b/c',
  ];

  it.each(roots)('root %j: relative rules name paths under the literal root only', (root) => {
    const p = new PermissionPolicy({ root, permissions: { fs: ['./x', 'rw:y/*'] } });
    expect(checkFs(p, 'x', 'read').outcome).toBe('allow');
    expect(checkFs(p, `${root}/x`, 'read').outcome).toBe('allow');
    expect(checkFs(p, 'y/z', 'write').outcome).toBe('allow');
    // a path the root would match if its text were a glob
    const globbed = `${root.replace(/[\\?*\]{},!]/g, 'Q')}/x`;
    expect(checkFs(p, globbed, 'read').outcome).toBe('deny');
    expect(checkFs(p, `${root}x/x`, 'read').outcome).toBe('deny');
  });

  it('an absolute rule names the literal root by escaping its syntax', () => {
    const build = (rule: string) =>
      new PermissionPolicy({ root: '/srv?', permissions: { fs: [rule] } });
    expect(checkFs(build('/srv\\?/x'), 'x', 'read').outcome).toBe('allow');
    // unescaped, `srv?` is glob syntax: the rule's literal root is `/`, outside `/srv?`
    expect(() => build('/srv?/x')).toThrow('lies outside the root');
  });
});

describe('rules: what is and is not glob syntax, for prefixes and ".."', () => {
  const outcomes = (rule: string, paths: string[], mode: 'read' | 'write' = 'read') => {
    const p = new PermissionPolicy({ root: '/srv', permissions: { fs: [rule] } });
    return paths.map((path) => checkFs(p, path, mode).outcome);
  };

  it.each(['a]', 'a}', 'a+@!(b|c)', 'x,y', '%2e'])(
    '".." may pop %j: characters the grammar does not name are literal',
    (segment) => {
      expect(outcomes(`${segment}/../x`, ['x', `${segment}/x`])).toEqual(['allow', 'deny']);
    },
  );

  it('"\\r:x" has no prefix ("\\" is no ASCII letter): it names the file r:x, read only', () => {
    expect(outcomes('\\r:x', ['r:x', 'x'])).toEqual(['allow', 'deny']);
    expect(outcomes('\\r:x', ['r:x'], 'write')).toEqual(['deny']);
    expect(outcomes('rw:\\rw:x', ['rw:x'], 'write')).toEqual(['allow']);
  });

  it.each(['a/..', 'rw:a/b/../..'])('%j normalizes to the root itself, as "." does', (rule) => {
    expect(outcomes(rule, ['/srv', '', 'a', 'a/b'])).toEqual(['allow', 'allow', 'deny', 'deny']);
  });
});

describe('glob table rows no test pinned', () => {
  const outcomes = (rule: string, paths: string[]) => {
    const p = new PermissionPolicy({ root: '/srv', permissions: { fs: [rule] } });
    return paths.map((path) => checkFs(p, path, 'read').outcome);
  };

  it('a class range that spans "/" still never matches "/"', () => {
    const paths = ['a0b', 'a/b', 'a.b', 'a1b'];
    expect(outcomes('a[.-0]b', paths)).toEqual(['allow', 'deny', 'allow', 'deny']);
    expect(outcomes('a[!.-0]b', paths)).toEqual(['deny', 'deny', 'deny', 'allow']);
  });

  it('a class range matches one code point, astral ones included', () => {
    expect(
      outcomes('[\u{1F600}-\u{1F64F}]', ['\u{1F610}', '\u{1F650}', '\u{1F600}\u{1F600}']),
    ).toEqual(['allow', 'deny', 'deny']);
  });

  it('"\\," inside braces is a literal comma, not a separator', () => {
    expect(outcomes('{a\\,b,c}', ['a,b', 'c', 'a', 'b', '{a,b,c}'])).toEqual([
      'allow',
      'allow',
      'deny',
      'deny',
      'deny',
    ]);
  });

  it('dot false: a segment that begins with a literal "." before a class matches a dotfile', () => {
    expect(outcomes('.[ab]', ['.a', '.c', 'a'])).toEqual(['allow', 'deny', 'deny']);
  });

  it('dot false: ".git/**" is .git itself and below it, but no dotfile below it', () => {
    expect(outcomes('.git/**', ['.git', '.git/x', '.git/x/y', '.git/.y'])).toEqual([
      'allow',
      'allow',
      'allow',
      'deny',
    ]);
  });

  it('dot false: a brace alternative holding "/" leaves the next segment its own leading dot', () => {
    expect(outcomes('{a,b/}.x', ['a.x', 'b/.x', '.x'])).toEqual(['allow', 'allow', 'deny']);
    expect(outcomes('{a/,}*', ['a/x', 'a/.x', 'x', '.x'])).toEqual([
      'allow',
      'deny',
      'allow',
      'deny',
    ]);
  });
});

describe('the root goes through the same steps: its resolver answer is normalized again', () => {
  const rootAnswer = (text: string) => (path: string) => (path === '/srv' ? text : path);

  it.each([
    ['/x/./cafe\u0301//', '/x/caf\u00e9/a'],
    ['/../..', '/a'],
  ])('canonicalize: a root answer %j joins a relative value at %j', (text, expected) => {
    expect(canonicalize('a', '/srv', { resolve: rootAnswer(text) })).toStrictEqual({
      ok: true,
      path: expected,
    });
  });

  it('PermissionPolicy: relative rules join the normalized answer', () => {
    const p = new PermissionPolicy({
      root: '/srv',
      permissions: { fs: ['./a'] },
      resolve: rootAnswer('/x/./cafe\u0301//'),
    });
    expect(checkFs(p, '/x/caf\u00e9/a', 'read').outcome).toBe('allow');
    expect(checkFs(p, '/x/cafe\u0301/a', 'read').outcome).toBe('allow');
  });
});

describe('"checkFs first checks the mode"', () => {
  // Reading pinned: "first" puts the mode before every other argument, the policy included.
  it.each([null, {}, 42])('a bad mode is reported before a bad policy (%j)', (policy) => {
    expect(() => checkFs(policy as never, 'a', 'exec' as never)).toThrow(/mode/);
  });
});
