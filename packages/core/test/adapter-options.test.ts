import { describe, expect, it } from 'vitest';
import { PermissionPolicy, readAdapterOptions } from '../src/index.js';

// The options both adapters take besides their own, read once here: each
// wrong one is a build-time TypeError naming it, never ignored, and a key
// holding undefined counts as absent. The adapters' option tests check the
// same through their factories; these run without a server.

const read = (options: unknown, ownKeys: readonly string[] = []) =>
  readAdapterOptions(options, ownKeys).settings;
const FS = ['docs/**'];
const policy = new PermissionPolicy({ root: '/srv', permissions: { fs: FS } });

const COUNTS = [
  ['a string', '10'],
  ['negative', -1],
  ['fractional', 1.5],
  ['not a safe integer', 2 ** 53],
  ['NaN', Number.NaN],
] as const;

describe('readAdapterOptions refuses, naming the option', () => {
  it.each<[string, unknown, string]>([
    ['options not an object', 'fs', 'pathgate: options must be an object'],
    ['options null', null, 'pathgate: options must be an object'],
    ['options an array', [FS], 'pathgate: options must be an object'],
    ['an unknown key', { fs: FS, dir: '/srv' }, 'pathgate: unknown option "dir"'],
    ['a null option', { fs: FS, onDeny: null }, 'pathgate: option onDeny must not be null'],
    [
      'a policy of another kind',
      { policy: {} },
      'pathgate: option policy must be a PermissionPolicy',
    ],
    [
      'a policy and one of its parts',
      { policy, dot: true },
      'pathgate: option dot cannot be combined with policy',
    ],
    ['no fs', {}, 'pathgate: option fs must be an array of rule strings (or give policy)'],
    // The policy's own errors, as options: a rule by its number, the others by name.
    ['a rule not a string', { fs: [42] }, 'pathgate: rule 1: must be a string, got number'],
    [
      'a relative root',
      { fs: FS, root: 'srv' },
      'pathgate: option root must canonicalize to an absolute path (relative-root)',
    ],
    [
      'onDeny not a function',
      { fs: FS, onDeny: 'log' },
      'pathgate: option onDeny must be a function',
    ],
    [
      'reportOnly not a boolean',
      { fs: FS, reportOnly: 1 },
      'pathgate: option reportOnly must be a boolean',
    ],
    // A class's method or getter, read as absent, was dropped without a word.
    [
      'an option a prototype supplies',
      Object.assign(Object.create({ onDeny() {} }), { fs: FS }),
      'pathgate: option onDeny is inherited from a prototype: give it as an own property',
    ],
    [
      'a root getter of a class',
      new (class {
        fs = FS;
        get root() {
          return '/srv';
        }
      })(),
      'pathgate: option root is inherited from a prototype: give it as an own property',
    ],
    ...COUNTS.flatMap(([what, value]) =>
      ['lingerMs', 'lingerBytes'].map((key): [string, unknown, string] => [
        `${key} ${what}`,
        { fs: FS, [key]: value },
        `pathgate: option ${key} must be a non-negative integer`,
      ]),
    ),
  ])('%s', (_name, options, message) => {
    expect(() => read(options)).toThrow(new TypeError(message));
  });

  it('lets an error that is not the policy’s own TypeError through as it is', () => {
    const fs = new Proxy([], {
      get(target, key) {
        if (key === 'length') throw new RangeError('fs unreadable');
        return Reflect.get(target, key);
      },
    });
    expect(() => read({ fs })).toThrow(new RangeError('fs unreadable'));
  });
});

describe('readAdapterOptions accepts', () => {
  const onDeny = () => {};

  it('each shared option as given, 0 for the linger limits too', () => {
    const settings = read({
      root: '/srv',
      fs: FS,
      dot: true,
      onDeny,
      reportOnly: true,
      lingerMs: 0,
      lingerBytes: 5,
    });
    expect(settings).toEqual({
      policy: expect.objectContaining({ root: '/srv', rules: FS, dot: true }),
      onDeny,
      reportOnly: true,
      linger: { lingerMs: 0, lingerBytes: 5 },
    });
    expect(Object.isFrozen(settings) && Object.isFrozen(settings.linger)).toBe(true);
  });

  it('a ready policy as it is, its parts given as undefined, and any key holding undefined', () => {
    const settings = read({ policy, root: undefined, fs: undefined, dir: undefined });
    expect(settings.policy).toBe(policy);
  });

  it('the adapter’s own keys, left to it to read', () => {
    const { read: readOwnKey } = readAdapterOptions({ fs: FS, log: onDeny }, ['log']);
    expect(readOwnKey('log')).toBe(onDeny);
    expect(() => readOwnKey('errors')).not.toThrow();
  });
});
