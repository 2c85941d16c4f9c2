import { describe, expect, it } from 'vitest';
import { checkFs, PermissionPolicy, type PermissionPolicyOptions } from '../src/index.js';

// DESIGN.md, "Building a policy": every problem is a TypeError whose message
// names the option or the rule. An own key holding `undefined` counts as absent;
// `null` is an error.

function build(options: unknown): PermissionPolicy {
  return new PermissionPolicy(options as PermissionPolicyOptions);
}

function buildError(options: unknown): TypeError {
  try {
    build(options);
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return error as TypeError;
  }
  throw new Error('expected the policy build to throw a TypeError');
}

const read = (p: PermissionPolicy, path: unknown) => checkFs(p, path, 'read');
const write = (p: PermissionPolicy, path: unknown) => checkFs(p, path, 'write');
const allowed = { outcome: 'allow' } as const;
const unlisted = { outcome: 'deny', reason: 'path-not-in-allowlist' } as const;
const readOnly = { outcome: 'deny', reason: 'mode-not-permitted' } as const;

interface OptionErrorRow {
  readonly name: string;
  readonly options: unknown;
  readonly names: RegExp;
}

const fs = (rules: unknown) => ({ permissions: { fs: rules } });

/** `items` with a hole (an index never set) at `at`, the rest shifted after it. */
const holey = (items: readonly string[], at: number): string[] => {
  const out: string[] = new Array(items.length + 1);
  items.forEach((item, i) => {
    out[i < at ? i : i + 1] = item;
  });
  return out;
};

const OPTION_ERRORS: readonly OptionErrorRow[] = [
  // root: a string that canonicalizes to an absolute path
  { name: 'root relative', options: { root: 'srv', ...fs([]) }, names: /\broot\b/ },
  { name: 'root empty', options: { root: '', ...fs([]) }, names: /\broot\b/ },
  { name: 'root dot', options: { root: '.', ...fs([]) }, names: /\broot\b/ },
  { name: 'root backslash', options: { root: '\\srv', ...fs([]) }, names: /\broot\b/ },
  { name: 'root tilde', options: { root: '~/srv', ...fs([]) }, names: /\broot\b/ },
  { name: 'root number', options: { root: 42, ...fs([]) }, names: /\broot\b/ },
  { name: 'root null', options: { root: null, ...fs([]) }, names: /\broot\b/ },
  {
    name: 'root String object',
    options: { root: new String('/srv'), ...fs([]) },
    names: /\broot\b/,
  },
  { name: 'root NUL', options: { root: '/srv\0', ...fs([]) }, names: /\broot\b/ },
  { name: 'root lone surrogate', options: { root: '/srv/\uD800', ...fs([]) }, names: /\broot\b/ },
  // permissions and permissions.fs
  { name: 'permissions missing', options: {}, names: /\bpermissions\b/ },
  { name: 'permissions undefined', options: { permissions: undefined }, names: /\bpermissions\b/ },
  { name: 'permissions null', options: { permissions: null }, names: /\bpermissions\b/ },
  { name: 'permissions array', options: { permissions: [] }, names: /\bpermissions\b/ },
  { name: 'permissions string', options: { permissions: 'rw:./**' }, names: /\bpermissions\b/ },
  { name: 'fs missing', options: { permissions: {} }, names: /permissions\.fs/ },
  { name: 'fs undefined', options: fs(undefined), names: /permissions\.fs/ },
  { name: 'fs null', options: fs(null), names: /permissions\.fs/ },
  // A hole reads as undefined: named as a rule that is not a string, never a crash.
  {
    name: 'fs with a hole',
    options: fs(holey(['./a'], 0)),
    names: /^rule 1: must be a string, got undefined$/,
  },
  {
    name: 'fs with an inner hole',
    options: fs(holey(['./a', './b'], 1)),
    names: /^rule 2: must be a string, got undefined$/,
  },
  {
    name: 'an unknown key with a value',
    options: { ...fs([]), roots: '/srv' },
    names: /unknown option "roots"/,
  },
  { name: 'fs string', options: fs('./a'), names: /permissions\.fs/ },
  { name: 'fs array-like', options: fs({ 0: './a', length: 1 }), names: /permissions\.fs/ },
  { name: 'fs holds a number', options: fs(['./a', 42]), names: /permissions\.fs|rule [12]\b/ },
  { name: 'fs holds null', options: fs(['./a', null]), names: /permissions\.fs|rule [12]\b/ },
  {
    name: 'fs holds undefined',
    options: fs(['./a', undefined]),
    names: /permissions\.fs|rule [12]\b/,
  },
  {
    name: 'fs holds a String object',
    options: fs([new String('./a')]),
    names: /permissions\.fs|rule [01]\b/,
  },
  // dot: a boolean when given
  { name: 'dot string', options: { dot: 'true', ...fs([]) }, names: /\bdot\b/ },
  { name: 'dot number', options: { dot: 1, ...fs([]) }, names: /\bdot\b/ },
  { name: 'dot null', options: { dot: null, ...fs([]) }, names: /\bdot\b/ },
  // resolve: a function when given
  { name: 'resolve string', options: { resolve: 'realpath', ...fs([]) }, names: /\bresolve\b/ },
  { name: 'resolve object', options: { resolve: {}, ...fs([]) }, names: /\bresolve\b/ },
  { name: 'resolve null', options: { resolve: null, ...fs([]) }, names: /\bresolve\b/ },
];

describe('policy options: errors name the option', () => {
  it.each(OPTION_ERRORS)('$name', ({ options, names }) => {
    expect(buildError(options).message).toMatch(names);
  });

  it.each([undefined, null, 'rw:./**', 42])('options %s is a TypeError', (options) => {
    expect(() => build(options)).toThrow(TypeError);
  });
});

describe('policy options: defaults and absent keys', () => {
  it('root defaults to /', () => {
    const p = build(fs(['/a/*']));
    expect(read(p, '/a/b')).toMatchObject(allowed);
    expect(read(p, 'a/b')).toMatchObject(allowed);
    expect(read(p, '/ab')).toMatchObject(unlisted);
  });

  it('an own root key holding undefined is the default root', () => {
    const p = build({ root: undefined, ...fs(['./a/*']) });
    expect(read(p, '/a/b')).toMatchObject(allowed);
    expect(read(p, '/srv/a/b')).toMatchObject(unlisted);
  });

  it('dot defaults to false, and an own dot key holding undefined is that default', () => {
    for (const options of [fs(['*']), { dot: undefined, ...fs(['*']) }]) {
      const p = build({ root: '/srv', ...options });
      expect(read(p, '.env')).toMatchObject(unlisted);
      expect(read(p, 'env')).toMatchObject(allowed);
    }
    expect(read(build({ root: '/srv', dot: true, ...fs(['*']) }), '.env')).toMatchObject(allowed);
    expect(read(build({ root: '/srv', dot: false, ...fs(['*']) }), '.env')).toMatchObject(unlisted);
  });

  it('an unknown own key holding undefined counts as absent too', () => {
    const p = build({ root: '/srv', roots: undefined, ...fs(['./a']) });
    expect(read(p, 'a')).toMatchObject(allowed);
  });

  it('an own resolve key holding undefined is no resolver', () => {
    const p = build({ root: '/srv', resolve: undefined, ...fs(['./a']) });
    expect(read(p, 'a')).toMatchObject(allowed);
  });

  it('the root is canonicalized once, at build time', () => {
    const p = build({ root: '//srv/./x/../b//', ...fs(['./f']) });
    expect(read(p, '/srv/b/f')).toMatchObject(allowed);
    expect(read(p, 'f')).toMatchObject(allowed);
    expect(read(p, '/srv/x/f')).toMatchObject(unlisted);
  });

  it('the root is NFC-normalized', () => {
    const p = build({ root: '/cafe\u0301', ...fs(['./f']) });
    expect(read(p, '/caf\u00e9/f')).toMatchObject(allowed);
  });

  it('does not read the options again after build', () => {
    const rules = ['./a'];
    const options = { root: '/srv', permissions: { fs: rules } };
    const p = build(options);
    rules.push('rw:./**');
    options.root = '/';
    expect(read(p, 'a')).toMatchObject(allowed);
    expect(read(p, 'b')).toMatchObject(unlisted);
    expect(read(p, '/a')).toMatchObject(unlisted);
  });

  it('shows the canonical root, the rules as given and dot, read-only', () => {
    const rules = ['rw:./uploads/*', 'docs/**', 'r:{a,b}'];
    const p = build({ root: '/srv/./x/..', dot: true, ...fs(rules) });
    expect(p.root).toBe('/srv');
    expect(p.rules).toEqual(rules);
    expect(p.rules).not.toBe(rules);
    expect(p.dot).toBe(true);
    expect(Object.isFrozen(p)).toBe(true);
    expect(Object.isFrozen(p.rules)).toBe(true);
    expect(build(fs([])).rules).toEqual([]);
    expect(build(fs([])).dot).toBe(false);
  });
});

// Rules: "[r:|rw:]<glob>". Text before the first ':' that is one or more ASCII
// letters is a prefix and must be exactly r or rw; otherwise there is no prefix.
interface PrefixRow {
  readonly rule: string;
  readonly path: string;
  readonly read: boolean;
  readonly write: boolean;
}

const PREFIX_OK: readonly PrefixRow[] = [
  { rule: './a', path: 'a', read: true, write: false },
  { rule: 'r:./a', path: 'a', read: true, write: false },
  { rule: 'rw:./a', path: 'a', read: true, write: true },
  { rule: 'r:/srv/a', path: 'a', read: true, write: false },
  { rule: 'rw:/srv/a', path: 'a', read: true, write: true },
  // no prefix: the text before ':' is not only ASCII letters
  { rule: './a:b', path: 'a:b', read: true, write: false },
  { rule: '1:x', path: '1:x', read: true, write: false },
  { rule: 'a1:x', path: 'a1:x', read: true, write: false },
  { rule: ':x', path: ':x', read: true, write: false },
  { rule: 'é:x', path: 'é:x', read: true, write: false },
  { rule: 'r :x', path: 'r :x', read: true, write: false },
  { rule: 'r-w:x', path: 'r-w:x', read: true, write: false },
  // only the first ':' ends a prefix
  { rule: 'rw:r:x', path: 'r:x', read: true, write: true },
  { rule: 'r:rw:x', path: 'rw:x', read: true, write: false },
  { rule: 'rw::x', path: ':x', read: true, write: true },
];

describe('rule prefixes', () => {
  it.each(PREFIX_OK)('$rule grants $path read $read, write $write', (r) => {
    const p = build({ root: '/srv', ...fs([r.rule]) });
    expect(read(p, r.path)).toMatchObject(r.read ? allowed : unlisted);
    expect(write(p, r.path)).toMatchObject(r.write ? allowed : readOnly);
    // the prefix is not part of the glob
    expect(read(p, `${r.path}x`)).toMatchObject(unlisted);
  });

  it.each([
    'R:./x',
    'RW:./x',
    'Rw:./x',
    'wr:./x',
    'w:./x',
    'c:./x',
    'C:/x',
    'C:\\x',
    'rwx:./x',
    'ro:./x',
    'read:./x',
    'x:./y',
  ])('prefix of %s is an error naming rule, text and prefix', (rule) => {
    const message = buildError({ root: '/srv', ...fs(['./a', 'rw:./b', rule]) }).message;
    expect(message).toMatch(/rule [23]\b/);
    expect(message).toContain(JSON.stringify(rule));
    expect(message).toMatch(/prefix/i);
  });
});

describe('resolve', () => {
  // A resolver that maps /link/... onto /real/..., recording what it was given.
  function recorder(fail?: (path: string) => string | undefined) {
    const calls: string[] = [];
    const resolve = (path: string): string => {
      calls.push(path);
      const failure = fail?.(path);
      if (failure !== undefined) {
        if (failure === 'throw') throw new Error('no such file');
        return failure;
      }
      return path === '/link' || path.startsWith('/link/') ? `/real${path.slice(5)}` : path;
    };
    return { calls, resolve };
  }

  it('never receives rule text', () => {
    const { calls, resolve } = recorder();
    build({ root: '/link', resolve, ...fs(['./lit', 'rw:./up/*.png', '/real/abs/**', 'r:{x,y}']) });
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) expect(['/link', '/real']).toContain(call);
  });

  it('joins relative rules to the resolved root', () => {
    const { resolve } = recorder();
    const p = build({ root: '/link', resolve, ...fs(['rw:./up/*']) });
    expect(write(p, '/real/up/a')).toMatchObject(allowed);
    expect(write(p, '/link/up/a')).toMatchObject(allowed);
    expect(write(p, 'up/a')).toMatchObject(allowed);
    expect(write(p, '/real/up2/a')).toMatchObject(unlisted);
  });

  it('requires absolute rules to lie inside the resolved root', () => {
    const { resolve } = recorder();
    const ok = build({ root: '/link', resolve, ...fs(['/real/a/*']) });
    expect(read(ok, '/link/a/x')).toMatchObject(allowed);
    const message = buildError({ root: '/link', resolve, ...fs(['./b', '/link/a/*']) }).message;
    expect(message).toMatch(/rule [12]\b/);
    expect(message).toContain('"/link/a/*"');
  });

  it.each([
    { name: 'throws', fail: 'throw' },
    { name: 'returns a relative path', fail: 'real' },
    { name: 'returns an empty string', fail: '' },
    { name: 'returns a path with NUL', fail: '/real\0' },
  ])('a root whose resolve $name is a TypeError naming root', ({ fail }) => {
    const { resolve } = recorder((path) => (path === '/link' ? fail : undefined));
    expect(buildError({ root: '/link', resolve, ...fs(['./a']) }).message).toMatch(/\broot\b/);
  });

  it.each([
    { name: 'throws', fail: 'throw', reason: 'resolve-failed' },
    { name: 'returns a relative path', fail: 'x/y', reason: 'resolve-failed' },
    { name: 'returns a non-string', fail: 'NaN', reason: 'resolve-failed' },
    { name: 'returns a NUL', fail: '/real/a\0', reason: 'nul-byte' },
  ])('a path whose resolve $name is denied: $reason', ({ fail, reason }) => {
    const calls: string[] = [];
    const resolve = (path: string): string => {
      calls.push(path);
      if (!path.includes('boom')) return path;
      if (fail === 'throw') throw new Error('boom');
      if (fail === 'NaN') return Number.NaN as unknown as string;
      return fail;
    };
    const p = build({ root: '/real', resolve, ...fs(['rw:./**']) });
    expect(read(p, 'a/boom')).toMatchObject({ outcome: 'deny', reason });
    expect(read(p, 'a/fine')).toMatchObject(allowed);
    expect(calls).toContain('/real/a/boom');
  });

  it('checks the resolved path, not the lexical one', () => {
    const resolve = (path: string) => (path === '/srv/pub/link' ? '/srv/secret/file' : path);
    const p = build({ root: '/srv', resolve, ...fs(['./pub/*']) });
    expect(read(p, 'pub/link')).toMatchObject(unlisted);
    expect(read(p, 'pub/other')).toMatchObject(allowed);
  });
});
