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

describe('a container inside a part, on a multi-step selector', () => {
  // A decoder that makes maps into `Map`s (CBOR, some MessagePack setups)
  // nests them: the handler's `body.meta.get('p')` reads what the guard checks.
  const policy = new PermissionPolicy({ root: '/srv/root', permissions: { fs: ['docs/**'] } });
  const check = (selector: readonly (string | number)[], optional: boolean, body: unknown) => {
    const declaration = { mode: 'read', paths: [{ body: selector, optional }] };
    const guard = compileRouteGuard(policy, declaration as RouteGuardOptions, 'POST /b');
    const info = guard.newInfo();
    const result = guard.checkRequest({ body }, info);
    return result.ok ? info.body : result.denial.reason;
  };
  const climbing = '../../etc/passwd';

  it.each([true, false])('a nested Map is read by its keys (optional: %s)', (optional) => {
    const body = { meta: new Map([['p', climbing]]) };
    expect(check(['meta', 'p'], optional, body)).toBe('path-not-in-allowlist');
    const allowed = { meta: new Map([['p', 'docs/a']]) };
    expect(check(['meta', 'p'], optional, allowed)).toEqual({ 'meta.p': '/srv/root/docs/a' });
  });

  it('Maps in a list, a URLSearchParams in a Map', () => {
    const listed = { files: [new Map([['p', 'docs/a']]), new Map([['p', climbing]])] };
    expect(check(['files', 0, 'p'], true, listed)).toEqual({ 'files.0.p': '/srv/root/docs/a' });
    expect(check(['files', 1, 'p'], true, listed)).toBe('path-not-in-allowlist');
    const search = new Map([['q', new URLSearchParams(`p=docs/a&p=${climbing}`)]]);
    expect(check(['q', 'p'], true, search)).toBe('path-not-in-allowlist');
  });

  it('a nested container that cannot be read denies an optional spec', () => {
    const body = { meta: new Proxy(new Map([['p', 'docs/a']]), {}) };
    expect(check(['meta', 'p'], true, body)).toBe('not-a-string');
  });

  it('absent in the nested Map: missing, skipped when optional', () => {
    const body = { meta: new Map([['x', 'docs/a']]) };
    expect(check(['meta', 'p'], true, body)).toEqual({});
    expect(check(['meta', 'p'], false, body)).toBe('missing-path');
  });
});
