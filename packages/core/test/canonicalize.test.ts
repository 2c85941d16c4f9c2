import { posix } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CanonicalizeFailure,
  type CanonicalizeOptions,
  type CanonicalizeResult,
  canonicalize,
} from '../src/index.js';

// Every step and example of DESIGN.md's `canonicalize`, as one truth table.

const ok = (path: string): CanonicalizeResult => ({ ok: true, path });
const fail = (reason: CanonicalizeFailure): CanonicalizeResult => ({ ok: false, reason });

const boom = (): never => {
  throw new Error('resolver failure');
};

// Resolvers that act only on the value (the root '/srv' passes through unchanged) or only on
// the root, so a row can tell which of the two was resolved.
const onValue =
  (f: (path: string) => unknown): CanonicalizeOptions['resolve'] =>
  (path) =>
    (path === '/srv' ? path : f(path)) as string;
const onRoot =
  (f: (path: string) => unknown): CanonicalizeOptions['resolve'] =>
  (path) =>
    (path === '/srv' ? f(path) : path) as string;

type Row = readonly [
  name: string,
  value: unknown,
  root: unknown,
  options: CanonicalizeOptions | undefined,
  expected: CanonicalizeResult,
];

const table: readonly Row[] = [
  // DESIGN.md's own examples.
  [
    'example: ../../etc/passwd from /srv/sandbox',
    '../../etc/passwd',
    '/srv/sandbox',
    undefined,
    ok('/etc/passwd'),
  ],
  ['example: a/./b//c/..', 'a/./b//c/..', '/srv', undefined, ok('/srv/a/b')],
  ['example: a\\0b', 'a\0b', '/srv', undefined, fail('nul-byte')],

  // Step 1: not a string.
  ['1: undefined', undefined, '/srv', undefined, fail('not-a-string')],
  ['1: null', null, '/srv', undefined, fail('not-a-string')],
  ['1: number', 42, '/srv', undefined, fail('not-a-string')],
  ['1: NaN', Number.NaN, '/srv', undefined, fail('not-a-string')],
  ['1: boolean', true, '/srv', undefined, fail('not-a-string')],
  ['1: bigint', 10n, '/srv', undefined, fail('not-a-string')],
  ['1: symbol', Symbol('a'), '/srv', undefined, fail('not-a-string')],
  ['1: array of a string', ['a'], '/srv', undefined, fail('not-a-string')],
  ['1: plain object', {}, '/srv', undefined, fail('not-a-string')],
  ['1: boxed String', new String('a'), '/srv', undefined, fail('not-a-string')],
  ['1: object with toString', { toString: () => 'a' }, '/srv', undefined, fail('not-a-string')],
  ['1: function', () => 'a', '/srv', undefined, fail('not-a-string')],

  // Step 2: U+0000 anywhere.
  ['2: lone NUL', '\0', '/srv', undefined, fail('nul-byte')],
  ['2: trailing NUL', 'a.png\0', '/srv', undefined, fail('nul-byte')],
  ['2: NUL in an absolute value', '/srv/\0/x', '/srv', undefined, fail('nul-byte')],
  ['2: NUL in a segment that .. would pop', 'a\0/..', '/srv', undefined, fail('nul-byte')],
  ['2: %00 is three characters, not NUL', '%00', '/srv', undefined, ok('/srv/%00')],

  // Step 3: lone surrogates.
  ['3: lone high surrogate', '\uD800', '/srv', undefined, fail('invalid-unicode')],
  ['3: lone low surrogate', 'a\uDC00b', '/srv', undefined, fail('invalid-unicode')],
  ['3: high surrogate at the end', 'a\uDBFF', '/srv', undefined, fail('invalid-unicode')],
  ['3: reversed pair', '\uDE00\uD83D', '/srv', undefined, fail('invalid-unicode')],
  [
    '3: lone surrogate in a popped segment',
    '\uD800/..',
    '/srv',
    undefined,
    fail('invalid-unicode'),
  ],
  ['3: a well-formed pair is fine', '\uD83D\uDE00', '/srv', undefined, ok('/srv/\uD83D\uDE00')],

  // Several value failures: the earlier step wins.
  ['1 before 2: non-string', ['\0'], '/srv', undefined, fail('not-a-string')],
  ['2 before 3: NUL then surrogate', 'a\0\uD800', '/srv', undefined, fail('nul-byte')],
  ['2 before 3: surrogate then NUL', '\uD800a\0', '/srv', undefined, fail('nul-byte')],

  // The value's steps 1–3 run before any root step.
  ['value 1 before relative-root', 42, 'relative', undefined, fail('not-a-string')],
  ['value 2 before root 1', 'a\0', undefined, undefined, fail('nul-byte')],
  ['value 2 before root 2', 'a\0', '/srv\0', undefined, fail('nul-byte')],
  ['value 2 before relative-root', 'a\0', 'relative', undefined, fail('nul-byte')],
  ['value 3 before root 1', '\uD800', null, undefined, fail('invalid-unicode')],
  ['value 3 before root 2', '\uD800', '/\0', undefined, fail('invalid-unicode')],
  ['value 3 before relative-root', '\uD800', '', undefined, fail('invalid-unicode')],

  // Root: steps 1–3 with their own reasons, then it must start with '/'.
  ['root: undefined', 'a', undefined, undefined, fail('not-a-string')],
  ['root: null', 'a', null, undefined, fail('not-a-string')],
  ['root: number', 'a', 42, undefined, fail('not-a-string')],
  ['root: boxed String', 'a', new String('/srv'), undefined, fail('not-a-string')],
  ['root: array', 'a', ['/srv'], undefined, fail('not-a-string')],
  ['root: NUL', 'a', '/srv\0', undefined, fail('nul-byte')],
  ['root: NUL beats relative-root', 'a', 'srv\0', undefined, fail('nul-byte')],
  ['root: lone surrogate', 'a', '/\uD800', undefined, fail('invalid-unicode')],
  ['root: surrogate beats relative-root', 'a', 'srv\uDC00', undefined, fail('invalid-unicode')],
  ['root: NUL beats surrogate', 'a', '/\uD800\0', undefined, fail('nul-byte')],
  ['root: relative', 'a', 'srv', undefined, fail('relative-root')],
  ['root: empty', 'a', '', undefined, fail('relative-root')],
  ['root: dot-relative', 'a', './srv', undefined, fail('relative-root')],
  ['root: tilde', 'a', '~/srv', undefined, fail('relative-root')],
  ['root: backslash', 'a', '\\srv', undefined, fail('relative-root')],
  ['root: drive letter', 'a', 'C:/srv', undefined, fail('relative-root')],
  ['root: leading space', 'a', ' /srv', undefined, fail('relative-root')],
  ['root: fullwidth solidus', 'a', '\uFF0Fsrv', undefined, fail('relative-root')],
  ['root: checked even for an absolute value', '/etc', 'srv', undefined, fail('relative-root')],

  // Root: canonicalized through the same steps.
  ['root: trailing slash', 'a', '/srv/', undefined, ok('/srv/a')],
  ['root: doubled slashes', 'a', '//srv//x/', undefined, ok('/srv/x/a')],
  ['root: . and ..', 'a', '/srv/./x/..', undefined, ok('/srv/a')],
  ['root: .. at /', 'a', '/..', undefined, ok('/a')],
  ['root: /', 'a', '/', undefined, ok('/a')],
  ['root: NFD is normalized', 'x', '/cafe\u0301', undefined, ok('/caf\u00e9/x')],
  ['root: NFD root, NFC value', '/caf\u00e9', '/cafe\u0301', undefined, ok('/caf\u00e9')],
  ['root: glob characters are literal', 'x', '/srv/[a]{b,c}*', undefined, ok('/srv/[a]{b,c}*/x')],
  ['root: ~ is a name', 'x', '/~', undefined, ok('/~/x')],
  ['root: empty value gives the root', '', '/srv/', undefined, ok('/srv')],

  // Step 4: NFC (not NFKC).
  ['4: e + combining acute', 'cafe\u0301', '/srv', undefined, ok('/srv/caf\u00e9')],
  ['4: A + combining ring', 'A\u030A', '/srv', undefined, ok('/srv/\u00C5')],
  ['4: angstrom sign singleton', '\u212B', '/srv', undefined, ok('/srv/\u00C5')],
  ['4: ohm sign singleton', '\u2126', '/srv', undefined, ok('/srv/\u03A9')],
  ['4: Hangul jamo compose', '\u1100\u1161', '/srv', undefined, ok('/srv/\uAC00')],
  ['4: NFC already', 'caf\u00e9', '/srv', undefined, ok('/srv/caf\u00e9')],
  ['4: not NFKC: ligature stays', '\uFB01', '/srv', undefined, ok('/srv/\uFB01')],
  ['4: not NFKC: fullwidth dots stay', '\uFF0E\uFF0E', '/srv', undefined, ok('/srv/\uFF0E\uFF0E')],
  [
    '4: not NFKC: one-dot leaders stay',
    '\u2024\u2024/x',
    '/srv',
    undefined,
    ok('/srv/\u2024\u2024/x'),
  ],
  ['4: dots with a combining mark are a name', '..\u0338', '/srv', undefined, ok('/srv/..\u0338')],
  ['4: dot with acute is a name', '.\u0301', '/srv', undefined, ok('/srv/.\u0301')],

  // Step 5: relative values join the root; nothing is decoded a second time.
  ['5: ~ alone', '~', '/srv', undefined, ok('/srv/~')],
  ['5: ~/x', '~/x', '/srv', undefined, ok('/srv/~/x')],
  ['5: ~root', '~root/.ssh', '/srv', undefined, ok('/srv/~root/.ssh')],
  ['5: backslash alone', '\\', '/srv', undefined, ok('/srv/\\')],
  ['5: backslash dot-dot', '..\\..\\etc', '/srv', undefined, ok('/srv/..\\..\\etc')],
  [
    '5: leading backslash is not absolute',
    '\\etc\\passwd',
    '/srv',
    undefined,
    ok('/srv/\\etc\\passwd'),
  ],
  ['5: backslash inside a name', 'a\\b', '/srv', undefined, ok('/srv/a\\b')],
  ['5: %2e%2e', '%2e%2e', '/srv', undefined, ok('/srv/%2e%2e')],
  ['5: %2e%2e/x', '%2e%2e/x', '/srv', undefined, ok('/srv/%2e%2e/x')],
  ['5: %2E%2E%2F', '%2E%2E%2Fetc', '/srv', undefined, ok('/srv/%2E%2E%2Fetc')],
  ['5: %2f is not a slash', 'a%2f..%2f..', '/srv', undefined, ok('/srv/a%2f..%2f..')],
  ['5: double encoding', '%252e%252e', '/srv', undefined, ok('/srv/%252e%252e')],
  ['5: drive letter is a name', 'C:/x', '/srv', undefined, ok('/srv/C:/x')],
  ['5: URL is names', 'file:///etc', '/srv', undefined, ok('/srv/file:/etc')],
  ['5: absolute value ignores root', '/etc/passwd', '/srv', undefined, ok('/etc/passwd')],
  ['5: absolute /', '/', '/srv', undefined, ok('/')],
  ['5: boundary: ../srv2', '../srv2', '/srv', undefined, ok('/srv2')],
  ['5: boundary: ../srv/a', '../srv/a', '/srv', undefined, ok('/srv/a')],

  // Step 6: the lexical walk.
  ['6: empty value', '', '/srv', undefined, ok('/srv')],
  ['6: .', '.', '/srv', undefined, ok('/srv')],
  ['6: ./', './', '/srv', undefined, ok('/srv')],
  ['6: empty segments', 'a//b', '/srv', undefined, ok('/srv/a/b')],
  ['6: . segments', 'a/./b/.', '/srv', undefined, ok('/srv/a/b')],
  ['6: .. pops', 'a/../b', '/srv', undefined, ok('/srv/b')],
  ['6: .. pops the root segment', '..', '/srv', undefined, ok('/')],
  ['6: .. at / stays', '../../../../etc', '/srv/sandbox', undefined, ok('/etc')],
  ['6: /.. is /', '/..', '/srv', undefined, ok('/')],
  ['6: /../../a', '/../../a', '/srv', undefined, ok('/a')],
  ['6: pops past root then descends', 'a/b/../../../x', '/srv', undefined, ok('/x')],
  ['6: ... is a name', '...', '/srv', undefined, ok('/srv/...')],
  ['6: .a is a name', '.a', '/srv', undefined, ok('/srv/.a')],
  ['6: ..a is a name', '..a', '/srv', undefined, ok('/srv/..a')],
  ['6: a.. is a name', 'a..', '/srv', undefined, ok('/srv/a..')],
  ['6: " .." is a name', ' ..', '/srv', undefined, ok('/srv/ ..')],
  ['6: ".. " is a name', '.. ', '/srv', undefined, ok('/srv/.. ')],
  ['6: ". " is a name', '. ', '/srv', undefined, ok('/srv/. ')],
  ['6: .. pops a name that looks like ..', '.../..', '/srv', undefined, ok('/srv')],
  ['6: boundary a/b vs a/bc', 'a/bc/../b', '/srv', undefined, ok('/srv/a/b')],

  // Step 7: no trailing slash; the root of everything is '/'.
  ['7: trailing slash', 'a/', '/srv', undefined, ok('/srv/a')],
  ['7: doubled trailing slash', 'a//', '/srv', undefined, ok('/srv/a')],
  ['7: absolute with trailing slash', '/a/b/', '/srv', undefined, ok('/a/b')],
  ['7: //', '//', '/srv', undefined, ok('/')],
  ['7: ///a', '///a', '/srv', undefined, ok('/a')],
  ['7: trailing /.', 'a/.', '/srv', undefined, ok('/srv/a')],

  // Step 8: options.resolve on the value.
  ['8: resolve throws', 'a', '/srv', { resolve: onValue(boom) }, fail('resolve-failed')],
  [
    '8: resolve returns undefined',
    'a',
    '/srv',
    { resolve: onValue(() => undefined) },
    fail('resolve-failed'),
  ],
  [
    '8: resolve returns null',
    'a',
    '/srv',
    { resolve: onValue(() => null) },
    fail('resolve-failed'),
  ],
  [
    '8: resolve returns a number',
    'a',
    '/srv',
    { resolve: onValue(() => 42) },
    fail('resolve-failed'),
  ],
  [
    '8: resolve returns a boxed String',
    'a',
    '/srv',
    { resolve: onValue(() => new String('/x')) },
    fail('resolve-failed'),
  ],
  [
    '8: resolve returns a relative string',
    'a',
    '/srv',
    { resolve: onValue(() => 'x') },
    fail('resolve-failed'),
  ],
  ['8: resolve returns ""', 'a', '/srv', { resolve: onValue(() => '') }, fail('resolve-failed')],
  [
    '8: resolve returns ./x',
    'a',
    '/srv',
    { resolve: onValue(() => './x') },
    fail('resolve-failed'),
  ],
  [
    '8: resolve returns ~/x',
    'a',
    '/srv',
    { resolve: onValue(() => '~/x') },
    fail('resolve-failed'),
  ],
  [
    '8: resolve returns \\x',
    'a',
    '/srv',
    { resolve: onValue(() => '\\x') },
    fail('resolve-failed'),
  ],
  [
    '8: relative return with NUL is resolve-failed',
    'a',
    '/srv',
    { resolve: onValue(() => 'x\0') },
    fail('resolve-failed'),
  ],
  [
    '8: relative return with surrogate is resolve-failed',
    'a',
    '/srv',
    { resolve: onValue(() => 'x\uD800') },
    fail('resolve-failed'),
  ],
  ['8: returned NUL', 'a', '/srv', { resolve: onValue(() => '/x\0') }, fail('nul-byte')],
  [
    '8: returned lone surrogate',
    'a',
    '/srv',
    { resolve: onValue(() => '/x\uD800') },
    fail('invalid-unicode'),
  ],
  [
    '8: returned path is normalized',
    'a',
    '/srv',
    { resolve: onValue(() => '/t/./a//b/../c/') },
    ok('/t/a/c'),
  ],
  [
    '8: returned path is NFC',
    'a',
    '/srv',
    { resolve: onValue(() => '/cafe\u0301') },
    ok('/caf\u00e9'),
  ],
  ['8: returned /../..', 'a', '/srv', { resolve: onValue(() => '/../..') }, ok('/')],
  [
    '8: resolve may lead outside',
    'link/passwd',
    '/srv',
    { resolve: onValue((p) => p.replace('/srv/link', '/etc')) },
    ok('/etc/passwd'),
  ],
  ['8: identity resolve', 'a/../b/', '/srv', { resolve: (p) => p }, ok('/srv/b')],
  ['8: resolved once, not twice', '/a', '/', { resolve: (p) => `${p}/x` }, ok('/a/x')],
  ['8: resolve: undefined is absent', 'a', '/srv', { resolve: undefined }, ok('/srv/a')],
  ['8: empty options', 'a', '/srv', {}, ok('/srv/a')],

  // Step 8 on the root.
  ['8 root: throw', '/abs', '/srv', { resolve: onRoot(boom) }, fail('resolve-failed')],
  [
    '8 root: relative return',
    'a',
    '/srv',
    { resolve: onRoot(() => 'relative') },
    fail('resolve-failed'),
  ],
  ['8 root: non-string return', 'a', '/srv', { resolve: onRoot(() => 42) }, fail('resolve-failed')],
  ['8 root: returned NUL', 'a', '/srv', { resolve: onRoot(() => '/r\0') }, fail('nul-byte')],
  [
    '8 root: value joins the resolved root',
    'a',
    '/srv',
    { resolve: onRoot(() => '/real') },
    ok('/real/a'),
  ],
  [
    '8 root: resolved root is normalized',
    'a',
    '/srv',
    { resolve: onRoot(() => '/real/./x/') },
    ok('/real/x/a'),
  ],
  [
    '8 root: absolute value keeps its path',
    '/etc/x',
    '/srv',
    { resolve: onRoot(() => '/real') },
    ok('/etc/x'),
  ],

  // Step 8 comes last: earlier failures win over the resolver.
  ['value 1 beats resolve', 42, '/srv', { resolve: boom }, fail('not-a-string')],
  ['value 2 beats resolve', 'a\0', '/srv', { resolve: boom }, fail('nul-byte')],
  ['value 3 beats resolve', '\uDC00', '/srv', { resolve: boom }, fail('invalid-unicode')],
  ['relative-root beats resolve', 'a', 'srv', { resolve: boom }, fail('relative-root')],
  ['root NUL beats resolve', 'a', '/srv\0', { resolve: boom }, fail('nul-byte')],
];

describe('canonicalize', () => {
  it.each(table)('%s', (_name, value, root, options, expected) => {
    expect(canonicalize(value, root, options)).toStrictEqual(expected);
  });

  it('a resolve of null is a resolver that fails, never no resolver', () => {
    const nullResolve = { resolve: null } as unknown as CanonicalizeOptions;
    expect(canonicalize('a', '/srv', nullResolve)).toStrictEqual({
      ok: false,
      reason: 'resolve-failed',
    });
  });

  it('options of null, or of a type that holds no resolve, are no options: the value is canonicalized without a resolver', () => {
    for (const options of [null, 'resolve', 0]) {
      const given = options as unknown as CanonicalizeOptions;
      expect(canonicalize('a/../b', '/srv', given), String(options)).toStrictEqual(ok('/srv/b'));
    }
  });

  it('passes the lexical, NFC, joined path to resolve, never the raw value', () => {
    const seen: string[] = [];
    const result = canonicalize('cafe\u0301/./b/../c//', '/srv/./x/..', {
      resolve: (path) => {
        seen.push(path);
        return path;
      },
    });
    expect(result).toStrictEqual(ok('/srv/caf\u00e9/c'));
    expect(seen).toContain('/srv'); // the root, resolved too
    expect(seen).toContain('/srv/caf\u00e9/c');
    expect(seen.every((path) => path === '/srv' || path === '/srv/caf\u00e9/c')).toBe(true);
  });
});

// Oracle: on ASCII without NUL, canonicalize agrees with path.posix.resolve (which also drops
// a trailing slash and treats '\', '~' and '%2e' as ordinary characters).
describe('canonicalize agrees with path.posix.resolve on ASCII', () => {
  const segment = fc.constantFrom('.', '..', '', 'a', 'b', '%2e', '\\', '~', '...', ' ', 'a.b');
  const segments = fc.array(segment, { maxLength: 10 }).map((parts) => parts.join('/'));
  const value = fc.tuple(fc.boolean(), segments).map(([abs, p]) => (abs ? `/${p}` : p));
  const root = segments.map((p) => `/${p}`);
  // Any ASCII code unit but NUL, weighted towards '/' and '.'.
  const asciiUnit = fc.oneof(
    { arbitrary: fc.constantFrom('/', '.'), weight: 3 },
    { arbitrary: fc.integer({ min: 1, max: 0x7f }).map((c) => String.fromCharCode(c)), weight: 2 },
  );
  const rawAscii = fc.string({ unit: asciiUnit, maxLength: 30 });

  it('for generated segments', () => {
    fc.assert(
      fc.property(value, root, (v, r) => {
        expect(canonicalize(v, r)).toStrictEqual(ok(posix.resolve(r, v)));
      }),
      { numRuns: 1000 },
    );
  });

  it('for raw ASCII strings', () => {
    fc.assert(
      fc.property(rawAscii, root, (v, r) => {
        expect(canonicalize(v, r)).toStrictEqual(ok(posix.resolve(r, v)));
      }),
      { numRuns: 1000 },
    );
  });
});

// Steps 2–4 start with one scan for NUL and non-ASCII (ASCII without NUL
// skips them): it must see every position, in short and long values alike.
describe('the NUL and non-ASCII scan sees every position, short or long', () => {
  const lengths = [1, 2, 63, 64, 65, 66, 130];
  const at = (length: number, i: number, unit: string) =>
    `${'a'.repeat(i)}${unit}${'b'.repeat(length - i - 1)}`;

  it.each(lengths)('a NUL anywhere in %i characters is refused', (length) => {
    for (let i = 0; i < length; i++) {
      expect(canonicalize(at(length, i, '\0'), '/srv')).toStrictEqual(fail('nul-byte'));
    }
  });

  it.each(lengths)('a lone surrogate anywhere in %i characters is refused', (length) => {
    for (let i = 0; i < length; i++) {
      expect(canonicalize(at(length, i, '\ud800'), '/srv')).toStrictEqual(fail('invalid-unicode'));
    }
  });

  // An accent composes with the letter before it: never first, so from 2 characters.
  it.each(lengths.slice(1))('an NFD accent anywhere in %i characters is composed', (length) => {
    for (let i = 1; i < length; i++) {
      const nfd = at(length, i, '\u0301'); // an acute accent after an 'a': NFC makes it 'á'
      expect(canonicalize(nfd, '/srv')).toStrictEqual(ok(`/srv/${nfd.normalize('NFC')}`));
      expect(nfd.normalize('NFC')).toHaveLength(length - 1);
    }
  });

  // The Angstrom sign is replaced on its own (by U+00C5): also the first character, or the only one.
  it.each(lengths)('a character NFC replaces anywhere in %i characters is replaced', (length) => {
    for (let i = 0; i < length; i++) {
      const nfc = ok(`/srv/${at(length, i, '\u00c5')}`);
      expect(canonicalize(at(length, i, '\u212b'), '/srv')).toStrictEqual(nfc);
    }
  });

  it('agrees with NUL, well-formedness and NFC checks applied in full (oracle)', () => {
    const unit = fc.oneof(
      { arbitrary: fc.constantFrom('a', '/', '.', '\u007f'), weight: 6 },
      {
        arbitrary: fc.constantFrom('\0', '\u0080', '\u00e9', 'e\u0301', '\ud800', '\udfff'),
        weight: 1,
      },
    );
    const expected = (value: string): CanonicalizeResult => {
      if (value.includes('\0')) return fail('nul-byte');
      if (!value.isWellFormed()) return fail('invalid-unicode');
      return ok(posix.resolve('/srv', value.normalize('NFC')));
    };
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 150 }), (value) => {
        expect(canonicalize(value, '/srv')).toStrictEqual(expected(value));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('options.resolve is read as an own key', () => {
  it('a resolve on a polluted Object.prototype is ignored', () => {
    const proto = Object.prototype as { resolve?: unknown };
    proto.resolve = () => '/srv/inside';
    try {
      expect(canonicalize('/etc/passwd', '/srv', {})).toEqual({ ok: true, path: '/etc/passwd' });
    } finally {
      delete proto.resolve;
    }
  });
});
