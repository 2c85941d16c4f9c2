import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileRouteGuard,
  PermissionPolicy,
  type RouteGuardOptions,
  recordView,
} from '../src/index.js';

// recordView: a parser's container (URLSearchParams, Map) as the record the
// selectors read, so an adapter's guard checks what a handler's `.get()`
// and `.getAll()` read; anything else as it is.

describe('a URLSearchParams', () => {
  it.each([
    ['one key', 'p=a', { p: 'a' }],
    ['a repeated key is its list, in order', 'p=b&p=a&p=c', { p: ['b', 'a', 'c'] }],
    ['keys between repeats', 'p=a&q=x&p=b', { p: ['a', 'b'], q: 'x' }],
    ['an empty value', 'p=', { p: '' }],
    ['decoded once, + a space', 'p=a%2Fb+c', { p: 'a/b c' }],
    ['nothing', '', {}],
  ])('%s: %s', (_name, text, record) => {
    expect(recordView(new URLSearchParams(text))).toEqual(record);
  });

  it('__proto__ and constructor are own keys; the prototype is untouched', () => {
    const view = recordView(new URLSearchParams('__proto__=a&__proto__=b&constructor=c')) as object;
    expect(Object.getOwnPropertyDescriptor(view, '__proto__')?.value).toEqual(['a', 'b']);
    expect(Object.getPrototypeOf(view)).toBe(Object.prototype);
    expect(Object.hasOwn(view, 'constructor')).toBe(true);
  });

  it('each key holds what getAll() answers: one value, or the list (oracle)', () => {
    const pairs = fc.array(fc.tuple(fc.constantFrom('a', 'b', '__proto__'), fc.string()));
    fc.assert(
      fc.property(pairs, (entries) => {
        const search = new URLSearchParams(entries);
        const view = recordView(search) as Record<string, string | string[]>;
        for (const key of new Set(search.keys())) {
          const held = Object.getOwnPropertyDescriptor(view, key)?.value;
          expect([held].flat()).toEqual(search.getAll(key));
        }
        expect(Object.keys(view)).toEqual([...new Set(search.keys())]);
      }),
    );
  });
});

describe('a Map', () => {
  it('its string keys, values as they are; other keys ignored', () => {
    const list = ['a', 'b'];
    const map = new Map<unknown, unknown>([
      ['p', list],
      [1, 'one'],
      [Symbol('s'), 's'],
      [{ toString: () => 'q' }, 'q'],
      ['n', 42],
    ]);
    const view = recordView(map) as Record<string, unknown>;
    expect(view).toEqual({ p: ['a', 'b'], n: 42 });
    expect(view.p).toBe(list);
  });

  it('a subclass is a Map', () => {
    expect(recordView(new (class extends Map<string, string> {})([['p', 'a']]))).toEqual({
      p: 'a',
    });
  });
});

describe('anything else is returned as it is', () => {
  const nullProto = Object.assign(Object.create(null), { p: 'a' });
  it.each([
    ['a plain object', { p: 'a' }],
    ['a null-prototype object', nullProto],
    ['an array', ['a']],
    ['a string', 'p=a'],
    ['null', null],
    ['undefined', undefined],
    ['a Set', new Set(['p'])],
    ['a FormData', new FormData()],
  ])('%s', (_name, value) => {
    expect(recordView(value)).toBe(value);
  });
});

describe('through a route guard', () => {
  const policy = new PermissionPolicy({ root: '/srv/root', permissions: { fs: ['docs/**'] } });
  const check = (optional: boolean, query: unknown) => {
    const declaration = { mode: 'read', paths: [{ query: 'p', optional }] };
    const guard = compileRouteGuard(policy, declaration as RouteGuardOptions, 'GET /q');
    const info = guard.newInfo();
    const result = guard.checkRequest({ query: recordView(query) }, info);
    return result.ok ? info.query : result.denial.reason;
  };

  it('an optional spec checks every value of a repeated key', () => {
    const search = new URLSearchParams('p=docs/a&p=../../etc/passwd');
    expect(check(true, search)).toBe('path-not-in-allowlist');
    expect(check(true, new URLSearchParams('p=docs/a&p=docs/b'))).toEqual({
      p: ['/srv/root/docs/a', '/srv/root/docs/b'],
    });
    expect(check(true, new URLSearchParams('x=1'))).toEqual({});
  });

  it('a Map whose entries cannot be read (a proxy): every spec denies, optional ones too', () => {
    const proxied = new Proxy(new Map([['p', 'docs/a']]), {});
    expect(check(true, proxied)).toBe('not-a-string');
    expect(check(false, proxied)).toBe('not-a-string');
  });

  it('a revoked proxy: denied, not thrown', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(check(true, proxy)).toBe('not-a-string');
  });
});
