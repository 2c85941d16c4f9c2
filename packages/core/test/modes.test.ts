import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CheckResult, checkFs, type FsAccessMode, PermissionPolicy } from '../src/index.js';

// DESIGN.md, "Checking": the mode is validated first, then the path is
// canonicalized (a failure is a deny with its reason), then: allow when any
// matching rule grants the mode; otherwise `mode-not-permitted` when some rule
// matched; otherwise `path-not-in-allowlist`. Never dependent on rule order.

const policy = (fs: readonly string[], root = '/srv'): PermissionPolicy =>
  new PermissionPolicy({ root, permissions: { fs } });

const allow = { outcome: 'allow' } as const;
const deny = (reason: string) => ({ outcome: 'deny', reason }) as const;

type Want = { readonly outcome: 'allow' } | { readonly outcome: 'deny'; readonly reason: string };

interface ModeRow {
  readonly name: string;
  readonly fs: readonly string[];
  readonly path: unknown;
  readonly mode: FsAccessMode;
  readonly want: Want;
  readonly root: string;
}

const row = (
  name: string,
  fs: readonly string[],
  path: unknown,
  mode: FsAccessMode,
  want: Want,
  root = '/srv',
): ModeRow => ({ name, fs, path, mode, want, root });

const NOT_LISTED = deny('path-not-in-allowlist');
const READ_ONLY = deny('mode-not-permitted');
const ALL = ['rw:./**'];

const ROWS: readonly ModeRow[] = [
  // DESIGN.md's own examples, on the default root and on another
  ...['/', '/srv/sandbox'].flatMap((root) => [
    row(`example avatar (${root})`, ['./uploads/*'], './uploads/avatar.png', 'read', allow, root),
    row(`example passwd (${root})`, ['./uploads/*'], './etc/passwd', 'read', NOT_LISTED, root),
    row(
      `example ../ (${root})`,
      ['./uploads/*'],
      './uploads/../etc/passwd',
      'read',
      NOT_LISTED,
      root,
    ),
    row(`example write (${root})`, ['./uploads/*'], './uploads/a.png', 'write', READ_ONLY, root),
  ]),

  // plain and `r:` grant read only; `rw:` grants both
  row('plain read', ['./a/*'], 'a/x', 'read', allow),
  row('plain write', ['./a/*'], 'a/x', 'write', READ_ONLY),
  row('r: read', ['r:./a/*'], 'a/x', 'read', allow),
  row('r: write', ['r:./a/*'], 'a/x', 'write', READ_ONLY),
  row('rw: read', ['rw:./a/*'], 'a/x', 'read', allow),
  row('rw: write', ['rw:./a/*'], 'a/x', 'write', allow),
  // nothing matched: the reason is the allowlist, in either mode
  row('unmatched read', ['rw:./a/*'], 'b/x', 'read', NOT_LISTED),
  row('unmatched write', ['rw:./a/*'], 'b/x', 'write', NOT_LISTED),
  row('unmatched write, r rule', ['r:./a/*'], 'a/x/y', 'write', NOT_LISTED),
  row('boundary a/b vs a/bc', ['rw:./a/b'], 'a/bc', 'write', NOT_LISTED),
  row('boundary uploads2', ['rw:./uploads/**'], 'uploads2/x', 'write', NOT_LISTED),
  row('escape via ..', ALL, '../srv2/x', 'write', NOT_LISTED),
  row('absolute outside', ALL, '/etc/passwd', 'read', NOT_LISTED),
  row('absolute inside', ALL, '/srv/x/y', 'write', allow),
  row('root itself by **', ALL, '/srv', 'write', allow),

  // any matching rule that grants the mode allows, whatever the order
  row('r then rw (write)', ['r:./a/*', 'rw:./a/b'], 'a/b', 'write', allow),
  row('rw then r (write)', ['rw:./a/b', 'r:./a/*'], 'a/b', 'write', allow),
  row('r then rw (other file)', ['r:./a/*', 'rw:./a/b'], 'a/c', 'write', READ_ONLY),
  row('rw then r (other file)', ['rw:./a/b', 'r:./a/*'], 'a/c', 'write', READ_ONLY),
  row('plain then rw **', ['./a/*', 'rw:./**'], 'a/x', 'write', allow),
  row('rw ** then plain', ['rw:./**', './a/*'], 'a/x', 'write', allow),
  row('same glob r and rw', ['r:./a', 'rw:./a'], 'a', 'write', allow),
  row('same glob rw and r', ['rw:./a', 'r:./a'], 'a', 'write', allow),
  row('two read rules', ['./a/*', 'r:./a/b'], 'a/b', 'write', READ_ONLY),
  row('rw elsewhere, r here', ['rw:./b/*', './a/*'], 'a/x', 'write', READ_ONLY),

  // canonicalize failures surface as a deny with that reason, in either mode
  row('nul byte', ALL, 'a\0b', 'read', deny('nul-byte')),
  row('nul byte, write', ALL, 'a\0b', 'write', deny('nul-byte')),
  row('nul before surrogate', ALL, '\uD800\0', 'read', deny('nul-byte')),
  row('lone high surrogate', ALL, 'a\uD800', 'read', deny('invalid-unicode')),
  row('lone low surrogate', ALL, '\uDC00b', 'write', deny('invalid-unicode')),
  row('surrogate pair is fine', ALL, 'a\uD83D\uDE00', 'write', allow),
  row('number', ALL, 42, 'read', deny('not-a-string')),
  row('null', ALL, null, 'read', deny('not-a-string')),
  row('undefined', ALL, undefined, 'write', deny('not-a-string')),
  row('array of a string', ALL, ['a'], 'read', deny('not-a-string')),
  row('String object', ALL, new String('a'), 'read', deny('not-a-string')),
  row('object', ALL, { toString: () => 'a' }, 'read', deny('not-a-string')),
  row('nul byte, no rules', [], '\0', 'read', deny('nul-byte')),
  row('not a string, no rules', [], 1, 'write', deny('not-a-string')),
];

describe('checkFs: modes and reasons', () => {
  it.each(ROWS)('$name', ({ fs, path, mode, want, root }) => {
    const result = checkFs(policy(fs, root), path, mode);
    expect(result.outcome).toBe(want.outcome);
    if (want.outcome === 'deny') expect(result).toMatchObject({ reason: want.reason });
    else expect((result as { reason?: unknown }).reason).toBeUndefined();
  });
});

describe('checkFs: extra result fields', () => {
  // Only `outcome` and `reason` are the contract; other fields, when present, must not lie.
  it('carries the canonical path, when it carries one', () => {
    const result = checkFs(policy(['./uploads/*']), './uploads/x/../avatar.png', 'read');
    expect(result.outcome).toBe('allow');
    const extra = result as { path?: unknown };
    if (extra.path !== undefined) expect(extra.path).toBe('/srv/uploads/avatar.png');
  });

  it('names a rule that grants the mode, when it names one', () => {
    const result: CheckResult = checkFs(policy(['r:./a/*', 'rw:./a/b']), 'a/b', 'write');
    expect(result.outcome).toBe('allow');
    const extra = result as { rule?: unknown };
    if (extra.rule !== undefined) expect(String(extra.rule)).toMatch(/a\/b$/);
  });
});

const BAD_MODES: readonly unknown[] = [
  'READ',
  'Write',
  'rw',
  'r',
  'w',
  '',
  ' read',
  undefined,
  null,
  0,
  true,
  ['read'],
  new String('read'),
];

describe('checkFs: mode validation', () => {
  const p = policy(['rw:./**']);
  it.each(BAD_MODES.map((mode) => ({ mode, shown: String(mode) })))(
    'mode $shown is a TypeError',
    ({ mode }) => {
      expect(() => checkFs(p, 'a', mode as FsAccessMode)).toThrow(TypeError);
    },
  );

  it.each(BAD_MODES.map((mode) => ({ mode, shown: String(mode) })))(
    'mode $shown is checked before the path',
    ({ mode }) => {
      expect(() => checkFs(p, 'a\0b', mode as FsAccessMode)).toThrow(TypeError);
      expect(() => checkFs(p, 42, mode as FsAccessMode)).toThrow(TypeError);
    },
  );

  it("'read' and 'write' are the only modes", () => {
    expect(checkFs(p, 'a', 'read').outcome).toBe('allow');
    expect(checkFs(p, 'a', 'write').outcome).toBe('allow');
  });
});

// The decision composes from single-rule decisions: a rule "matches" when a
// policy holding it alone allows a read. Rule order must not change anything.
const RULE_POOL = [
  './a/*',
  'r:./a/b',
  'rw:./a/b',
  'rw:./a/**',
  'r:./**',
  'rw:./b/{c,d}',
  './b/*',
  'rw:./[ab]',
  'r:./.x/*',
  'rw:./*/b',
];
const PATH_POOL = [
  'a',
  'a/b',
  'a/c',
  'a/b/c',
  'b',
  'b/c',
  'b/d',
  'b/e',
  '.x/y',
  'c',
  'c/b',
  '../x',
  '',
];

describe('checkFs: decision from the matching rules, order-free', () => {
  it('agrees with the composition of single-rule policies', () => {
    const matches = (rule: string, path: string): boolean => {
      const glob = rule.replace(/^rw?:/, '');
      return checkFs(policy([glob]), path, 'read').outcome === 'allow';
    };
    const grantsWrite = (rule: string) => rule.startsWith('rw:');
    fc.assert(
      fc.property(
        fc.shuffledSubarray(RULE_POOL),
        fc.constantFrom(...PATH_POOL),
        fc.constantFrom<FsAccessMode>('read', 'write'),
        (rules, path, mode) => {
          const matched = rules.filter((rule) => matches(rule, path));
          const want =
            matched.length === 0
              ? deny('path-not-in-allowlist')
              : mode === 'read' || matched.some(grantsWrite)
                ? allow
                : deny('mode-not-permitted');
          for (const order of [rules, [...rules].reverse(), [...rules].sort()]) {
            expect(checkFs(policy(order), path, mode)).toMatchObject(want);
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('is deterministic: the same question twice gets the same answer', () => {
    const p = policy(['r:./a/*', 'rw:./a/b']);
    for (const [path, mode] of [
      ['a/b', 'write'],
      ['a/c', 'write'],
      ['z', 'read'],
    ] as const) {
      expect(checkFs(p, path, mode)).toEqual(checkFs(p, path, mode));
    }
  });
});

describe('the rule that explains a decision does not depend on rule order', () => {
  const ROOT = '/srv';
  const orders = [
    ['uploads/*', 'rw:uploads/*.png', 'rw:uploads/**'],
    ['rw:uploads/**', 'rw:uploads/*.png', 'uploads/*'],
    ['rw:uploads/*.png', 'uploads/*', 'rw:uploads/**'],
  ];
  it.each([
    ['uploads/a.png', 'read'],
    ['uploads/a.png', 'write'],
    ['uploads/a.txt', 'write'],
  ] as const)('%s in %s mode', (path, mode) => {
    const rules = orders.map(
      (fs) => checkFs(new PermissionPolicy({ root: ROOT, permissions: { fs } }), path, mode).rule,
    );
    expect(rules[0]).toBeDefined();
    expect(new Set(rules).size).toBe(1);
  });
});
