import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CanonicalizeOptions,
  canonicalize,
  escapes,
  inside,
  isInside,
  type Selector,
} from '../src/index.js';
import { anyValue } from './arbitraries.js';

// isInside, inside and escapes as DESIGN.md defines them: containment, own-property selection,
// element-wise arrays, and build-time TypeErrors.

/** An array whose element at `index` is a hole (never assigned), not `undefined`. */
const withHole = (items: readonly unknown[], index: number): unknown[] => {
  const out: unknown[] = new Array(items.length);
  items.forEach((item, i) => {
    if (i !== index) out[i] = item;
  });
  return out;
};

const linkToEtc: CanonicalizeOptions = {
  resolve: (path) => path.replace(/^\/srv\/link(?=\/|$)/, '/etc'),
};
const throwing: CanonicalizeOptions = {
  resolve: () => {
    throw new Error('resolver failure');
  },
};

describe('isInside', () => {
  type Row = readonly [
    value: unknown,
    root: unknown,
    expected: boolean,
    options?: CanonicalizeOptions,
  ];
  const table: readonly Row[] = [
    // Equal and below.
    ['/srv', '/srv', true],
    ['/srv/', '/srv', true],
    ['/srv/a', '/srv', true],
    ['/srv/a/b/c', '/srv', true],
    ['', '/srv', true],
    ['.', '/srv', true],
    ['a/..', '/srv', true],
    // Boundary pairs: a shared string prefix is not containment.
    ['/srv2', '/srv', false],
    ['/srv2/a', '/srv', false],
    ['/srv-a', '/srv', false],
    ['/sr', '/srv', false],
    ['/srv/uploads2', '/srv/uploads', false],
    ['/srv/uploads/2', '/srv/uploads', true],
    ['/r/a/bc', '/r/a/b', false],
    ['/r/a/b/c', '/r/a/b', true],
    ['/r/a', '/r/a/b', false],
    ['/', '/srv', false],
    ['/SRV/a', '/srv', false],
    // Relative values and '..'.
    ['..', '/srv', false],
    ['a/../..', '/srv', false],
    ['../srv/x', '/srv', true],
    ['../srv2/x', '/srv', false],
    ['/srv/../srv/a', '/srv', true],
    ['/srv/a/../../srv2', '/srv', false],
    // The root '/' holds everything.
    ['/anything', '/', true],
    ['..', '/', true],
    ['/', '/', true],
    // The root is canonicalized too.
    ['/srv/a', '/srv/', true],
    ['/srv/a', '//srv/./', true],
    ['/srv/a', '/srv/b/..', true],
    ['/srv/b/a', '/srv/b/..', true],
    ['/cafe\u0301/x', '/caf\u00e9', true],
    ['/caf\u00e9/x', '/cafe\u0301', true],
    ['/cafe/x', '/caf\u00e9', false],
    // Literal characters.
    ['%2e%2e/%2e%2e/etc', '/srv', true],
    ['..\\..\\etc', '/srv', true],
    ['/srv/[a]/x', '/srv/[a]', true],
    ['/srv/a/x', '/srv/[a]', false],
    ['/srv/ab', '/srv/*', false],
    // Any failure is false.
    [42, '/srv', false],
    [null, '/', false],
    [['/srv/a'], '/srv', false],
    ['a\0', '/srv', false],
    ['\uD800', '/', false],
    ['/srv/a', 'srv', false],
    ['/srv/a', '', false],
    ['/a', 42, false],
    ['/a', '/\0', false],
    ['/a', '/\uDC00', false],
    // With a resolver.
    ['link/passwd', '/srv', false, linkToEtc],
    ['linked/passwd', '/srv', true, linkToEtc],
    ['a', '/srv', false, throwing],
  ];

  it.each(table)('isInside(%j, %j) → %j', (value, root, expected, options) => {
    expect(isInside(value, root, options as CanonicalizeOptions | undefined)).toBe(expected);
  });
});

describe('inside and escapes: selection', () => {
  const ROOT = '/srv/uploads';
  type Row = readonly [
    name: string,
    selector: Selector,
    args: unknown,
    expected: { inside: boolean; escapes: boolean },
  ];
  const IN = { inside: true, escapes: false };
  const OUT = { inside: false, escapes: true };
  const MISSING = { inside: false, escapes: false };

  const table: readonly Row[] = [
    // A present string value.
    ['relative name', 'path', { path: 'a.png' }, IN],
    ['equal to the root', 'path', { path: '/srv/uploads' }, IN],
    ['root with trailing slash', 'path', { path: '/srv/uploads/' }, IN],
    ['empty string is the root', 'path', { path: '' }, IN],
    ['sibling with a shared prefix', 'path', { path: '/srv/uploads2/a' }, OUT],
    ['relative to the sibling', 'path', { path: '../uploads2/a' }, OUT],
    ['out and back in', 'path', { path: '../uploads/a' }, IN],
    ['traversal', 'path', { path: '../../etc/passwd' }, OUT],
    ['absolute outside', 'path', { path: '/etc/passwd' }, OUT],
    ['NUL', 'path', { path: 'a\0b' }, OUT],
    ['lone surrogate', 'path', { path: '\uD800' }, OUT],
    ['string selector equals one-key list', ['path'], { path: '../x' }, OUT],

    // Present non-string values fail to canonicalize: escapes, never inside.
    ['null value', 'path', { path: null }, OUT],
    ['number value', 'path', { path: 42 }, OUT],
    ['boolean value', 'path', { path: true }, OUT],
    ['object value', 'path', { path: {} }, OUT],
    ['object with toString', 'path', { path: { toString: () => 'a' } }, OUT],
    ['boxed String', 'path', { path: new String('a') }, OUT],

    // Missing: absent key, undefined, null/undefined args.
    ['key holds undefined', 'path', { path: undefined }, MISSING],
    ['empty object', 'path', {}, MISSING],
    ['other key', 'path', { other: '../x' }, MISSING],
    ['keys are case-sensitive', 'path', { Path: '../x' }, MISSING],
    ['args null', 'path', null, MISSING],
    ['args undefined', 'path', undefined, MISSING],
    ['args null, index selector', [0], null, MISSING],

    // Own properties only.
    ['constructor on {}', 'constructor', {}, MISSING],
    ['toString on {}', 'toString', {}, MISSING],
    ['__proto__ on {}', '__proto__', {}, MISSING],
    ['hasOwnProperty on {}', 'hasOwnProperty', {}, MISSING],
    ['valueOf on {}', 'valueOf', {}, MISSING],
    ['inherited escaping value', 'path', Object.create({ path: '../x' }), MISSING],
    ['inherited inside value', 'path', Object.create({ path: 'a' }), MISSING],
    [
      'own __proto__ from JSON.parse, escaping',
      '__proto__',
      JSON.parse('{"__proto__": "../x"}'),
      OUT,
    ],
    ['own __proto__ from JSON.parse, inside', '__proto__', JSON.parse('{"__proto__": "a"}'), IN],
    [
      'key under an own __proto__ is not top-level',
      'path',
      JSON.parse('{"__proto__": {"path": "../x"}}'),
      MISSING,
    ],
    [
      'key list through an own __proto__',
      ['__proto__', 'path'],
      JSON.parse('{"__proto__": {"path": "../x"}}'),
      OUT,
    ],
    ['own constructor key', 'constructor', { constructor: '../x' }, OUT],
    ['null-prototype object', 'path', Object.assign(Object.create(null), { path: '../x' }), OUT],
    [
      'class instance own field',
      'path',
      new (class {
        path = '../x';
      })(),
      OUT,
    ],
    ['Map entries are not properties', 'path', new Map([['path', '../x']]), MISSING],
    ['dotted key is one key, not a path', 'a.b', { a: { b: '../x' } }, MISSING],
    ['dotted key names its own property', 'a.b', { 'a.b': '../x' }, OUT],

    // Keys meet only non-array objects.
    ['key on a string', 'path', '../x', MISSING],
    ['length on a string', 'length', 'abc', MISSING],
    ['key on a number', 'path', 42, MISSING],
    ['key on a boolean', 'path', true, MISSING],
    ['key on an array', 'path', ['../x'], MISSING],
    ['numeric key on an array', '0', ['../x'], MISSING],
    ['length on an array', 'length', ['a'], MISSING],
    ['own length key on an object', 'length', { length: '../x' }, OUT],
    ['numeric key on an object', '0', { 0: '../x' }, OUT],
    ['nested key meets null', ['a', 'b'], { a: null }, MISSING],
    ['nested key meets undefined', ['a', 'b'], { a: undefined }, MISSING],
    ['nested key meets a string', ['a', 'b'], { a: 'str' }, MISSING],
    ['nested key meets a number', ['a', 'b'], { a: 42 }, MISSING],
    ['nested key meets an array', ['a', 'b'], { a: ['../x'] }, MISSING],
    ['nested key on an object', ['a', 'b'], { a: { b: '../x' } }, OUT],
    ['string key "0" on an array', ['files', '0'], { files: ['../x'] }, MISSING],
    ['string key "0" on an object', ['files', '0'], { files: { 0: '../x' } }, OUT],

    // Indexes meet only arrays.
    ['index on an array, inside', [0], ['a'], IN],
    ['index on an array, escaping', [0], ['../x'], OUT],
    ['index picks one element', [0], ['a', '../x'], IN],
    ['index picks the other', [1], ['a', '../x'], OUT],
    ['index on an object', [0], { 0: '../x' }, MISSING],
    ['index on an array-like', ['files', 0], { files: { length: 1, 0: '../x' } }, MISSING],
    ['index on a string', ['files', 0], { files: '../x' }, MISSING],
    ['index on a typed array', ['files', 0], { files: new Uint8Array(1) }, MISSING],
    ['index in bounds', ['files', 0], { files: ['../x'] }, OUT],
    ['index past the end', ['files', 1], { files: ['../x'] }, MISSING],
    ['index on an empty array', ['files', 0], { files: [] }, MISSING],
    ['far index past the end', ['files', 5], { files: ['a', 'b', 'c'] }, MISSING],
    ['in-bounds undefined is a failing value', ['files', 0], { files: [undefined] }, OUT],
    ['in-bounds hole is a failing value', ['files', 0], { files: withHole([0, 'a'], 0) }, OUT],
    [
      'in-bounds trailing hole is a failing value',
      ['files', 1],
      { files: withHole(['a', 0], 1) },
      OUT,
    ],
    ['in-bounds null is a failing value', ['files', 0], { files: [null] }, OUT],
    ['index then key', ['files', 0, 'path'], { files: [{ path: 'a' }] }, IN],
    ['index then key, escaping', ['files', 0, 'path'], { files: [{ path: '../x' }] }, OUT],
    ['index then key meets null', ['files', 0, 'path'], { files: [null] }, MISSING],
    ['index then absent key', ['files', 0, 'path'], { files: [{}] }, MISSING],
    [
      'index then key on an object',
      ['files', 0, 'path'],
      { files: { 0: { path: '../x' } } },
      MISSING,
    ],

    // A selected array is checked element by element.
    ['array, all inside', 'path', { path: ['a', 'b'] }, IN],
    ['array, last escapes', 'path', { path: ['a', '../x'] }, OUT],
    ['array, first escapes', 'path', { path: ['../x', 'a'] }, OUT],
    ['array, boundary sibling', 'path', { path: ['/srv/uploads', '/srv/uploads2'] }, OUT],
    ['empty array', 'path', { path: [] }, MISSING],
    ['array with undefined', 'path', { path: ['a', undefined] }, OUT],
    ['array of one undefined', 'path', { path: [undefined] }, OUT],
    ['array with a hole', 'path', { path: withHole(['a', 0, 'b'], 1) }, OUT],
    ['array of holes only', 'path', { path: new Array(2) }, OUT],
    ['array with null', 'path', { path: ['a', null] }, OUT],
    ['array with a number', 'path', { path: ['a', 42] }, OUT],
    ['array with NUL', 'path', { path: ['a', 'b\0'] }, OUT],
    ['nested array is not a path', 'path', { path: ['a', ['b']] }, OUT],
    ['array of one nested inside array', 'path', { path: [['a']] }, OUT],
    ['index selects an array', ['p', 0], { p: [['a', 'b']] }, IN],
    ['index selects an escaping array', ['p', 0], { p: [['a', '../x']] }, OUT],
    ['index selects an empty array', ['p', 0], { p: [[]] }, MISSING],
  ];

  it.each(table)('%s', (_name, selector, args, expected) => {
    expect({
      inside: inside(selector, ROOT)(args),
      escapes: escapes(selector, ROOT)(args),
    }).toStrictEqual(expected);
  });

  it('applies the resolver to selected values', () => {
    expect(inside('p', '/srv', linkToEtc)({ p: 'link/passwd' })).toBe(false);
    expect(escapes('p', '/srv', linkToEtc)({ p: 'link/passwd' })).toBe(true);
    expect(inside('p', '/srv', linkToEtc)({ p: 'linked/passwd' })).toBe(true);
    expect(escapes('p', '/srv', linkToEtc)({ p: 'linked/passwd' })).toBe(false);
  });
});

describe('a resolve of null is given, not absent: it fails closed', () => {
  it('isInside is false and canonicalize reports resolve-failed', () => {
    const nullResolve = { resolve: null } as unknown as CanonicalizeOptions;
    expect(isInside('/srv/a', '/srv', nullResolve)).toBe(false);
    expect(isInside('/srv/a', '/srv')).toBe(true);
  });
});

describe('options whose resolve cannot be read fail as a throwing resolve does', () => {
  const unreadable = () =>
    ({
      get resolve(): never {
        throw new Error('options unreadable');
      },
    }) as CanonicalizeOptions;
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy as CanonicalizeOptions;
  };

  it.each([
    ['a throwing getter', unreadable],
    ['a revoked proxy', revoked],
  ])('%s: isInside is false, canonicalize reports resolve-failed', (_name, options) => {
    expect(isInside('/srv/a', '/srv', options())).toBe(false);
    expect(canonicalize('a', '/srv', options())).toStrictEqual({
      ok: false,
      reason: 'resolve-failed',
    });
  });

  it('inside and escapes refuse them at build time with a TypeError', () => {
    expect(() => inside('p', '/srv', unreadable())).toThrow(TypeError);
    expect(() => escapes('p', '/srv', revoked())).toThrow(TypeError);
  });
});

describe('an in-bounds undefined mid-selector is a failing value', () => {
  it('escapes matches it (deny), inside does not', () => {
    const selector = ['files', 0, 'path'];
    for (const files of [[undefined], withHole([{ path: '/srv/a' }], 0)]) {
      expect(escapes(selector, '/srv')({ files })).toBe(true);
      expect(inside(selector, '/srv')({ files })).toBe(false);
    }
    expect(escapes(selector, '/srv')({ files: [] })).toBe(false);
  });
});

describe('inside and escapes: build-time TypeError', () => {
  type Row = readonly [
    name: string,
    selector: unknown,
    root: unknown,
    options?: CanonicalizeOptions,
  ];
  const table: readonly Row[] = [
    ['relative root', 'path', 'relative'],
    ['empty root', 'path', ''],
    ['dot root', 'path', './srv'],
    ['root with NUL', 'path', 'a\0b'],
    ['absolute root with NUL', 'path', '/srv\0'],
    ['root with a lone surrogate', 'path', '/\uD800'],
    ['number root', 'path', 42],
    ['null root', 'path', null],
    ['undefined root', 'path', undefined],
    ['root whose resolve throws', 'path', '/srv', throwing],
    ['root whose resolve is relative', 'path', '/srv', { resolve: () => 'srv' }],
    ['empty key', '', '/srv'],
    ['empty list', [], '/srv'],
    ['negative index', ['a', -1], '/srv'],
    ['fractional index', ['a', 1.5], '/srv'],
    ['NaN index', ['a', Number.NaN], '/srv'],
    ['infinite index', [Number.POSITIVE_INFINITY], '/srv'],
    ['empty key in a list', [''], '/srv'],
    ['empty key after a valid one', ['a', ''], '/srv'],
    ['object in a list', [{}], '/srv'],
    ['null in a list', [null], '/srv'],
    ['boolean in a list', [true], '/srv'],
    ['nested list', [['a']], '/srv'],
    ['NaN selector', Number.NaN, '/srv'],
    ['number selector', 0, '/srv'],
    ['null selector', null, '/srv'],
    ['undefined selector', undefined, '/srv'],
    ['array-like selector', { 0: 'a', length: 1 }, '/srv'],
    ['a hole in a list', withHole(['a', 'path'], 0), '/srv'],
    ['a hole inside a list', withHole(['a', 'b', 'path'], 1), '/srv'],
    ['null resolve', 'path', '/srv', { resolve: null } as unknown as CanonicalizeOptions],
  ];

  it.each(table)('%s', (_name, selector, root, options) => {
    const s = selector as Selector;
    const r = root as string;
    const o = options as CanonicalizeOptions | undefined;
    expect(() => inside(s, r, o)).toThrow(TypeError);
    expect(() => escapes(s, r, o)).toThrow(TypeError);
  });

  it('accepts well-formed selectors and roots', () => {
    const good: readonly Selector[] = [
      'path',
      ' ',
      ['a'],
      [0],
      ['0'],
      ['a', 0, 'b'],
      ['__proto__'],
      ['a', 2 ** 40],
    ];
    for (const selector of good) {
      expect(typeof inside(selector, '/srv')).toBe('function');
      expect(typeof escapes(selector, '/srv/../x/./')).toBe('function');
    }
  });
});

describe('predicates: properties', () => {
  const segment = fc.constantFrom(
    'srv',
    'srv2',
    'a',
    'b',
    'bc',
    '..',
    '.',
    '',
    'e\u0301',
    '\u00e9',
    '\\',
    '%2e',
  );
  const rel = fc.array(segment, { maxLength: 6 }).map((parts) => parts.join('/'));
  const abs = rel.map((p) => `/${p}`);
  const value = fc.oneof(rel, abs, fc.string(), fc.string({ unit: 'binary', maxLength: 8 }));

  it('isInside holds exactly when the canonical path is the root or starts with root + "/"', () => {
    fc.assert(
      fc.property(value, abs, (v, root) => {
        const c = canonicalize(v, root);
        const r = canonicalize(root, '/');
        if (!r.ok) throw new Error('generated roots are absolute');
        const prefix = r.path === '/' ? '/' : `${r.path}/`;
        const expected = c.ok && (c.path === r.path || c.path.startsWith(prefix));
        expect(isInside(v, root)).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it('for a present string, exactly one of inside and escapes holds, and inside is isInside', () => {
    fc.assert(
      fc.property(value, abs, (v, root) => {
        const i = inside('p', root)({ p: v });
        const e = escapes('p', root)({ p: v });
        expect(i && e).toBe(false);
        expect(i || e).toBe(true);
        expect(i).toBe(isInside(v, root));
      }),
      { numRuns: 500 },
    );
  });

  it('a non-empty array of strings: inside = all inside, escapes = some not inside', () => {
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 4 }), abs, (vs, root) => {
        expect(inside(['p', 0], root)({ p: [vs] })).toBe(vs.every((v) => isInside(v, root)));
        expect(escapes(['p', 0], root)({ p: [vs] })).toBe(vs.some((v) => !isInside(v, root)));
      }),
      { numRuns: 300 },
    );
  });

  it('the built functions never throw, whatever the args', () => {
    const selector = fc.oneof(
      fc.constantFrom<Selector>('a', 'path', '__proto__', 'constructor', 'length', '0'),
      fc.array(
        fc.oneof(fc.constantFrom('a', 'b', '__proto__', 'toString', '0'), fc.nat({ max: 3 })),
        {
          minLength: 1,
          maxLength: 3,
        },
      ),
    );
    const args = anyValue(
      fc.constantFrom('a', 'b', 'path', '__proto__', 'constructor', 'length', '0'),
    );
    fc.assert(
      fc.property(selector, abs, args, (s, root, a) => {
        const i = inside(s, root);
        const e = escapes(s, root);
        expect(typeof i(a)).toBe('boolean');
        expect(typeof e(a)).toBe('boolean');
        expect(typeof i({ a, path: a, 0: a })).toBe('boolean');
        expect(typeof e([a, [a]])).toBe('boolean');
      }),
      { numRuns: 500 },
    );
  });

  describe('args that throw when read fail closed, never throw', () => {
    const revoked = (target: object) => {
      const { proxy, revoke } = Proxy.revocable(target, {});
      revoke();
      return proxy;
    };
    const throwingGetter = {
      get path(): string {
        throw new Error('unreadable');
      },
    };
    const throwingElement: unknown[] = ['/srv/a'];
    Object.defineProperty(throwingElement, 0, {
      get() {
        throw new Error('unreadable');
      },
    });
    const rows: readonly [name: string, selector: Selector, args: unknown][] = [
      ['a getter that throws', 'path', throwingGetter],
      ['a revoked proxy as args', 'path', revoked({})],
      ['a revoked proxy on the way', ['o', 'path'], { o: revoked({}) }],
      ['a revoked proxy under an index', ['o', 0], { o: revoked([]) }],
      ['a revoked array proxy selected', 'path', { path: revoked([]) }],
      ['an array element that throws', 'path', { path: throwingElement }],
    ];
    it.each(rows)('%s', (_name, selector, args) => {
      expect(inside(selector, '/srv')(args)).toBe(false);
      expect(escapes(selector, '/srv')(args)).toBe(true);
    });
  });

  it('a resolve on a polluted Object.prototype is ignored', () => {
    const proto = Object.prototype as { resolve?: unknown };
    proto.resolve = (path: string) => (path === '/srv' ? path : '/srv/inside');
    try {
      expect(isInside('/etc/passwd', '/srv', {})).toBe(false);
      expect(inside('p', '/srv', {})({ p: '/etc/passwd' })).toBe(false);
      expect(escapes('p', '/srv', {})({ p: '/etc/passwd' })).toBe(true);
    } finally {
      delete proto.resolve;
    }
  });
});
