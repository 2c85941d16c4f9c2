import { describe, expect, it } from 'vitest';
import {
  type CanonicalizeFailure,
  type CheckResult,
  canonicalize,
  checkFs,
  escapes,
  type FsAccessMode,
  inside,
  isInside,
  PermissionPolicy,
  type Selector,
} from '../src/index.js';

// Path traversal payloads (after the ideas of PayloadsAllTheThings "Directory Traversal" and
// dotdotpwn) against one sandbox. Every expected result is written out by hand from DESIGN.md:
// the core decodes nothing, look-alikes are ordinary characters, `\` is literal, and nothing
// outside the root is ever allowed.

const ROOT = '/srv/sandbox';
const policy = new PermissionPolicy({
  root: ROOT,
  permissions: { fs: ['./public/**', 'rw:./uploads/*'] },
});

type Decision = 'allow' | 'path-not-in-allowlist' | 'mode-not-permitted' | CanonicalizeFailure;
const decision = (result: CheckResult): Decision =>
  result.outcome === 'allow' ? 'allow' : result.reason;

const A = 'allow';
const N = 'path-not-in-allowlist';
const M = 'mode-not-permitted';

/**
 * [name, payload, canonical path or failure reason, read decision, write decision].
 * For a failure the decision in both modes is the failure reason.
 */
type Row = readonly [
  name: string,
  payload: unknown,
  canonical: string,
  read: Decision,
  write: Decision,
];

const failing = (name: string, payload: unknown, reason: CanonicalizeFailure): Row => [
  name,
  payload,
  reason,
  reason,
  reason,
];

const S = ROOT; // shorthand inside expected paths

const table: readonly Row[] = [
  // Plain ../ traversal.
  ['../../../etc/passwd', '../../../etc/passwd', '/etc/passwd', N, N],
  ['deep ../ run', '../../../../../../../../etc/passwd', '/etc/passwd', N, N],
  ['..', '..', '/srv', N, N],
  ['../', '../', '/srv', N, N],
  ['sibling sandbox2 (boundary)', '../sandbox2/public/x', '/srv/sandbox2/public/x', N, N],
  ['out and back into public', '../sandbox/public/x', `${S}/public/x`, A, M],
  ['absolute /etc/passwd', '/etc/passwd', '/etc/passwd', N, N],
  ['absolute inside public', '/srv/sandbox/public/x', `${S}/public/x`, A, M],
  ['absolute sibling (boundary)', '/srv/sandbox2/public/x', '/srv/sandbox2/public/x', N, N],
  ['absolute with ..', '/srv/sandbox/public/../../../etc/shadow', '/etc/shadow', N, N],
  ['public/../../../', 'public/../../../etc/passwd', '/etc/passwd', N, N],
  ['public/../ into uploads', 'public/../../sandbox/uploads/a.png', `${S}/uploads/a.png`, A, A],
  ['uploads/../ into public', 'uploads/../public/index.html', `${S}/public/index.html`, A, M],
  [
    'uploads/../../sandbox2',
    'uploads/../../sandbox2/uploads/a.png',
    '/srv/sandbox2/uploads/a.png',
    N,
    N,
  ],
  ['./ and ../ mixed', 'public/./../../sandbox/public/./x', `${S}/public/x`, A, M],
  ['./public/x', './public/x', `${S}/public/x`, A, M],
  ['public itself (** matches it)', 'public', `${S}/public`, A, M],
  ['uploads itself (* needs a name)', 'uploads', `${S}/uploads`, N, N],
  ['uploads/ itself', 'uploads/', `${S}/uploads`, N, N],
  ['uploads two levels', 'uploads/a/b', `${S}/uploads/a/b`, N, N],
  ['public deep', 'public/a/b/c', `${S}/public/a/b/c`, A, M],
  ['public2 (boundary)', 'public2/x', `${S}/public2/x`, N, N],
  ['uploads2 (boundary)', 'uploads2/x', `${S}/uploads2/x`, N, N],
  ['public dotfile', 'public/.env', `${S}/public/.env`, N, N],
  ['uploads dotfile', 'uploads/.htaccess', `${S}/uploads/.htaccess`, N, N],
  ['empty', '', S, N, N],
  ['/', '/', '/', N, N],
  ['.', '.', S, N, N],

  // Dot variants that are names, not '..'.
  ['....//....//', '....//....//etc/passwd', `${S}/..../..../etc/passwd`, N, N],
  ['...//', '...//', `${S}/...`, N, N],
  [
    'public/....// (dot segments)',
    'public/....//....//etc/passwd',
    `${S}/public/..../..../etc/passwd`,
    N,
    N,
  ],
  ['..;/', '..;/etc/passwd', `${S}/..;/etc/passwd`, N, N],
  ['.../.../', '.../.../', `${S}/.../...`, N, N],
  ['public/... is a dot segment', 'public/.../x', `${S}/public/.../x`, N, N],
  ['. . segments', '. ./. ./etc', `${S}/. ./. ./etc`, N, N],
  ['uploads/" .." is a name', 'uploads/ ..', `${S}/uploads/ ..`, A, A],
  ['uploads/".. " is a dot name', 'uploads/.. ', `${S}/uploads/.. `, N, N],
  ['..//..//..//', '..//..//..//etc', '/etc', N, N],
  ['..///..///', '..///..///etc', '/etc', N, N],

  // Backslashes are ordinary characters.
  ['..\\..\\..\\etc\\passwd', '..\\..\\..\\etc\\passwd', `${S}/..\\..\\..\\etc\\passwd`, N, N],
  ['\\..\\..\\etc', '\\..\\..\\etc\\passwd', `${S}/\\..\\..\\etc\\passwd`, N, N],
  ['public\\..\\ (one segment)', 'public\\..\\..\\etc', `${S}/public\\..\\..\\etc`, N, N],
  [
    'public/a\\..\\..\\..\\etc',
    'public/a\\..\\..\\..\\etc',
    `${S}/public/a\\..\\..\\..\\etc`,
    A,
    M,
  ],
  [
    'uploads/x\\..\\',
    'uploads/x\\..\\..\\..\\etc\\passwd',
    `${S}/uploads/x\\..\\..\\..\\etc\\passwd`,
    A,
    A,
  ],
  ['uploads/..\\ is a dot name', 'uploads/..\\..\\x', `${S}/uploads/..\\..\\x`, N, N],
  ['..\\/..\\/', '..\\/..\\/etc', `${S}/..\\/..\\/etc`, N, N],
  ['public\\x is not under public/', 'public\\x', `${S}/public\\x`, N, N],

  // Percent- and double-encoding: literal names.
  ['%2e%2e%2f', '%2e%2e%2f%2e%2e%2fetc%2fpasswd', `${S}/%2e%2e%2f%2e%2e%2fetc%2fpasswd`, N, N],
  ['%2e%2e/ segments', '%2e%2e/%2e%2e/etc/passwd', `${S}/%2e%2e/%2e%2e/etc/passwd`, N, N],
  ['%2E%2E uppercase', '%2E%2E/x', `${S}/%2E%2E/x`, N, N],
  ['..%2f', '..%2f..%2fetc%2fpasswd', `${S}/..%2f..%2fetc%2fpasswd`, N, N],
  ['%2e%2e%5c', '%2e%2e%5c%2e%2e%5cetc', `${S}/%2e%2e%5c%2e%2e%5cetc`, N, N],
  ['%252e%252e%252f', '%252e%252e%252fetc%252fpasswd', `${S}/%252e%252e%252fetc%252fpasswd`, N, N],
  ['%25252e triple', '%25252e%25252e/x', `${S}/%25252e%25252e/x`, N, N],
  ['..%c0%af', '..%c0%af..%c0%afetc', `${S}/..%c0%af..%c0%afetc`, N, N],
  [
    '%c0%ae%c0%ae/',
    '%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd',
    `${S}/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd`,
    N,
    N,
  ],
  ['%e0%80%ae', '%e0%80%ae%e0%80%ae/x', `${S}/%e0%80%ae%e0%80%ae/x`, N, N],
  ['..%255c', '..%255c..%255cetc', `${S}/..%255c..%255cetc`, N, N],
  ['%u2215', '..%u2215..%u2215etc', `${S}/..%u2215..%u2215etc`, N, N],
  ['%uff0e', '%uff0e%uff0e/x', `${S}/%uff0e%uff0e/x`, N, N],
  [
    'public/%2e%2e/%2e%2e/',
    'public/%2e%2e/%2e%2e/etc/passwd',
    `${S}/public/%2e%2e/%2e%2e/etc/passwd`,
    A,
    M,
  ],
  [
    'uploads/%2e%2e%2f…',
    'uploads/%2e%2e%2f%2e%2e%2fetc%2fpasswd',
    `${S}/uploads/%2e%2e%2f%2e%2e%2fetc%2fpasswd`,
    A,
    A,
  ],
  ['uploads/%2e%2e is a file named %2e%2e', 'uploads/%2e%2e', `${S}/uploads/%2e%2e`, A, A],
  ['uploads/..%2f is a dot name', 'uploads/..%2f..%2fetc', `${S}/uploads/..%2f..%2fetc`, N, N],
  ['%00 is three characters', '%00', `${S}/%00`, N, N],
  ['..%00/', '..%00/', `${S}/..%00`, N, N],
  ['uploads/a.png%00.txt', 'uploads/a.png%00.txt', `${S}/uploads/a.png%00.txt`, A, A],

  // Overlong UTF-8 as a lenient decoder leaves it (Latin-1 or U+FFFD): ordinary characters.
  [
    'overlong / as Latin-1',
    '..\u00c0\u00af..\u00c0\u00afetc',
    `${S}/..\u00c0\u00af..\u00c0\u00afetc`,
    N,
    N,
  ],
  [
    'overlong . as Latin-1',
    '\u00c0\u00ae\u00c0\u00ae/\u00c0\u00ae\u00c0\u00ae/etc',
    `${S}/\u00c0\u00ae\u00c0\u00ae/\u00c0\u00ae\u00c0\u00ae/etc`,
    N,
    N,
  ],
  [
    'uploads/overlong .',
    'uploads/\u00c0\u00ae\u00c0\u00ae',
    `${S}/uploads/\u00c0\u00ae\u00c0\u00ae`,
    A,
    A,
  ],
  [
    'replacement characters',
    '\uFFFD\uFFFD/\uFFFD\uFFFD/etc',
    `${S}/\uFFFD\uFFFD/\uFFFD\uFFFD/etc`,
    N,
    N,
  ],
  [
    '3-byte overlong as Latin-1',
    '\u00e0\u0080\u00ae\u00e0\u0080\u00ae/x',
    `${S}/\u00e0\u0080\u00ae\u00e0\u0080\u00ae/x`,
    N,
    N,
  ],

  // Look-alike dots and slashes: ordinary characters (NFC keeps them).
  [
    'fullwidth dots U+FF0E',
    '\uFF0E\uFF0E/\uFF0E\uFF0E/etc/passwd',
    `${S}/\uFF0E\uFF0E/\uFF0E\uFF0E/etc/passwd`,
    N,
    N,
  ],
  [
    'one dot leader U+2024',
    '\u2024\u2024/\u2024\u2024/etc',
    `${S}/\u2024\u2024/\u2024\u2024/etc`,
    N,
    N,
  ],
  ['small full stop U+FE52', '\uFE52\uFE52/etc', `${S}/\uFE52\uFE52/etc`, N, N],
  ['two dot leader U+2025', '\u2025/etc', `${S}/\u2025/etc`, N, N],
  ['fullwidth solidus U+FF0F', '..\uFF0F..\uFF0Fetc', `${S}/..\uFF0F..\uFF0Fetc`, N, N],
  [
    'division slash U+2215',
    '..\u2215..\u2215etc\u2215passwd',
    `${S}/..\u2215..\u2215etc\u2215passwd`,
    N,
    N,
  ],
  ['fraction slash U+2044', '..\u2044..\u2044etc', `${S}/..\u2044..\u2044etc`, N, N],
  ['big solidus U+29F8', '..\u29F8..\u29F8etc', `${S}/..\u29F8..\u29F8etc`, N, N],
  [
    'public/ fullwidth dots',
    'public/\uFF0E\uFF0E/\uFF0E\uFF0E/etc/passwd',
    `${S}/public/\uFF0E\uFF0E/\uFF0E\uFF0E/etc/passwd`,
    A,
    M,
  ],
  ['uploads/ one dot leaders', 'uploads/\u2024\u2024', `${S}/uploads/\u2024\u2024`, A, A],
  [
    'uploads/ small full stops + division slash',
    'uploads/\uFE52\uFE52\u2215etc',
    `${S}/uploads/\uFE52\uFE52\u2215etc`,
    A,
    A,
  ],
  [
    'uploads/ fullwidth dots + solidus',
    'uploads/\uFF0E\uFF0E\uFF0Fetc',
    `${S}/uploads/\uFF0E\uFF0E\uFF0Fetc`,
    A,
    A,
  ],
  ['uploads/..∕ is a dot name', 'uploads/..\u2215etc', `${S}/uploads/..\u2215etc`, N, N],
  ['public/ fullwidth dot is no dotfile', 'public/\uFF0Eenv', `${S}/public/\uFF0Eenv`, A, M],

  // NFD vs NFC.
  ['uploads/ NFD é', 'uploads/cafe\u0301.png', `${S}/uploads/caf\u00e9.png`, A, A],
  ['uploads/ angstrom sign', 'uploads/\u212B', `${S}/uploads/\u00C5`, A, A],
  ['public/ NFD é', 'public/e\u0301', `${S}/public/\u00e9`, A, M],
  ['.. with combining overlay', '..\u0338/etc', `${S}/..\u0338/etc`, N, N],
  ['. with combining acute', '.\u0301./x', `${S}/.\u0301./x`, N, N],

  // NUL, raw (%00 is above).
  failing('NUL alone', '\0', 'nul-byte'),
  failing('../ then NUL', '../\0', 'nul-byte'),
  failing('NUL extension trick', 'uploads/a.png\0.txt', 'nul-byte'),
  failing('NUL before ..', 'public/\0/../../etc', 'nul-byte'),
  failing('NUL before a lone surrogate', '\0\uD800', 'nul-byte'),
  failing('lone surrogate before NUL', '\uD800\0', 'nul-byte'),

  // Lone surrogates.
  failing('lone high surrogate', '\uD800', 'invalid-unicode'),
  failing('lone low surrogate in uploads', 'uploads/\uDC00.png', 'invalid-unicode'),
  failing('reversed pair', 'uploads/\uDE00\uD83D.png', 'invalid-unicode'),
  failing('../ then high surrogate', '../\uDBFF', 'invalid-unicode'),
  ['well-formed pair', 'uploads/\uD83D\uDE00.png', `${S}/uploads/\uD83D\uDE00.png`, A, A],

  // Very long paths.
  ['10k ../ then etc/passwd', `${'../'.repeat(10_000)}etc/passwd`, '/etc/passwd', N, N],
  ['10k .. segments', new Array(10_000).fill('..').join('/'), '/', N, N],
  [
    '10k down, 10k up, into uploads',
    `${'a/'.repeat(10_000)}${'../'.repeat(10_000)}uploads/x`,
    `${S}/uploads/x`,
    A,
    A,
  ],
  ['5k down, 5002 up', `${'a/'.repeat(5_000)}${'../'.repeat(5_002)}x`, '/x', N, N],
  [
    'uploads/ 100k-char name',
    `uploads/${'a'.repeat(100_000)}`,
    `${S}/uploads/${'a'.repeat(100_000)}`,
    A,
    A,
  ],
  ['100k dots', '.'.repeat(100_000), `${S}/${'.'.repeat(100_000)}`, N, N],
  ['public/ 100k slashes', `public/${'/'.repeat(100_000)}x`, `${S}/public/x`, A, M],
  ['public/ 50k ./', `public/${'./'.repeat(50_000)}x`, `${S}/public/x`, A, M],
  [
    'public/ 10k levels',
    `public/${'a/'.repeat(10_000)}x`,
    `${S}/public/${'a/'.repeat(10_000)}x`,
    A,
    M,
  ],

  // Windows drive letters and UNC names: ordinary POSIX names.
  [
    'C:\\Windows\\…',
    'C:\\Windows\\System32\\drivers\\etc\\hosts',
    `${S}/C:\\Windows\\System32\\drivers\\etc\\hosts`,
    N,
    N,
  ],
  ['C:/Windows/win.ini', 'C:/Windows/win.ini', `${S}/C:/Windows/win.ini`, N, N],
  ['C:/../../../', 'C:/../../../etc/passwd', '/etc/passwd', N, N],
  ['C:', 'C:', `${S}/C:`, N, N],
  ['\\\\server\\share', '\\\\server\\share\\file', `${S}/\\\\server\\share\\file`, N, N],
  ['//server/share', '//server/share/file', '/server/share/file', N, N],
  ['\\\\?\\C:\\', '\\\\?\\C:\\Windows', `${S}/\\\\?\\C:\\Windows`, N, N],
  ['\\\\.\\pipe', '\\\\.\\pipe\\x', `${S}/\\\\.\\pipe\\x`, N, N],
  ['file:///etc/passwd', 'file:///etc/passwd', `${S}/file:/etc/passwd`, N, N],
  ['uploads/C:\\x.png', 'uploads/C:\\x.png', `${S}/uploads/C:\\x.png`, A, A],
  ['uploads/NUL device name', 'uploads/NUL', `${S}/uploads/NUL`, A, A],
  ['uploads/con.txt', 'uploads/con.txt', `${S}/uploads/con.txt`, A, A],
  ['uploads/ NTFS stream', 'uploads/a.png::$DATA', `${S}/uploads/a.png::$DATA`, A, A],
  ['uploads/ trailing dot', 'uploads/a.png.', `${S}/uploads/a.png.`, A, A],
  ['uploads/ trailing space', 'uploads/a.png ', `${S}/uploads/a.png `, A, A],
  ['~/.ssh/id_rsa', '~/.ssh/id_rsa', `${S}/~/.ssh/id_rsa`, N, N],
  ['~root', '~root', `${S}/~root`, N, N],
  ['uploads/~', 'uploads/~', `${S}/uploads/~`, A, A],

  // JSON shapes: nothing but a string is a path.
  failing('null', null, 'not-a-string'),
  failing('undefined', undefined, 'not-a-string'),
  failing('0', 0, 'not-a-string'),
  failing('42', 42, 'not-a-string'),
  failing('-1', -1, 'not-a-string'),
  failing('NaN', Number.NaN, 'not-a-string'),
  failing('Infinity', Number.POSITIVE_INFINITY, 'not-a-string'),
  failing('true', true, 'not-a-string'),
  failing('false', false, 'not-a-string'),
  failing('bigint', 10n, 'not-a-string'),
  failing('symbol', Symbol('uploads/a.png'), 'not-a-string'),
  failing('empty array', [], 'not-a-string'),
  failing('array of an escaping path', ['../etc/passwd'], 'not-a-string'),
  failing('array of an allowed path', ['uploads/a.png'], 'not-a-string'),
  failing('nested arrays', [['..']], 'not-a-string'),
  failing('empty object', {}, 'not-a-string'),
  failing('object with a path', { path: '../x' }, 'not-a-string'),
  failing('own __proto__ key', JSON.parse('{"__proto__": "../x"}'), 'not-a-string'),
  failing(
    'constructor.prototype',
    JSON.parse('{"constructor": {"prototype": "x"}}'),
    'not-a-string',
  ),
  failing('null-prototype object', Object.create(null), 'not-a-string'),
  failing('boxed String', new String('uploads/a.png'), 'not-a-string'),
  failing('object with toString', { toString: () => 'uploads/a.png' }, 'not-a-string'),
  failing('object with valueOf', { valueOf: () => 'uploads/a.png' }, 'not-a-string'),
  failing('function', () => 'uploads/a.png', 'not-a-string'),
  failing('Date', new Date(0), 'not-a-string'),

  // JSON-ish names as strings are ordinary names.
  ['__proto__', '__proto__', `${S}/__proto__`, N, N],
  ['constructor', 'constructor', `${S}/constructor`, N, N],
  ['toString', 'toString', `${S}/toString`, N, N],
  ['uploads/__proto__', 'uploads/__proto__', `${S}/uploads/__proto__`, A, A],
  ['uploads/hasOwnProperty', 'uploads/hasOwnProperty', `${S}/uploads/hasOwnProperty`, A, A],
  [
    'public/constructor/prototype',
    'public/constructor/prototype',
    `${S}/public/constructor/prototype`,
    A,
    M,
  ],
];

const isAbsolute = (expected: string): boolean => expected.startsWith('/');
const liesInside = (path: string): boolean => path === ROOT || path.startsWith(`${ROOT}/`);

describe('attack payloads', () => {
  it.each(table)('%s', (_name, payload, canonical, read, write) => {
    // The table itself: nothing outside the root is ever expected to be allowed.
    if (read === 'allow' || write === 'allow') expect(liesInside(canonical)).toBe(true);

    expect(canonicalize(payload, ROOT)).toStrictEqual(
      isAbsolute(canonical) ? { ok: true, path: canonical } : { ok: false, reason: canonical },
    );
    expect(isInside(payload, ROOT)).toBe(isAbsolute(canonical) && liesInside(canonical));
    expect(decision(checkFs(policy, payload, 'read'))).toBe(read);
    expect(decision(checkFs(policy, payload, 'write'))).toBe(write);
  });
});

describe('attack payloads in JSON bodies, through selectors', () => {
  type JsonRow = readonly [selector: Selector, json: string, inside: boolean, escapes: boolean];
  const rows: readonly JsonRow[] = [
    ['path', '{"path": "../../etc/passwd"}', false, true],
    ['path', '{"path": "uploads/a.png"}', true, false],
    ['path', '{"path": "/srv/sandbox2/x"}', false, true],
    ['path', '{"path": ["uploads/a.png", "../../etc/passwd"]}', false, true],
    ['path', '{"path": ["uploads/a.png", "public/x"]}', true, false],
    ['path', '{"path": null}', false, true],
    ['path', '{"path": 42}', false, true],
    ['path', '{"path": true}', false, true],
    ['path', '{"path": {"__proto__": "../x"}}', false, true],
    ['path', '{"path": []}', false, false],
    ['path', '{"path": [[".."]]}', false, true],
    ['path', '{"path": [null]}', false, true],
    ['path', '{"path": "\\u0000"}', false, true],
    ['path', '{"path": "\\ud800"}', false, true],
    ['path', '{"path": "%2e%2e/%2e%2e/etc"}', true, false],
    ['path', '{"path": "..\\\\..\\\\etc"}', true, false],
    ['path', '{"__proto__": {"path": "../x"}}', false, false],
    [['__proto__', 'path'], '{"__proto__": {"path": "../x"}}', false, true],
    ['__proto__', '{"__proto__": "../x"}', false, true],
    ['constructor', '{}', false, false],
    ['constructor', '{"constructor": "../x"}', false, true],
    [['constructor', 'prototype'], '{}', false, false],
    ['toString', '{}', false, false],
    [['files', 0], '{"files": {"0": "../x"}}', false, false],
    [['files', 0], '{"files": "../x"}', false, false],
    [['files', 0], '{"files": ["../x"]}', false, true],
    [['files', 0], '{"files": [null]}', false, true],
    [['files', 1], '{"files": ["uploads/a"]}', false, false],
    ['path', 'null', false, false],
    ['path', '"../x"', false, false],
    ['path', '["../x"]', false, false],
    ['path', '42', false, false],
  ];

  it.each(rows)('%j in %s', (selector, json, expectedInside, expectedEscapes) => {
    const args: unknown = JSON.parse(json);
    expect(inside(selector, ROOT)(args)).toBe(expectedInside);
    expect(escapes(selector, ROOT)(args)).toBe(expectedEscapes);
  });
});

describe('attack modes', () => {
  const badModes: readonly unknown[] = [
    'READ',
    'Write',
    'rw',
    'r',
    'execute',
    '',
    ' read',
    null,
    undefined,
    0,
    ['read'],
    new String('read'),
  ];

  it.each(badModes)(
    'checkFs refuses mode %j with a TypeError, before looking at the path',
    (mode) => {
      expect(() => checkFs(policy, 'public/x', mode as FsAccessMode)).toThrow(TypeError);
      expect(() => checkFs(policy, 42, mode as FsAccessMode)).toThrow(TypeError);
      expect(() => checkFs(policy, '../\0', mode as FsAccessMode)).toThrow(TypeError);
    },
  );
});
