import { describe, expect, it } from 'vitest';
import { expandGlob } from '../src/glob-expand.js';
import { type GlobNode, GlobSyntaxError, parseGlob } from '../src/glob-parse.js';
import {
  checkFs,
  escapes,
  inside,
  PermissionPolicy,
  type PermissionPolicyOptions,
} from '../src/index.js';

// STYLE.md: bad configuration throws at build time with a precise message naming the
// option or the rule. Every build-time TypeError of the core, message by message: a test
// that only asked for "a TypeError" would also pass on an engine error thrown by accident
// (`Cannot convert undefined or null to object`), which names nothing.

/** The message of the TypeError that `build` throws. */
function typeErrorOf(build: () => unknown): string {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return (error as TypeError).message;
  }
  throw new Error('expected a TypeError, nothing was thrown');
}

/** A brace's alternatives, recording which of them were read: the expansion is counted, not timed. */
function readsOf(list: readonly GlobNode[][]) {
  const read = new Set<string>();
  const alternatives = new Proxy(list, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) read.add(key);
      return Reflect.get(target, key, receiver);
    },
  });
  return { alternatives, read };
}

const policy = (options: unknown) => () => new PermissionPolicy(options as PermissionPolicyOptions);

/**
 * For a test that builds rules of a million characters: bounded work, no wait, but 1.5 s
 * on an idle 2-core machine and up to 8 s on a loaded one, past vitest's 5 s default.
 */
const MILLION_CHARACTERS_MS = 30_000;

type Row = readonly [name: string, options: unknown, message: string];

/** A root the resolver fails on: the message says what it must answer (an `async` one fails so). */
const RESOLVER_FAILED =
  'root must canonicalize to an absolute path (resolve-failed: the resolver threw, or did not answer an absolute path synchronously)';

describe('PermissionPolicy: option messages', () => {
  const fs = { permissions: { fs: [] } };
  const ROWS: readonly Row[] = [
    ['options null', null, 'PermissionPolicy: options must be an object'],
    ['options undefined', undefined, 'PermissionPolicy: options must be an object'],
    ['options a string', 'rw:./**', 'PermissionPolicy: options must be an object'],
    ['options a number', 42, 'PermissionPolicy: options must be an object'],
    ['an unknown option', { ...fs, roots: '/srv' }, 'PermissionPolicy: unknown option "roots"'],
    ['root a number', { ...fs, root: 42 }, 'PermissionPolicy: root must be a string, got number'],
    ['root null', { ...fs, root: null }, 'PermissionPolicy: root must be a string, got null'],
    [
      'root a String object',
      { ...fs, root: new String('/srv') },
      'PermissionPolicy: root must be a string, got object',
    ],
    [
      'root relative',
      { ...fs, root: 'srv' },
      'PermissionPolicy: root must canonicalize to an absolute path (relative-root)',
    ],
    [
      'root with NUL',
      { ...fs, root: '/srv\0' },
      'PermissionPolicy: root must canonicalize to an absolute path (nul-byte)',
    ],
    [
      'an async resolver',
      { ...fs, root: '/srv', resolve: async (path: string) => path },
      `PermissionPolicy: ${RESOLVER_FAILED}`,
    ],
    ['dot a number', { ...fs, dot: 1 }, 'PermissionPolicy: dot must be a boolean'],
    ['resolve a string', { ...fs, resolve: 'x' }, 'PermissionPolicy: resolve must be a function'],
    ['permissions missing', {}, 'PermissionPolicy: permissions must be an object with an fs array'],
    [
      'permissions.fs missing',
      { permissions: {} },
      'PermissionPolicy: permissions.fs must be an array of rule strings',
    ],
    [
      'a permission other than fs',
      { permissions: { fs: [], net: null } },
      'PermissionPolicy: unknown permission "permissions.net": only permissions.fs is checked',
    ],
    [
      'a permission key holding undefined',
      { permissions: { fs: [7], env: undefined } },
      'rule 1: must be a string, got number',
    ],
    [
      'a rule that is not a string',
      { permissions: { fs: ['a/*', 7] } },
      'rule 2: must be a string, got number',
    ],
  ];

  it.each(ROWS)('%s', (_name, options, message) => {
    expect(typeErrorOf(policy(options))).toBe(message);
  });
});

describe('PermissionPolicy: rule messages name the rule, its text and the reason', () => {
  // Each bad rule is rule 2, after a good one; the root is /srv.
  const ROWS: readonly (readonly [rule: string, reason: string])[] = [
    ['', 'empty glob'],
    ['rw:', 'empty glob'],
    ['a\0b', 'NUL in glob'],
    ['a\uD800', 'lone surrogate in glob'],
    ['!a', 'a leading "!" is not supported: the allowlist has no negation'],
    ['wr:x', 'unknown prefix "wr" (use "r:" or "rw:")'],
    ['a{b', 'unbalanced "{"'],
    ['{a,{b}', 'unbalanced "{"'],
    ['a[b', 'unbalanced "["'],
    // a range dash with nothing after it leaves the class open
    ['[a-', 'unbalanced "["'],
    // `]` right after `[` (or `[!`) is a member, so these never close
    ['[]', 'unbalanced "["'],
    ['[!]', 'unbalanced "["'],
    ['[a/b]', 'a "[" class cannot hold or cross "/"'],
    ['[a-/]', 'a "[" class cannot hold or cross "/"'],
    ['[b-a]', 'a class range runs backwards'],
    ['[\\z-a]', 'a class range runs backwards'],
    ['a\\', 'trailing "\\"'],
    ['[\\', 'trailing "\\"'],
    ['./*/../x', '".." cannot pop a segment holding glob syntax'],
    ['{a,b}/..', '".." cannot pop a segment holding glob syntax'],
    ['/etc/*', 'lies outside the root'],
    ['../x/*', 'lies outside the root'],
    // braces in the first segment leave the literal root at `/`
    ['/{srv,etc}/x', 'lies outside the root'],
    ['{a,b}'.repeat(11), 'braces expand to more than 1024 alternatives'],
    // deep nesting is refused by name, never a stack overflow (RangeError)
    [`${'{'.repeat(33)}a${'}'.repeat(33)}`, 'braces nest deeper than 32'],
    [`${'{'.repeat(5000)}a${'}'.repeat(5000)}`, 'braces nest deeper than 32'],
    [
      'x/{a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q}{a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q}{a,b,c,d}',
      'braces expand to more than 1024 alternatives',
    ],
  ];

  it.each(ROWS.map(([rule, reason]) => ({ rule, reason, shown: JSON.stringify(rule) })))(
    '$shown: $reason',
    ({ rule, reason }) => {
      const build = policy({ root: '/srv', permissions: { fs: ['./ok/*', rule] } });
      expect(typeErrorOf(build)).toBe(`rule 2 ${JSON.stringify(rule)}: ${reason}`);
    },
  );

  it('braces may nest 32 deep', () => {
    const p = new PermissionPolicy({
      root: '/srv',
      permissions: { fs: [`${'{'.repeat(32)}a${'}'.repeat(32)}`] },
    });
    expect(checkFs(p, 'a', 'read')).toMatchObject({ outcome: 'allow' });
  });

  it('only nesting counts toward the depth: closed braces before or beside it do not', () => {
    // 40 braces side by side nest one deep; a brace closed before a 32-deep nest leaves it 32 deep.
    const side = '{a}'.repeat(40);
    const after = `{x}/${'{'.repeat(32)}a${'}'.repeat(32)}`;
    const p = new PermissionPolicy({ root: '/srv', permissions: { fs: [side, after] } });
    expect(checkFs(p, 'a'.repeat(40), 'read')).toMatchObject({ outcome: 'allow', rule: side });
    expect(checkFs(p, 'x/a', 'read')).toMatchObject({ outcome: 'allow', rule: after });
    expect(checkFs(p, 'a'.repeat(39), 'read')).toMatchObject({
      outcome: 'deny',
      reason: 'path-not-in-allowlist',
    });
  });

  it('braces that expand too far are refused at once, not after expanding each alternative', () => {
    // 1,000 alternatives of 1,024 each: all of them were built first, 3.5 s and 750 MB.
    const rule = `{${Array(1000).fill('{a,b}'.repeat(10)).join(',')}}`;
    const build = policy({ root: '/srv', permissions: { fs: [rule] } });
    expect(typeErrorOf(build)).toMatch(/: braces expand to more than 1024 alternatives$/);
    // Counted, not timed: the expansion reads the second alternative, past the limit, and stops.
    const [brace] = parseGlob(rule) as [Extract<GlobNode, { type: 'brace' }>];
    const { alternatives, read } = readsOf(brace.alternatives);
    expect(() => expandGlob([{ ...brace, alternatives }])).toThrow(GlobSyntaxError);
    expect([...read]).toEqual(['0', '1']);
  });

  it(
    'alternatives of 1,048,576 characters together at most: a long tail or head times 1,024 is refused',
    () => {
      // 1,024 copies of a 50 KB tail took 20 s and a gigabyte to compile.
      const braces = '{a,b}'.repeat(10);
      const tooLong =
        /: it expands to more than 1048576 characters, its brace alternatives together$/;
      for (const rule of [
        braces + 'x'.repeat(1100),
        'x'.repeat(1100) + braces,
        'y'.repeat(1 << 21),
      ]) {
        expect(typeErrorOf(policy({ root: '/srv', permissions: { fs: [rule] } }))).toMatch(tooLong);
      }
      const fits = new PermissionPolicy({
        root: '/srv',
        permissions: { fs: [braces + 'x'.repeat(900)] },
      });
      expect(checkFs(fits, `abababbbba${'x'.repeat(900)}`, 'read')).toMatchObject({
        outcome: 'allow',
      });
    },
    MILLION_CHARACTERS_MS,
  );

  it(
    '1,048,576 characters fit; past the brace, each head counts once per alternative after it',
    () => {
      expect(() => expandGlob(parseGlob('y'.repeat(1 << 20)))).not.toThrow();
      // 512 heads of 9 characters, then alternatives of 1,024,000 together: the heads pass the limit.
      const rule = `${'{a,b}'.repeat(9)}{${'x'.repeat(1000)},${'y'.repeat(1000)}}`;
      expect(() => expandGlob(parseGlob(rule))).toThrow(
        /it expands to more than 1048576 characters, its brace alternatives together$/,
      );
    },
    MILLION_CHARACTERS_MS,
  );

  it('alternatives too long together are refused as they are read, the heads before the brace counted', () => {
    // Two heads ({a,b}) times 300,000 + 300,000 characters is past the limit at the second alternative.
    const long = (c: string) => c.repeat(300_000);
    const [heads, brace] = parseGlob(`{a,b}{${long('x')},${long('y')},z}`) as [
      GlobNode,
      Extract<GlobNode, { type: 'brace' }>,
    ];
    const { alternatives, read } = readsOf(brace.alternatives);
    expect(() => expandGlob([heads, { ...brace, alternatives }])).toThrow(
      /it expands to more than 1048576 characters/,
    );
    expect([...read]).toEqual(['0', '1']);
  });

  it('braces may expand to exactly 1024 alternatives', () => {
    const p = new PermissionPolicy({ root: '/srv', permissions: { fs: ['{a,b}'.repeat(10)] } });
    expect(checkFs(p, 'abababbbba', 'read')).toMatchObject({ outcome: 'allow' });
    expect(checkFs(p, 'abababbbbc', 'read')).toMatchObject({
      outcome: 'deny',
      reason: 'path-not-in-allowlist',
    });
  });
});

describe('checkFs: the policy argument', () => {
  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a plain object', {}],
    ['an object that looks like a policy', { root: '/', rules: [], dot: false }],
    ['a number', 42],
    ['an object whose prototype has no constructor', Object.create(Object.create(null))],
  ])('%s is a TypeError naming the argument', (_name, value) => {
    expect(typeErrorOf(() => checkFs(value as unknown as PermissionPolicy, 'a', 'read'))).toBe(
      'checkFs: policy must be a PermissionPolicy',
    );
  });

  it("another class named PermissionPolicy (another copy's) is told how to load one copy", () => {
    // What a policy of the CommonJS build is to the ES module one: test/packaging.test.ts
    // checks the builds themselves; this is the same message from the source.
    class PermissionPolicy {}
    expect(typeErrorOf(() => checkFs(new PermissionPolicy() as never, 'a', 'read'))).toBe(
      'checkFs: policy was built by another copy of @pathgate/core (its ES module and CommonJS builds are two copies): load @pathgate/core and the pathgate adapters the same way, all by import or all by require',
    );
  });
});

describe('inside and escapes: build messages name the builder', () => {
  const SELECTOR =
    'a selector is a non-empty key or a non-empty list of non-empty keys and non-negative integer indexes';
  const builders = { inside, escapes } as const;
  const ROWS = (['inside', 'escapes'] as const).flatMap((name) => [
    {
      name,
      what: 'resolve a number',
      build: () => builders[name]('p', '/srv', { resolve: 42 as unknown as () => string }),
      message: `${name}: options.resolve must be a function`,
    },
    {
      name,
      what: 'a relative root',
      build: () => builders[name]('p', 'srv'),
      message: `${name}: root must canonicalize to an absolute path (relative-root)`,
    },
    {
      name,
      what: 'a root with NUL',
      build: () => builders[name]('p', '/srv\0'),
      message: `${name}: root must canonicalize to an absolute path (nul-byte)`,
    },
    {
      name,
      what: 'a root the resolver refuses',
      build: () =>
        builders[name]('p', '/srv', {
          resolve: () => {
            throw new Error('no');
          },
        }),
      message: `${name}: ${RESOLVER_FAILED}`,
    },
    {
      name,
      what: 'an async resolver',
      build: () => builders[name]('p', '/srv', { resolve: async (path: string) => path } as never),
      message: `${name}: ${RESOLVER_FAILED}`,
    },
    {
      name,
      what: 'an empty selector',
      build: () => builders[name]([], '/srv'),
      message: `${name}: selector: ${SELECTOR}`,
    },
    {
      name,
      what: 'a negative index',
      build: () => builders[name](['a', -1], '/srv'),
      message: `${name}: selector: ${SELECTOR}`,
    },
  ]);

  it.each(ROWS)('$name: $what', ({ build, message }) => {
    expect(typeErrorOf(build)).toBe(message);
  });
});
