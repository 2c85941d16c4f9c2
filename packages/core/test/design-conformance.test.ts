// A contract index: /work/shared/DESIGN.md, section by section, written from
// that file alone and run against the public entry point, as an outside
// tester would. One table per section, in the file's order.
import {
  type CanonicalizeOptions,
  type CanonicalizeResult,
  canonicalize,
  checkFs,
  compileRouteGuard,
  denyBody,
  escapes,
  type FsAccessMode,
  inside,
  isInside,
  PermissionPolicy,
  type PermissionPolicyOptions,
  SAND_PERM_CODES,
  SandboxPermissionError,
  type Selector,
} from '@pathgate/core';
import { describe, expect, it } from 'vitest';

const ok = (path: string): CanonicalizeResult => ({ ok: true, path });
const fail = (reason: string) => ({ ok: false, reason });
const thrower = (thrown: unknown) => () => {
  throw thrown;
};
/** A resolver that maps some paths and leaves the rest as they are. */
const mapping =
  (map: Record<string, unknown>) =>
  (path: string): string =>
    (Object.hasOwn(map, path) ? map[path] : path) as string;

/** A resolver that changes nothing and records what it was given. */
const recorder = () => {
  const calls: string[] = [];
  const resolve = (path: string): string => {
    calls.push(path);
    return path;
  };
  return { calls, resolve };
};

// A hole at index 0 and at index 1, built without a sparse literal.
const holeAt = (length: number, index: number, fill: unknown): unknown[] => {
  const array: unknown[] = new Array(length);
  for (let i = 0; i < length; i++) if (i !== index) array[i] = fill;
  return array;
};

describe('canonicalize(value, root, options?)', () => {
  type Row = [
    name: string,
    value: unknown,
    root: unknown,
    expected: unknown,
    options?: CanonicalizeOptions,
  ];
  const rows: Row[] = [
    // Examples
    [
      'example: ../.. climbs out of the root',
      '../../etc/passwd',
      '/srv/sandbox',
      ok('/etc/passwd'),
    ],
    ['example: . // and .. are lexical', 'a/./b//c/..', '/srv', ok('/srv/a/b')],
    ['example: NUL', 'a\0b', '/srv', fail('nul-byte')],
    // 1. not a string
    ['1: number', 42, '/srv', fail('not-a-string')],
    ['1: null', null, '/srv', fail('not-a-string')],
    ['1: undefined', undefined, '/srv', fail('not-a-string')],
    ['1: boolean', true, '/srv', fail('not-a-string')],
    ['1: bigint', 1n, '/srv', fail('not-a-string')],
    ['1: symbol', Symbol('a'), '/srv', fail('not-a-string')],
    ['1: array of a string is not coerced', ['a'], '/srv', fail('not-a-string')],
    ['1: String object is not a string', new String('a'), '/srv', fail('not-a-string')],
    ['1: object with toString', { toString: () => 'a' }, '/srv', fail('not-a-string')],
    ['1: Buffer', Buffer.from('a'), '/srv', fail('not-a-string')],
    // 2. NUL
    ['2: NUL alone', '\0', '/srv', fail('nul-byte')],
    ['2: NUL at the end of an absolute path', '/etc/passwd\0', '/srv', fail('nul-byte')],
    ['2: NUL beats a lone surrogate (step 2 before 3)', '\uD800\0', '/srv', fail('nul-byte')],
    ['2: %00 is three characters, not NUL', 'a%00b', '/srv', ok('/srv/a%00b')],
    // 3. lone surrogates
    ['3: lone high surrogate', '\uD800', '/srv', fail('invalid-unicode')],
    ['3: lone low surrogate', 'a\uDC00b', '/srv', fail('invalid-unicode')],
    ['3: high surrogate at the end', 'a\uDBFF', '/srv', fail('invalid-unicode')],
    ['3: reversed pair', '\uDE00\uD83D', '/srv', fail('invalid-unicode')],
    ['3: a proper pair is fine', '\uD83D\uDE00', '/srv', ok('/srv/\uD83D\uDE00')],
    // 4. NFC
    ['4: NFD value becomes NFC', 'cafe\u0301', '/srv', ok('/srv/caf\u00e9')],
    ['4: NFD root becomes NFC', 'a', '/cafe\u0301', ok('/caf\u00e9/a')],
    ['4: NFC is not NFKC: two-dot leader stays', '\u2025', '/srv', ok('/srv/\u2025')],
    [
      '4: NFC is not NFKC: fullwidth dots stay',
      '\uFF0E\uFF0E/x',
      '/srv',
      ok('/srv/\uFF0E\uFF0E/x'),
    ],
    ['4: fullwidth solidus is not a separator', 'a\uFF0Fb', '/srv', ok('/srv/a\uFF0Fb')],
    // 5. joined to the root; nothing decoded
    ['5: relative is joined to the root', 'a', '/srv', ok('/srv/a')],
    ['5: absolute stays absolute', '/etc/passwd', '/srv', ok('/etc/passwd')],
    ['5: ~ is an ordinary name', '~', '/srv', ok('/srv/~')],
    ['5: ~user is an ordinary name', '~root/.ssh', '/srv', ok('/srv/~root/.ssh')],
    ['5: \\ is an ordinary character', '..\\..\\etc', '/srv', ok('/srv/..\\..\\etc')],
    ['5: \\ before a /', 'a\\/..', '/srv', ok('/srv')],
    ['5: %2e is three characters', '%2e%2e/%2e%2e/etc', '/srv', ok('/srv/%2e%2e/%2e%2e/etc')],
    ['5: %2f is not a separator', '..%2f..%2fetc', '/srv', ok('/srv/..%2f..%2fetc')],
    ['5: double encoding stays', '%252e%252e', '/srv', ok('/srv/%252e%252e')],
    ['5: the empty value is the root', '', '/srv', ok('/srv')],
    // 6. segments
    ['6: . alone', '.', '/srv', ok('/srv')],
    ['6: ./', './', '/srv', ok('/srv')],
    ['6: .. pops one segment', 'a/..', '/srv', ok('/srv')],
    ['6: .. pops the root segment', '..', '/srv', ok('/')],
    ['6: .. at / stays at /', '/../../..', '/srv', ok('/')],
    ['6: .. at / then a name', '../../../../x', '/srv', ok('/x')],
    ['6: ... is a name', '...', '/srv', ok('/srv/...')],
    ['6: .a and a. are names', '.a/a.', '/srv', ok('/srv/.a/a.')],
    ['6: a space is a name', ' /. ', '/srv', ok('/srv/ /. ')],
    ['6: .. after empty segments', 'a//..//b', '/srv', ok('/srv/b')],
    // 7. joined; no trailing slash; / is /
    ['7: trailing slash removed', 'a/b/', '/srv', ok('/srv/a/b')],
    ['7: / is /', '/', '/srv', ok('/')],
    ['7: many slashes', '///', '/srv', ok('/')],
    ['7: root with trailing slash', 'a', '/srv/', ok('/srv/a')],
    ['7: root / joined', 'a', '/', ok('/a')],
    ['7: root is normalized', 'a', '//srv/./x/../', ok('/srv/a')],
    // root steps
    ['root: not a string', 'a', 42, fail('not-a-string')],
    ['root: undefined', 'a', undefined, fail('not-a-string')],
    ['root: String object', 'a', new String('/srv'), fail('not-a-string')],
    ['root: NUL', 'a', '/srv\0', fail('nul-byte')],
    ['root: lone surrogate', 'a', '/\uD800', fail('invalid-unicode')],
    ['root: relative', 'a', 'srv', fail('relative-root')],
    ['root: empty', 'a', '', fail('relative-root')],
    ['root: ~ is relative', 'a', '~', fail('relative-root')],
    ['root: ./srv is relative', 'a', './srv', fail('relative-root')],
    ['root: \\ is not a leading /', 'a', '\\srv', fail('relative-root')],
    ['root: NUL beats relative (steps 1-3 first)', 'a', 'srv\0', fail('nul-byte')],
    ['root: lone surrogate beats relative', 'a', 'srv\uD800', fail('invalid-unicode')],
    ['root: checked for an absolute value too', '/etc', 'srv', fail('relative-root')],
    // The value's steps 1-3 run first, then the root's
    ['order: value not-a-string beats a bad root', 42, 42, fail('not-a-string')],
    ['order: value NUL beats a relative root', 'a\0', 'srv', fail('nul-byte')],
    ['order: value surrogate beats a root NUL', '\uD800', '/srv\0', fail('invalid-unicode')],
    ['order: a root NUL beats the value being fine', 'a', '/\0', fail('nul-byte')],
    // 8. resolve
    [
      '8: resolve is given the lexical path',
      'a/../b',
      '/srv',
      ok('/x/b'),
      { resolve: mapping({ '/srv/b': '/x/b' }) },
    ],
    ['8: throw', 'a', '/srv', fail('resolve-failed'), { resolve: thrower(new Error('x')) }],
    ['8: throw a string', 'a', '/srv', fail('resolve-failed'), { resolve: thrower('boom') }],
    ['8: throw undefined', 'a', '/srv', fail('resolve-failed'), { resolve: thrower(undefined) }],
    ['8: throw null', 'a', '/srv', fail('resolve-failed'), { resolve: thrower(null) }],
    [
      '8: return undefined',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': undefined }) },
    ],
    [
      '8: return a number',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': 42 }) },
    ],
    [
      '8: return null',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': null }) },
    ],
    [
      '8: return a String object',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': new String('/srv/a') }) },
    ],
    [
      '8: return relative',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': 'srv/a' }) },
    ],
    [
      '8: return empty',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': '' }) },
    ],
    [
      '8: return \\ first',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': '\\srv\\a' }) },
    ],
    // "a relative string returned by resolve is resolve-failed whatever else it holds"
    [
      '8: relative with NUL',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': 'a\0' }) },
    ],
    [
      '8: relative with surrogate',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv/a': '\uD800' }) },
    ],
    ['8: returned NUL', 'a', '/srv', fail('nul-byte'), { resolve: mapping({ '/srv/a': '/x\0' }) }],
    [
      '8: returned surrogate',
      'a',
      '/srv',
      fail('invalid-unicode'),
      { resolve: mapping({ '/srv/a': '/\uDC00' }) },
    ],
    [
      '8: returned text is normalized',
      'a',
      '/srv',
      ok('/b/d'),
      { resolve: mapping({ '/srv/a': '/b/./c//../d/' }) },
    ],
    ['8: returned .. at /', 'a', '/srv', ok('/'), { resolve: mapping({ '/srv/a': '/../..' }) }],
    [
      '8: returned NFD',
      'a',
      '/srv',
      ok('/caf\u00e9'),
      { resolve: mapping({ '/srv/a': '/cafe\u0301' }) },
    ],
    [
      '8: the root is resolved too',
      'a',
      '/srv',
      fail('resolve-failed'),
      { resolve: mapping({ '/srv': 'x' }) },
    ],
    [
      '8: a throw on the root',
      '/abs',
      '/srv',
      fail('resolve-failed'),
      { resolve: (p) => (p === '/srv' ? thrower(1)() : p) },
    ],
    [
      '8: relative value joined to the resolved root',
      'a',
      '/srv',
      ok('/real/a'),
      { resolve: mapping({ '/srv': '/real' }) },
    ],
    [
      '8: value failure beats a throwing resolve',
      42,
      '/srv',
      fail('not-a-string'),
      { resolve: thrower(new Error()) },
    ],
    [
      '8: relative root beats a throwing resolve',
      'a',
      'srv',
      fail('relative-root'),
      { resolve: thrower(new Error()) },
    ],
    ['8: resolve undefined counts as absent', 'a', '/srv', ok('/srv/a'), { resolve: undefined }],
  ];
  it.each(rows)('%s', (_name, value, root, expected, options) => {
    expect(canonicalize(value, root, options)).toStrictEqual(expected);
  });

  it('8: resolve is called for the root, then for the value, once each', () => {
    const { calls, resolve } = recorder();
    expect(canonicalize('a/./b/..', '/srv/', { resolve })).toStrictEqual(ok('/srv/a'));
    expect(calls).toEqual(['/srv', '/srv/a']);
  });

  it('8: resolve is not called when the value fails steps 1-3', () => {
    const { calls, resolve } = recorder();
    canonicalize('a\0', '/srv', { resolve });
    expect(calls).toEqual([]);
  });

  it('8: a resolve that is not a function fails closed (canonicalize never throws)', () => {
    // Reading pinned: "`resolve`, when given, must be a function" is a build-time TypeError for
    // the policy and the builders; canonicalize has no build time, so it answers resolve-failed.
    for (const resolve of [42, null, 'x', {}]) {
      expect(canonicalize('a', '/srv', { resolve } as never)).toStrictEqual(fail('resolve-failed'));
    }
  });

  it('8: an async resolve answers a Promise, not a string: resolve-failed', () => {
    expect(canonicalize('a', '/srv', { resolve: async (p: string) => p } as never)).toStrictEqual(
      fail('resolve-failed'),
    );
  });

  it('options are own keys: an inherited resolve is not one', () => {
    const options = Object.create({ resolve: () => '/srv/inside' }) as CanonicalizeOptions;
    expect(canonicalize('/etc/passwd', '/srv', options)).toStrictEqual(ok('/etc/passwd'));
    expect(isInside('/etc/passwd', '/srv', options)).toBe(false);
    expect(escapes('p', '/srv', options)({ p: '/etc/passwd' })).toBe(true);
  });

  it('never throws, whatever resolve throws', () => {
    const weird = {
      get message() {
        throw new Error('no');
      },
    };
    expect(canonicalize('a', '/srv', { resolve: thrower(weird) })).toStrictEqual(
      fail('resolve-failed'),
    );
  });
});

describe('isInside(value, root, options?)', () => {
  type Row = [value: unknown, root: unknown, expected: boolean, options?: CanonicalizeOptions];
  const rows: Row[] = [
    ['/srv/a', '/srv', true],
    ['/srv2', '/srv', false],
    ['/srv2/a', '/srv', false],
    ['/sr', '/srv', false],
    ['/srv-a', '/srv', false],
    ['/srv', '/srv', true], // equals the root
    ['/srv/', '/srv', true],
    ['/srv/a', '/srv/', true],
    ['', '/srv', true],
    ['.', '/srv', true],
    ['a/b', '/srv', true],
    ['..', '/srv', false],
    ['a/../..', '/srv', false],
    ['/srv/a/../../srv/b', '/srv', true],
    ['/SRV/a', '/srv', false],
    ['/anything/at/all', '/', true],
    ['/', '/', true],
    ['/', '/srv', false],
    ['/srv[1]/a', '/srv[1]', true],
    ['/srv1/a', '/srv[1]', false],
    ['/srv/*', '/srv/*', true],
    ['/srv/a', '/srv/*', false],
    ['/caf\u00e9/x', '/cafe\u0301', true],
    ['%2e%2e/etc', '/srv', true],
    // Any failure is false
    [42, '/srv', false],
    [null, '/srv', false],
    ['a\0', '/srv', false],
    ['\uD800', '/srv', false],
    ['a', 'srv', false],
    ['a', null, false],
    ['/srv', '', false],
    ['a', '/srv', false, { resolve: thrower(new Error('x')) }],
    ['a', '/srv', false, { resolve: thrower('x') }],
    ['link', '/srv', false, { resolve: mapping({ '/srv/link': '/etc/passwd' }) }],
    ['a', '/srv', false, { resolve: mapping({ '/srv/a': 'srv/a' }) }],
  ];
  it.each(rows)('isInside(%j, %j) → %s', (value, root, expected, options) => {
    expect(isInside(value, root, options)).toBe(expected);
  });
});

describe('inside(selector, root, options?) and escapes(selector, root, options?)', () => {
  describe('builders throw a TypeError at build time', () => {
    const badSelectors: [string, unknown][] = [
      ['empty key', ''],
      ['empty list', []],
      ['empty key in a list', ['']],
      ['empty key after a good one', ['a', '']],
      ['negative index', ['a', -1]],
      ['fractional index', ['a', 1.5]],
      ['NaN index', [NaN]],
      ['Infinity index', [Number.POSITIVE_INFINITY]],
      ['object step', [{}]],
      ['null step', [null]],
      ['boolean step', [true]],
      ['number selector', 42],
      ['null selector', null],
      ['undefined selector', undefined],
      ['object selector', { key: 'a' }],
    ];
    const badRoots: [string, unknown, CanonicalizeOptions?][] = [
      ['relative root', 'srv'],
      ['empty root', ''],
      ['number root', 42],
      ['NUL root', '/srv\0'],
      ['lone surrogate root', '/\uD800'],
      ['root whose resolve throws', '/srv', { resolve: thrower(new Error('x')) }],
      ['root whose resolve is relative', '/srv', { resolve: () => 'srv' }],
    ];
    for (const build of [inside, escapes]) {
      it.each(badSelectors)(`${build.name}: %s`, (_name, selector) => {
        expect(() => build(selector as Selector, '/srv')).toThrow(TypeError);
      });
      it.each(badRoots)(`${build.name}: %s`, (_name, root, options) => {
        expect(() => build('path', root as string, options)).toThrow(TypeError);
      });
    }
    it('a good selector and root build', () => {
      expect(typeof inside(['files', 0, 'path'], '/srv')).toBe('function');
      expect(typeof escapes('path', '/')).toBe('function');
    });
  });

  const jsonProto = JSON.parse('{"__proto__": "/etc/passwd"}');
  const inherited = Object.create({ path: '/etc/passwd' });
  const nullProto = Object.assign(Object.create(null), { path: '/etc/passwd' });
  class Args {
    path = '/etc/passwd';
  }
  // [name, selector, args, inside, escapes]; root is /srv.
  type Row = [name: string, selector: Selector, args: unknown, inside: boolean, escapes: boolean];
  const rows: Row[] = [
    ['a path inside', 'path', { path: 'a/b' }, true, false],
    ['the root itself', 'path', { path: '/srv' }, true, false],
    ['the empty string is the root', 'path', { path: '' }, true, false],
    ['a path outside', 'path', { path: '/etc/passwd' }, false, true],
    ['/srv2 is outside /srv', 'path', { path: '/srv2' }, false, true],
    ['.. climbs out', 'path', { path: '../x' }, false, true],
    ['a nested selector', ['files', 0, 'path'], { files: [{ path: 'a' }] }, true, false],
    [
      'a nested selector, outside',
      ['files', 0, 'path'],
      { files: [{ path: '/etc' }] },
      false,
      true,
    ],
    // non-string values fail, so escapes matches
    ['null fails', 'path', { path: null }, false, true],
    ['42 fails', 'path', { path: 42 }, false, true],
    ['an object fails', 'path', { path: {} }, false, true],
    ['true fails', 'path', { path: true }, false, true],
    ['NUL fails', 'path', { path: 'a\0' }, false, true],
    ['lone surrogate fails', 'path', { path: '\uD800' }, false, true],
    // missing
    ['key absent', 'path', {}, false, false],
    ['key holds undefined', 'path', { path: undefined }, false, false],
    ['constructor on {} is missing', 'constructor', {}, false, false],
    ['toString on {} is missing', 'toString', {}, false, false],
    ['__proto__ on {} is missing', '__proto__', {}, false, false],
    ['an inherited key is missing', 'path', inherited, false, false],
    ['an own __proto__ key is read', '__proto__', jsonProto, false, true],
    ['a null-prototype object is read', 'path', nullProto, false, true],
    ['a class instance own field is read', 'path', new Args(), false, true],
    ['index past the end', ['files', 1], { files: ['a'] }, false, false],
    ['index on an empty array', ['files', 0], { files: [] }, false, false],
    ['index meets an object', ['files', 0], { files: { 0: '/etc' } }, false, false],
    ['index meets a string', ['files', 0], { files: '/etc' }, false, false],
    ['key meets an array', ['files', 'length'], { files: ['/etc'] }, false, false],
    ['string key "0" meets an array', ['files', '0'], { files: ['/etc'] }, false, false],
    ['key meets a string', ['p', 'length'], { p: '/etc' }, false, false],
    ['key meets null', ['p', 'q'], { p: null }, false, false],
    ['key meets a number', ['p', 'q'], { p: 42 }, false, false],
    ['args null', 'path', null, false, false],
    ['args undefined', 'path', undefined, false, false],
    ['args a string', 'length', '/etc/passwd', false, false],
    ['args an array, key selector', 'path', [{ path: '/etc' }], false, false],
    ['args an array, index selector', [0], ['/etc'], false, true],
    ['args a number', 'path', 42, false, false],
    // Reading pinned for "a key meets ... any non-object": a function is not read (no request
    // parser yields one), so its own keys are missing.
    [
      'key meets a function',
      ['p', 'q'],
      { p: Object.assign(() => 0, { q: '/etc' }) },
      false,
      false,
    ],
    // in-bounds undefined or hole: a failing value, not missing
    ['in-bounds undefined index', ['files', 0], { files: [undefined] }, false, true],
    ['in-bounds hole index', ['files', 0], { files: holeAt(2, 0, 'a') }, false, true],
    // a selected array
    ['array all inside', 'paths', { paths: ['a', 'b/c'] }, true, false],
    ['array one outside', 'paths', { paths: ['a', '/etc'] }, false, true],
    ['array empty', 'paths', { paths: [] }, false, false],
    ['array with undefined', 'paths', { paths: ['a', undefined] }, false, true],
    ['array with a hole', 'paths', { paths: holeAt(3, 1, 'a') }, false, true],
    ['array of holes only', 'paths', { paths: new Array(2) }, false, true],
    ['array with null', 'paths', { paths: [null] }, false, true],
    ['array with 42', 'paths', { paths: ['a', 42] }, false, true],
    ['array nested in array', 'paths', { paths: [['a']] }, false, true],
    ['array with NUL', 'paths', { paths: ['a', 'b\0'] }, false, true],
  ];
  it.each(rows)('%s', (_name, selector, args, insideExpected, escapesExpected) => {
    expect(inside(selector, '/srv')(args)).toBe(insideExpected);
    expect(escapes(selector, '/srv')(args)).toBe(escapesExpected);
  });

  it('the root is canonicalized: /srv/../srv/ is /srv', () => {
    expect(inside('p', '/srv/../srv/')({ p: '/srv/x' })).toBe(true);
    expect(inside('p', '/srv/../srv/')({ p: '/srv2/x' })).toBe(false);
  });

  it('options.resolve is applied to the selected values', () => {
    const resolve = mapping({ '/srv/link': '/etc/passwd', '/srv/bad': 'rel' });
    expect(inside('p', '/srv', { resolve })({ p: 'link' })).toBe(false);
    expect(escapes('p', '/srv', { resolve })({ p: 'link' })).toBe(true);
    expect(escapes('p', '/srv', { resolve })({ p: 'bad' })).toBe(true);
    expect(inside('p', '/srv', { resolve })({ p: 'ok' })).toBe(true);
  });

  it('resolve, when given, must be a function', () => {
    for (const resolve of ['x', 42, null, {}]) {
      expect(() => inside('p', '/srv', { resolve } as never)).toThrow(TypeError);
      expect(() => escapes('p', '/srv', { resolve } as never)).toThrow(TypeError);
    }
    expect(inside('p', '/srv', { resolve: undefined })({ p: 'a' })).toBe(true);
  });

  it('a throwing resolve at run time fails closed', () => {
    const resolve = (p: string) => (p === '/srv' ? p : thrower('x')());
    expect(inside('p', '/srv', { resolve })({ p: 'a' })).toBe(false);
    expect(escapes('p', '/srv', { resolve })({ p: 'a' })).toBe(true);
  });
});

describe('PermissionPolicy and checkFs(policy, path, mode)', () => {
  const policy = (fs: readonly string[], extra: Partial<PermissionPolicyOptions> = {}) =>
    new PermissionPolicy({ root: '/srv', permissions: { fs }, ...extra });
  const build = (options: unknown) => () =>
    new PermissionPolicy(options as PermissionPolicyOptions);

  describe('building: every problem is a TypeError whose message names the option or the rule', () => {
    type Row = [name: string, options: unknown, names: RegExp | string];
    const rows: Row[] = [
      ['no options', undefined, /options|permissions/],
      ['null options', null, /options|permissions/],
      ['root a number', { root: 42, permissions: { fs: [] } }, 'root'],
      ['root null', { root: null, permissions: { fs: [] } }, 'root'],
      ['root relative', { root: 'srv', permissions: { fs: [] } }, 'root'],
      ['root empty', { root: '', permissions: { fs: [] } }, 'root'],
      ['root ~', { root: '~', permissions: { fs: [] } }, 'root'],
      ['root NUL', { root: '/srv\0', permissions: { fs: [] } }, 'root'],
      ['root lone surrogate', { root: '/\uD800', permissions: { fs: [] } }, 'root'],
      ['root String object', { root: new String('/srv'), permissions: { fs: [] } }, 'root'],
      [
        'root resolves to a throw',
        { root: '/srv', permissions: { fs: [] }, resolve: thrower(1) },
        'root',
      ],
      ['permissions missing', { root: '/srv' }, 'permissions'],
      ['permissions undefined', { root: '/srv', permissions: undefined }, 'permissions'],
      ['permissions null', { root: '/srv', permissions: null }, 'permissions'],
      ['permissions a string', { root: '/srv', permissions: 'a' }, 'permissions'],
      ['fs missing', { root: '/srv', permissions: {} }, 'fs'],
      ['fs null', { root: '/srv', permissions: { fs: null } }, 'fs'],
      ['fs a string', { root: '/srv', permissions: { fs: './a' } }, 'fs'],
      ['fs array-like', { root: '/srv', permissions: { fs: { length: 0 } } }, 'fs'],
      ['fs holds a number', { root: '/srv', permissions: { fs: [42] } }, /fs|rule/],
      ['fs holds null', { root: '/srv', permissions: { fs: ['a', null] } }, /fs|rule/],
      ['fs holds a hole', { root: '/srv', permissions: { fs: holeAt(2, 0, 'a') } }, /fs|rule/],
      ['dot a string', { permissions: { fs: [] }, dot: 'true' }, 'dot'],
      ['dot a number', { permissions: { fs: [] }, dot: 1 }, 'dot'],
      ['dot null', { permissions: { fs: [] }, dot: null }, 'dot'],
      ['resolve a string', { permissions: { fs: [] }, resolve: 'realpath' }, 'resolve'],
      ['resolve an object', { permissions: { fs: [] }, resolve: {} }, 'resolve'],
      ['resolve null', { permissions: { fs: [] }, resolve: null }, 'resolve'],
    ];
    it.each(rows)('%s', (_name, options, names) => {
      expect(build(options)).toThrow(TypeError);
      expect(build(options)).toThrow(names);
    });

    it('an own key holding undefined counts as absent', () => {
      const p = new PermissionPolicy({
        root: undefined,
        permissions: { fs: ['/srv/*'] },
        dot: undefined,
        resolve: undefined,
      });
      expect(checkFs(p, '/srv/a', 'read').outcome).toBe('allow');
      expect(checkFs(p, '/srv/.a', 'read').outcome).toBe('deny'); // dot defaults to false
    });

    it('an option a prototype of the caller supplies is an error, not an absent key', () => {
      // Read as absent, a class's root getter left the root at / without a word.
      const options = Object.assign(Object.create({ root: '/srv' }), {
        permissions: { fs: ['/srv/*'] },
      });
      expect(build(options)).toThrow(
        'PermissionPolicy: root is inherited from a prototype: give it as an own property',
      );
      const resolver = Object.assign(Object.create({ resolve: () => '/x' }), {
        permissions: { fs: [] },
      });
      expect(build(resolver)).toThrow('PermissionPolicy: resolve is inherited from a prototype');
      class Options {
        permissions = { fs: ['./a/*'] };
        get root() {
          return '/srv';
        }
      }
      expect(build(new Options())).toThrow('PermissionPolicy: root is inherited from a prototype');
      const fs = Object.create({ fs: ['./a/*'] });
      expect(build({ root: '/srv', permissions: fs })).toThrow(
        'PermissionPolicy: permissions.fs is inherited from a prototype',
      );
    });

    it('an own option is read even when a prototype has one too; a null-prototype object’s missing ones are absent', () => {
      const shadowed = Object.assign(Object.create({ root: '/etc' }), {
        root: '/srv',
        permissions: { fs: ['./*'] },
      });
      expect(new PermissionPolicy(shadowed).root).toBe('/srv');
      // No Object.prototype on its chain: an option it lacks is absent, not inherited.
      const bare = Object.assign(Object.create(null), { permissions: { fs: ['/srv/*'] } });
      expect(new PermissionPolicy(bare).root).toBe('/');
    });

    it('an option from a polluted Object.prototype counts as absent', () => {
      const proto = Object.prototype as Record<string, unknown>;
      proto.root = '/etc';
      proto.dot = true;
      try {
        const p = new PermissionPolicy({ permissions: { fs: ['/srv/*'] } });
        expect(p.root).toBe('/');
        expect(checkFs(p, '/srv/.a', 'read').outcome).toBe('deny'); // dot is false
      } finally {
        delete proto.root;
        delete proto.dot;
      }
    });

    it('root defaults to /', () => {
      const p = new PermissionPolicy({ permissions: { fs: ['/etc/*'] } });
      expect(checkFs(p, 'etc/passwd', 'read').outcome).toBe('allow');
    });

    it('fs: [] is valid and denies everything, the root included', () => {
      const p = policy([]);
      for (const path of ['', '/srv', 'a', '/srv/a/b'] as const) {
        for (const mode of ['read', 'write'] as const) {
          expect(checkFs(p, path, mode)).toMatchObject({
            outcome: 'deny',
            reason: 'path-not-in-allowlist',
          });
        }
      }
    });
  });

  describe('rules: [r:|rw:]<glob>, glob normalization, inside the root', () => {
    // Rules that build (root /srv) and a path each allows, with the modes it grants.
    type Good = [rule: string, path: string, modes: 'r' | 'rw'];
    const good: Good[] = [
      ['uploads/*', 'uploads/a', 'r'],
      ['r:uploads/*', 'uploads/a', 'r'],
      ['rw:uploads/*', 'uploads/a', 'rw'],
      ['./uploads/*', 'uploads/a', 'r'],
      ['/srv/uploads/*', 'uploads/a', 'r'],
      ['rw:./uploads/*', '/srv/uploads/a', 'rw'],
      // no prefix when the text before the first ':' is not only ASCII letters
      [':x', ':x', 'r'],
      ['r1:x', 'r1:x', 'r'],
      ['./reports:2024/*', 'reports:2024/q3', 'r'],
      ['r :x', 'r :x', 'r'],
      ['\u00e9:x', '\u00e9:x', 'r'],
      ['r*:x', 'rab:x', 'r'], // `r*` is not only letters: no prefix
      ['./!x', '!x', 'r'], // a `!` after `./` does not lead the glob
      ['r:rw:x', 'rw:x', 'r'], // the prefix is r; the glob is the literal name rw:x
      ['rw:r:x', 'r:x', 'rw'],
      ['rw:a:b:c', 'a:b:c', 'rw'],
      // normalized like a path
      ['.', '', 'r'],
      ['./', '/srv', 'r'],
      ['r:.', '/srv', 'r'],
      ['/srv', '/srv', 'r'],
      ['/srv/', '/srv', 'r'],
      ['uploads//x', 'uploads/x', 'r'],
      ['uploads/./x', 'uploads/x', 'r'],
      ['a/../uploads/x', 'uploads/x', 'r'], // .. pops a literal segment
      ['a/b/../../x', 'x', 'r'],
      ['../srv/x', 'x', 'r'], // .. pops the root's own (literal) segment and comes back inside
      ['uploads/x/', 'uploads/x', 'r'],
      ['cafe\u0301/*', 'caf\u00e9/a', 'r'], // NFC
      ['caf\u00e9/*', 'cafe\u0301/a', 'r'],
      // fine points
      ['{uploads/tmp,cache}/*', 'uploads/tmp/a', 'r'],
      ['{uploads/tmp,cache}/*', 'cache/a', 'r'],
      ['a]', 'a]', 'r'],
      ['a}', 'a}', 'r'],
      ['{a}', 'a', 'r'],
      ['x!', 'x!', 'r'],
      ['a/!b', 'a/!b', 'r'], // ! not at the start is literal
      ['**', 'a/b/c', 'r'],
      ['/srv/**', '/srv/a', 'r'],
    ];
    it.each(good)('%j builds and allows %j (%s)', (rule, path, modes) => {
      const p = policy([rule]);
      expect(checkFs(p, path, 'read').outcome).toBe('allow');
      const write = checkFs(p, path, 'write');
      expect(write.outcome === 'allow' ? 'rw' : (write as { reason: string }).reason).toBe(
        modes === 'rw' ? 'rw' : 'mode-not-permitted',
      );
    });

    type Bad = [name: string, rule: string, root?: string];
    const bad: Bad[] = [
      ['R: prefix', 'R:x'],
      ['RW: prefix', 'RW:x'],
      ['wr: prefix', 'wr:x'],
      ['w: prefix', 'w:x'],
      ['c: prefix (a drive letter)', 'c:x'],
      ['rr: prefix', 'rr:x'],
      ['unknown word prefix', 'reports:2024/*'],
      ['empty glob', ''],
      ['empty glob after r:', 'r:'],
      ['empty glob after rw:', 'rw:'],
      ['leading !', '!uploads/*'],
      ['leading ! after a prefix', 'rw:!uploads/*'],
      ['NUL', 'uploads/\0'],
      ['lone surrogate', 'uploads/\uD800'],
      ['unbalanced [', 'uploads/[a'],
      ['unbalanced {', 'uploads/{a,b'],
      ['unbalanced nested {', 'uploads/{a,{b}'],
      ['[ closed only after a /', 'a[b/c]'],
      ['trailing \\', 'uploads/a\\'],
      ['.. pops a * segment', 'uploads/*/../x'],
      ['.. pops a ** segment', '**/../x'],
      ['.. pops a ? segment', 'a?/../x'],
      ['.. pops a class segment', '[ab]/../x'],
      ['.. pops a brace segment', '{a,b}/../x'],
      ['rule outside the root', '/etc/*'],
      ['/srv2 is outside /srv', '/srv2/*'],
      ['.. out of the root', '../x'],
      ['.. out of the root, later', 'uploads/../../x'],
      ['literal root / is outside /srv', '/*'],
      ['literal root /sr is outside /srv', '/sr*/x'],
      ['literal root / of /srv* is outside /srv', '/srv*/x'],
      ['literal root of a brace at the top', '/{srv,etc}/x'],
      // the root is literal text: a rule must start with its literal characters
      ['root with * is literal', '/srv/*/x', '/srv/*'],
      ['root with [ is literal', '/srv[12]/x', '/srv[12]'],
    ];
    it.each(bad)('%s: %j is a TypeError naming the rule', (_name, rule, root = '/srv') => {
      const make = () => new PermissionPolicy({ root, permissions: { fs: ['./ok', rule] } });
      expect(make).toThrow(TypeError);
      if (/^[\x20-\x7e]+$/.test(rule)) expect(make).toThrow(rule);
    });

    it('.. at / stays at / in a rule under root /', () => {
      const p = new PermissionPolicy({ permissions: { fs: ['../etc/*'] } });
      expect(checkFs(p, '/etc/passwd', 'read').outcome).toBe('allow');
    });

    it('the root is literal text: [, {, * in it are ordinary', () => {
      for (const root of ['/srv[1]', '/srv{a,b}', '/srv/*']) {
        const p = new PermissionPolicy({ root, permissions: { fs: ['./a'] } });
        expect(checkFs(p, 'a', 'read').outcome).toBe('allow');
        expect(checkFs(p, `${root}/a`, 'read').outcome).toBe('allow');
        for (const other of ['/srv1/a', '/srva/a', '/srv/x/a', '/srv/a']) {
          expect(checkFs(p, other, 'read').outcome).toBe('deny');
        }
      }
    });

    it('.. may pop a \\-escape-only segment: it is literal, not glob syntax', () => {
      // Reading chosen for "A `..` that would pop a segment holding glob syntax": an escape-only segment names one file.
      expect(checkFs(policy(['\\*/../x']), 'x', 'read').outcome).toBe('allow');
    });

    it('a \\-escape-only segment is literal and counts toward the literal root', () => {
      // literal root /srv/*/x lies inside the literal policy root /srv/*
      const p = new PermissionPolicy({ root: '/srv/*', permissions: { fs: ['/srv/\\*/x'] } });
      expect(checkFs(p, '/srv/*/x', 'read').outcome).toBe('allow');
      expect(checkFs(p, '/srv/a/x', 'read').outcome).toBe('deny');
    });
  });

  describe('glob syntax', () => {
    // [glob (relative to /srv), path, allowed?]
    type Row = [glob: string, path: string, allowed: boolean];
    const rows: Row[] = [
      // *
      ['uploads/*', 'uploads/a.png', true],
      ['uploads/*', 'uploads', false],
      ['uploads/*', 'uploads/a/b', false],
      ['uploads/*', 'uploads2/a', false],
      ['a*', 'a', true], // zero characters
      ['a*', 'abc', true],
      ['a*', 'ba', false],
      ['*.png', 'x.png', true],
      ['*.png', 'x.jpg', false],
      ['*.png', 'x.png/y', false],
      // **
      ['uploads/**', 'uploads', true],
      ['uploads/**', 'uploads/a', true],
      ['uploads/**', 'uploads/a/b/c', true],
      ['uploads/**', 'uploads2', false],
      ['uploads/**', 'uploads2/a', false],
      ['uploads/**', 'upload', false],
      ['**/x', 'x', true],
      ['**/x', 'a/b/x', true],
      ['**/x', 'a/b/xx', false],
      ['a/**/b', 'a/b', true],
      ['a/**/b', 'a/x/y/b', true],
      ['a/**/b', 'a/x/y/c', false],
      ['a**b', 'axxb', true], // ** inside a segment acts as *
      ['a**b', 'ax/yb', false],
      ['a**', 'a/b', false],
      ['**', '', true],
      // ?
      ['a?c', 'abc', true],
      ['a?c', 'ac', false],
      ['a?c', 'abbc', false],
      ['a?c', 'a\uD83D\uDE00c', true], // one code point, not one UTF-16 unit
      ['a?c', 'ae\u0301c', true], // NFC: é is one code point
      ['?', 'a/b', false],
      // classes
      ['[abc]', 'a', true],
      ['[abc]', 'd', false],
      ['[abc]', '[abc]', false], // never its own text
      ['[abc]', 'ab', false],
      ['[a-z]', 'm', true],
      ['[a-z]', 'M', false],
      ['[a-z]', '-', false],
      ['[!a]', 'b', true],
      ['[!a]', 'a', false],
      ['[^a]', 'b', true],
      ['[^a]', 'a', false],
      ['[^a]', '[^a]', false],
      ['x[!a]', 'x\uD83D\uDE00', true], // one character
      ['[\u00e9]', 'e\u0301', true],
      // braces
      ['{a,b}', 'a', true],
      ['{a,b}', 'b', true],
      ['{a,b}', 'c', false],
      ['{a,b}', 'ab', false],
      ['{a,b}', '{a,b}', false],
      ['{a,{b,c}}', 'c', true],
      ['{a,b*}', 'bxx', true],
      ['{a,b*}', 'axx', false],
      ['{1..3}', '2', false], // no numeric ranges
      ['{1..3}', '1..3', true],
      ['{a..c}', 'b', false],
      ['{uploads/tmp,cache}/*', 'uploads/a', false],
      ['{a}', 'a', true],
      ['{a}', '{a}', false],
      // \x
      ['a\\*b', 'a*b', true],
      ['a\\*b', 'axb', false],
      ['\\[a]', '[a]', true],
      ['\\[a]', 'a', false],
      ['\\{a,b}', '{a,b}', true],
      ['\\{a,b}', 'a', false],
      ['a\\?', 'a?', true],
      ['a\\?', 'ab', false],
      ['\\a', 'a', true],
      // everything else is literal
      ['a(b|c)', 'a(b|c)', true],
      ['a(b|c)', 'ab', false],
      ['a|b', 'a', false],
      ['a|b', 'a|b', true],
      ['a+', 'aa', false],
      ['a+', 'a+', true],
      ['@(a)', 'a', false],
      ['@(a)', '@(a)', true],
      ['+(a)', '+(a)', true],
      ['a!(b)', 'a!(b)', true],
      ['a!(b)', 'a', false],
      ['a.b', 'axb', false],
      ['a.*', 'a.xyz', true],
      ['a.*', 'abc', false],
      ['a^b$', 'a^b$', true],
      ['a$', 'a', false],
      ['^a', 'a', false],
      ['a]', 'a]', true],
      ['a}', 'a}', true],
      ['x,y', 'x,y', true],
      ['x,y', 'x', false],
      ['%2e%2e', '%2e%2e', true],
      ['%2e%2e', '..', false],
      ['~', '~', true],
      ['a\\\\b', 'a\\b', true], // \\ is a literal backslash
      // Reading pinned for "`\x` | the character `x`, literally" with x = '/': no segment holds
      // a '/', so the rule is valid and matches nothing.
      ['a\\/b', 'a/b', false],
      ['a\\/b', 'a\\/b', false],
      // names an object map could confuse
      ['__proto__', '__proto__', true],
      ['__proto__/*', '__proto__/a', true],
      ['uploads/*', '__proto__', false],
      ['uploads/*', 'constructor/x', false],
      ['constructor', 'toString', false],
      ['hasOwnProperty/*', 'hasOwnProperty/x', true],
      ['uploads/*', 'uploads/__proto__', true],
      // more boundaries
      ['A', 'a', false],
      ['a', 'A', false],
      ['x{,a}', 'x', true],
      ['x{,a}', 'xa', true],
      ['[e\u0301]', '\u00e9', true],
      ['a?', 'aq\u0301', false], // q + combining acute has no composed form: two code points
      ['a??', 'aq\u0301', true],
      ['{a,b}/**', 'b/c/d', true],
      ['{a,b}/**', 'c/d', false],
      ['**/*.png', 'x/y/z.png', true],
      ['**/*.png', 'z.png', true],
      ['**/*.png', 'x/y/z.jpg', false],
    ];
    it.each(rows)('%j vs %j → %s', (glob, path, allowed) => {
      expect(checkFs(policy([glob]), path, 'read').outcome).toBe(allowed ? 'allow' : 'deny');
    });
  });

  describe('dotfiles', () => {
    type Row = [glob: string, path: string, dotFalse: boolean, dotTrue: boolean];
    const rows: Row[] = [
      ['*', '.env', false, true],
      ['**', '.env', false, true],
      ['**', '.git/config', false, true],
      ['**', 'a/.git/config', false, true],
      ['uploads/**', 'uploads/.git/config', false, true],
      ['uploads/**', 'uploads/a/.env', false, true],
      ['a/**/b', 'a/.x/b', false, true],
      ['?env', '.env', false, true],
      ['[.]env', '.env', false, true],
      ['[!x]env', '.env', false, true],
      ['[^x]env', '.env', false, true],
      ['{*,x}', '.env', false, true],
      ['{x,*}', '.env', false, true],
      ['*.png', '.png', false, true],
      ['a**', '.a', false, false],
      ['.*', '.env', true, true],
      ['.env', '.env', true, true],
      ['\\.env', '.env', true, true],
      ['{.env,config}', '.env', true, true],
      ['{config,.env}', '.env', true, true],
      ['{{.a,b},c}', '.a', true, true], // nested: an inner alternative with a literal leading dot
      ['{c,{b,.a}}', '.a', true, true],
      ['{.a,b}', 'b', true, true],
      ['{x,}.a', '.a', true, true], // the alternatives expand to x.a and .a: the dot is written literally
      ['{.,x}env', '.env', true, true],
      ['{[.]a,b}', '.a', false, true],
      ['{.a/**,b}', '.a/.b', false, true],
      ['.*/x', '.git/x', true, true],
      ['.*/*', '.git/.x', false, true],
      ['*', 'a.b', true, true], // a dot not at the start is no dotfile
      ['**', 'a/b.c/d', true, true],
      ['uploads/**', 'uploads', true, true],
    ];
    it.each(rows)('%j vs %j: dot false → %s, dot true → %s', (glob, path, dotFalse, dotTrue) => {
      expect(checkFs(policy([glob]), path, 'read').outcome).toBe(dotFalse ? 'allow' : 'deny');
      expect(checkFs(policy([glob], { dot: true }), path, 'read').outcome).toBe(
        dotTrue ? 'allow' : 'deny',
      );
    });

    it('dot false: ** and a literal leading dot', () => {
      expect(checkFs(policy(['a/**/.env']), 'a/.env', 'read').outcome).toBe('allow');
      expect(checkFs(policy(['a/**/.env']), 'a/b/.env', 'read').outcome).toBe('allow');
      expect(checkFs(policy(['a/**/.env']), 'a/.x/.env', 'read').outcome).toBe('deny');
      expect(checkFs(policy(['\\.*']), '.env', 'read').outcome).toBe('allow');
      expect(checkFs(policy(['{.a,b}*']), '.ax', 'read').outcome).toBe('allow');
      expect(checkFs(policy(['x/{a/.b,c}']), 'x/a/.b', 'read').outcome).toBe('allow');
    });

    it('a dot segment in the root itself is literal text, not a dotfile', () => {
      const p = new PermissionPolicy({ root: '/srv/.data', permissions: { fs: ['**'] } });
      expect(checkFs(p, 'a/b', 'read').outcome).toBe('allow');
      expect(checkFs(p, '.x', 'read').outcome).toBe('deny');
    });
  });

  describe('literal root', () => {
    type Row = [glob: string, path: string, allowed: boolean];
    const rows: Row[] = [
      ['/srv/uploads/*.png', '/srv/uploads/a.png', true],
      ['/srv/uploads/*.png', '/srv/uploads2/a.png', false],
      ['/srv/example/foo*', '/srv/example/foobar', true],
      ['/srv/example/foo*', '/srv/example2/foobar', false],
      ['/srv/example/foo*', '/srv/example/foo', true],
      ['/srv/a\\*/b', '/srv/a*/b', true],
      ['/srv/a\\*/b', '/srv/ax/b', false],
      // A brace alternative is glob syntax, not a path step: its `..` or `.` is
      // a name no canonical path holds, never a climb out of the literal root.
      ['/srv/uploads/{..,tmp}/*', '/srv/config.json', false],
      ['/srv/uploads/{..,tmp}/*', '/srv/uploads/tmp/a', true],
      ['/srv/a/{..}/x', '/srv/x', false],
      ['/srv/a/b/{../..,c}', '/srv', false],
      ['/srv/a/{.,b}/x', '/srv/a/x', false],
      ['/srv/a/{.,b}/x', '/srv/a/b/x', true],
      ['/srv/{../../etc,x}/passwd', '/etc/passwd', false],
      ['/srv/{../../etc,x}/passwd', '/srv/x/passwd', true],
      ['/srv/{uploads,..}/x', '/x', false],
      ['/srv/{uploads,..}/x', '/srv/uploads/x', true],
      // So is an escaped one: `\.\.` names a file `..`, it is no step.
      ['/srv/uploads/\\.\\./config', '/srv/config', false],
      ['/srv/uploads/\\../config', '/srv/config', false],
      ['/srv/uploads/\\./x', '/srv/uploads/x', false],
      ['/srv/uploads/\\.env', '/srv/uploads/.env', true],
      // A segment a brace touches is no step even when its alternative is empty:
      // `{x,}..` is not the text `..`, nor `{,}` an empty segment.
      ['/srv/uploads/{x,}../config', '/srv/config', false],
      ['/srv/uploads/..{/,x}config', '/srv/config', false],
      ['/srv/uploads/{/,x}../config', '/srv/config', false],
      ['/srv/uploads/{,}/config', '/srv/uploads/config', false],
      ['/srv/a/{,b}/x', '/srv/a/x', false],
      ['/srv/a/{,b}/x', '/srv/a/b/x', true],
      ['/srv/a/{,b/}x', '/srv/a/x', true],
      ['/srv/a/{,b/}x', '/srv/a/b/x', true],
    ];
    it.each(rows)('%j vs %j → %s', (glob, path, allowed) => {
      expect(checkFs(policy([glob]), path, 'read').outcome).toBe(allowed ? 'allow' : 'deny');
    });
  });

  describe('resolve and rules', () => {
    it('rule text is never passed to resolve; the root is', () => {
      const { calls, resolve } = recorder();
      new PermissionPolicy({
        root: '/srv',
        permissions: { fs: ['./a/*', '/srv/b/*', 'rw:c'] },
        resolve,
      });
      expect(calls).toEqual(['/srv']);
    });

    it('relative rules join the resolved root; an absolute rule must lie inside it', () => {
      const resolve = mapping({ '/srv': '/real/srv' });
      const p = new PermissionPolicy({
        root: '/srv',
        permissions: { fs: ['./a/*', '/real/srv/b/*'] },
        resolve,
      });
      expect(checkFs(p, 'a/x', 'read')).toMatchObject({ outcome: 'allow' });
      expect(checkFs(p, '/real/srv/a/x', 'read')).toMatchObject({ outcome: 'allow' });
      expect(checkFs(p, 'b/x', 'read')).toMatchObject({ outcome: 'allow' });
      expect(checkFs(p, '/srv/a/x', 'read')).toMatchObject({
        outcome: 'deny',
        reason: 'path-not-in-allowlist',
      });
      expect(
        () => new PermissionPolicy({ root: '/srv', permissions: { fs: ['/srv/b/*'] }, resolve }),
      ).toThrow(TypeError);
    });

    it('checkFs passes the lexical path to resolve and judges what it returns', () => {
      const resolve = mapping({
        '/srv/link': '/etc/passwd',
        '/srv/in': '/srv/uploads/x',
        '/srv/rel': 'srv/x',
      });
      const p = policy(['rw:uploads/*'], { resolve });
      expect(checkFs(p, 'link', 'read')).toMatchObject({
        outcome: 'deny',
        reason: 'path-not-in-allowlist',
      });
      expect(checkFs(p, 'in', 'write')).toMatchObject({ outcome: 'allow' });
      expect(checkFs(p, 'rel', 'read')).toMatchObject({
        outcome: 'deny',
        reason: 'resolve-failed',
      });
      expect(
        checkFs(
          policy(['**'], { resolve: (q) => (q === '/srv' ? q : thrower('x')()) }),
          'a',
          'read',
        ),
      ).toMatchObject({
        outcome: 'deny',
        reason: 'resolve-failed',
      });
    });
  });

  describe('checking', () => {
    it('the root is resolved once, at build time', () => {
      const { calls, resolve } = recorder();
      const p = policy(['**'], { resolve });
      checkFs(p, 'a', 'read');
      checkFs(p, '/srv/b', 'write');
      expect(calls).toEqual(['/srv', '/srv/a', '/srv/b']);
    });

    it.each([
      ['READ'],
      ['rw'],
      ['r'],
      [''],
      ['execute'],
      [undefined],
      [null],
      [0],
      [{}],
      [new String('read')],
      [' read'],
    ])('mode %j is a TypeError, checked before the path', (mode) => {
      const { calls, resolve } = recorder();
      const p = policy(['**'], { resolve });
      calls.length = 0;
      for (const path of ['a', 42, 'a\0']) {
        expect(() => checkFs(p, path, mode as FsAccessMode)).toThrow(TypeError);
      }
      expect(calls).toEqual([]);
    });

    /** DESIGN.md's CheckResult: `outcome` and `reason` are the contract. */
    type Expected = { outcome: 'allow' } | { outcome: 'deny'; reason: string };
    type Row = [name: string, fs: string[], path: unknown, mode: FsAccessMode, expected: Expected];
    const allow = { outcome: 'allow' } as const;
    const deny = (reason: string): Expected => ({ outcome: 'deny', reason });
    const rows: Row[] = [
      ['a canonicalize failure: not-a-string', ['**'], 42, 'read', deny('not-a-string')],
      ['a canonicalize failure: null', ['**'], null, 'write', deny('not-a-string')],
      ['a canonicalize failure: an array', ['**'], ['a'], 'read', deny('not-a-string')],
      ['a canonicalize failure: nul-byte', ['**'], 'a\0', 'read', deny('nul-byte')],
      [
        'a canonicalize failure: invalid-unicode',
        ['**'],
        'a\uD800',
        'read',
        deny('invalid-unicode'),
      ],
      ['a failure beats no rule', [], 42, 'read', deny('not-a-string')],
      ['read on a read rule', ['a'], 'a', 'read', allow],
      ['write on a read rule', ['a'], 'a', 'write', deny('mode-not-permitted')],
      ['write on an rw rule', ['rw:a'], 'a', 'write', allow],
      ['read on an rw rule', ['rw:a'], 'a', 'read', allow],
      ['write, no rule matches', ['a'], 'b', 'write', deny('path-not-in-allowlist')],
      ['read, no rule matches', ['rw:a'], 'b', 'read', deny('path-not-in-allowlist')],
      [
        'any matching rule that grants the mode allows',
        ['uploads/*', 'rw:uploads/a'],
        'uploads/a',
        'write',
        allow,
      ],
      ['order does not matter', ['rw:uploads/a', 'uploads/*'], 'uploads/a', 'write', allow],
      [
        'a read rule matched, the rw one not',
        ['uploads/*', 'rw:uploads/a'],
        'uploads/b',
        'write',
        deny('mode-not-permitted'),
      ],
      ['outside the root', ['**'], '/etc/passwd', 'read', deny('path-not-in-allowlist')],
      ['.. out of the root', ['**'], '../../etc/passwd', 'read', deny('path-not-in-allowlist')],
      ['%2e%2e is a name', ['*/etc'], '%2e%2e/etc', 'read', allow],
      ['\\ is a character', ['*'], 'a\\..\\b', 'read', allow],
      [
        '..\\x is a dotfile name, not a climb',
        ['*'],
        '..\\x',
        'read',
        deny('path-not-in-allowlist'),
      ],
    ];
    it.each(rows)('%s', (_name, fs, path, mode, expected) => {
      const result = checkFs(policy(fs), path, mode);
      expect(result).toMatchObject(expected);
      if (result.outcome === 'allow') expect(result).not.toHaveProperty('reason');
      // The result never depends on rule order.
      expect(checkFs(policy([...fs].reverse()), path, mode)).toMatchObject(expected);
    });

    it('is deterministic', () => {
      const p = policy(['uploads/*']);
      expect(checkFs(p, 'uploads/a', 'write')).toStrictEqual(checkFs(p, 'uploads/a', 'write'));
    });

    it('DESIGN examples (default root /)', () => {
      const p = new PermissionPolicy({ permissions: { fs: ['./uploads/*'] } });
      expect(checkFs(p, './uploads/avatar.png', 'read')).toMatchObject({ outcome: 'allow' });
      expect(checkFs(p, './etc/passwd', 'read')).toMatchObject({
        outcome: 'deny',
        reason: 'path-not-in-allowlist',
      });
      expect(checkFs(p, './uploads/../etc/passwd', 'read')).toMatchObject({
        outcome: 'deny',
        reason: 'path-not-in-allowlist',
      });
      expect(checkFs(p, './uploads/a.png', 'write')).toMatchObject({
        outcome: 'deny',
        reason: 'mode-not-permitted',
      });
    });
  });
});

describe('Errors', () => {
  it('SandboxPermissionError extends Error, with code, message and context', () => {
    const error = new SandboxPermissionError('path-not-in-allowlist');
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(SandboxPermissionError);
    expect(error.code).toBe(SAND_PERM_CODES.DENIED);
    expect(typeof error.message).toBe('string');
    expect(error.context).toStrictEqual({ capability: 'fs', reason: 'path-not-in-allowlist' });
  });

  it('SAND_PERM_CODES holds DENIED, a string', () => {
    expect(typeof SAND_PERM_CODES.DENIED).toBe('string');
    expect(Object.values(SAND_PERM_CODES)).toContain(SAND_PERM_CODES.DENIED);
  });

  it('hosts can throw from a CheckResult', () => {
    const p = new PermissionPolicy({ root: '/srv', permissions: { fs: [] } });
    const result = checkFs(p, '/srv/secret', 'read');
    if (result.outcome !== 'deny') throw new Error('expected a deny');
    const error = new SandboxPermissionError(result.reason);
    expect(error.context.reason).toBe('path-not-in-allowlist');
    expect(error.message).not.toContain('/srv');
  });
});

describe('The adapters (the shared route guard)', () => {
  const p = new PermissionPolicy({
    root: '/srv/files',
    permissions: { fs: ['rw:uploads/**', 'reports/**'] },
  });
  const guard = (paths: object[], mode: FsAccessMode = 'write') =>
    compileRouteGuard(p, { mode, paths } as never, 'POST /x');
  const check = (paths: object[], body: unknown, mode: FsAccessMode = 'write') => {
    const g = guard(paths, mode);
    const info = g.newInfo();
    return { result: g.checkRequest({ body }, info), info };
  };

  type Row = [
    name: string,
    spec: object,
    body: unknown,
    mode: FsAccessMode,
    path: string | undefined,
  ];
  const rows: Row[] = [
    [
      'under: a leading / stays under the sub-directory',
      { body: 'f', under: 'uploads' },
      { f: '/a.png' },
      'write',
      '/srv/files/uploads/a.png',
    ],
    [
      'under .: /reports/q3.csv means <root>/reports/q3.csv',
      { body: 'f', under: '.' },
      { f: '/reports/q3.csv' },
      'read',
      '/srv/files/reports/q3.csv',
    ],
    [
      'without under, an absolute value stays absolute',
      { body: 'f' },
      { f: '/reports/q3.csv' },
      'read',
      undefined,
    ],
    [
      'without under, a relative value joins the root',
      { body: 'f' },
      { f: 'reports/q3.csv' },
      'read',
      '/srv/files/reports/q3.csv',
    ],
    [
      'under does not stop .. climbing out',
      { body: 'f', under: 'uploads' },
      { f: '../../etc/passwd' },
      'read',
      undefined,
    ],
    [
      'under with .. staying inside',
      { body: 'f', under: 'uploads' },
      { f: '../reports/a' },
      'read',
      '/srv/files/reports/a',
    ],
    ['the route mode applies', { body: 'f' }, { f: 'reports/q3.csv' }, 'write', undefined],
    ['missing required value denies', { body: 'f' }, {}, 'read', undefined],
    ['missing body denies', { body: 'f' }, undefined, 'read', undefined],
    ['a non-string value denies', { body: 'f' }, { f: 42 }, 'read', undefined],
    ['a key selector', { body: ['a', 0] }, { a: ['reports/x'] }, 'read', '/srv/files/reports/x'],
  ];
  it.each(rows)('%s', (_name, spec, body, mode, path) => {
    const { result, info } = check([spec], body, mode);
    if (path === undefined) {
      expect(result.ok).toBe(false);
    } else {
      expect(result).toStrictEqual({ ok: true });
      // the handler receives the canonical path that was checked
      expect(Object.values(info.body)).toEqual([path]);
    }
  });

  it('with resolve, the handler receives the resolved path that was checked', () => {
    const resolve = mapping({ '/srv/files/link': '/srv/files/uploads/real' });
    const policy = new PermissionPolicy({
      root: '/srv/files',
      permissions: { fs: ['rw:uploads/**'] },
      resolve,
    });
    const g = compileRouteGuard(policy, { mode: 'write', paths: [{ body: 'f' }] }, 'POST /x');
    const info = g.newInfo();
    expect(g.checkRequest({ body: { f: 'link' } }, info)).toStrictEqual({ ok: true });
    expect(info.body).toEqual({ f: '/srv/files/uploads/real' });
  });

  it('an optional selector lets a missing value through', () => {
    expect(check([{ body: 'f', optional: true }], {}).result).toStrictEqual({ ok: true });
    expect(check([{ body: 'f', optional: true }], { f: '/etc/passwd' }).result.ok).toBe(false);
  });

  it('every selected value is checked', () => {
    const specs = [{ body: 'from' }, { body: 'to' }];
    expect(check(specs, { from: 'uploads/a', to: 'uploads/b' }).result.ok).toBe(true);
    expect(check(specs, { from: 'uploads/a', to: '/etc/passwd' }).result.ok).toBe(false);
    expect(check([{ body: 'f' }], { f: ['uploads/a', '/etc/x'] }).result.ok).toBe(false);
  });

  it('params, query and headers are sources too', () => {
    const g = guard([{ params: 'p' }, { query: 'q' }, { headers: 'x-path' }], 'read');
    const ok = g.checkRequest(
      { params: { p: 'reports/a' }, query: { q: 'uploads/b' }, headers: { 'x-path': 'reports/c' } },
      g.newInfo(),
    );
    expect(ok).toStrictEqual({ ok: true });
    const bad = g.checkRequest(
      {
        params: { p: 'reports/a' },
        query: { q: 'uploads/b' },
        headers: { 'x-path': '/etc/passwd' },
      },
      g.newInfo(),
    );
    expect(bad.ok).toBe(false);
  });

  it('the deny body carries the reason and reveals neither the root nor the canonical path', () => {
    for (const f of ['../../etc/passwd', 'reports/x', 42, 'a\0']) {
      const { result } = check([{ body: 'f' }], { f });
      if (result.ok) throw new Error('expected a deny');
      const body = denyBody(result.denial);
      expect(body.reason).toBe(result.denial.reason);
      const text = JSON.stringify(body);
      expect(text).not.toContain('/srv');
      expect(text).not.toContain('etc');
    }
  });

  it('a multipart filename is checked before its bytes are stored', () => {
    const g = guard([{ file: 'avatar', under: 'uploads' }]);
    const good = g.checkFile('avatar', 'a.png');
    expect(good).toMatchObject({ ok: true, file: { path: '/srv/files/uploads/a.png' } });
    expect(g.checkFile('avatar', '../../server.js').ok).toBe(false);
    expect(g.checkFile('avatar', '/b.png')).toMatchObject({
      ok: true,
      file: { path: '/srv/files/uploads/b.png' },
    });
    expect(g.checkFile('avatar', 'a\0.png').ok).toBe(false);
    expect(g.checkMissingFiles([]).ok).toBe(false); // a required file that never came
    expect(g.checkMissingFiles([{ field: 'avatar' }]).ok).toBe(true);
  });
});
