import type { GuardDenyReason } from '@pathgate/core';

// Shared by the adapters' parser-shape tests and the parity test: parsers
// that hand over a container, not a record, whose values the handler reads
// with `.get()` and `.getAll()`, and the rows both adapters must answer alike.

/** `a=1&a=2` as a `URLSearchParams`: `.get('a')` is the first value, `.getAll('a')` both. */
export const searchParams = (text: string): URLSearchParams => new URLSearchParams(text);

/** The same pairs in a `Map` (a repeated key keeps its last value). */
export const mapParams = (text: string): Map<string, string> => new Map(new URLSearchParams(text));

/** A container's `.get('p')` (a `Map` or a `URLSearchParams`), as the rows' handlers read it. */
export const got = (container: unknown): unknown => (container as Map<string, unknown>).get('p');

/** The content types whose body parser hands over a `Map`, a `URLSearchParams`, or `{ meta: Map }`. */
export const MAP_TYPE = 'text/x-map';
export const SEARCH_TYPE = 'text/x-search';
export const NESTED_TYPE = 'text/x-nested';
export const CONTAINER_TYPES = [MAP_TYPE, SEARCH_TYPE, NESTED_TYPE] as const;

/** A body parser's container for a content type of the rows. */
export const containerOf = (type: string | undefined, text: string): unknown => {
  if (type === MAP_TYPE) return mapParams(text);
  return type === NESTED_TYPE ? { meta: mapParams(text) } : searchParams(text);
};

/** What the handler of `/bn` reads: `body.meta.get('p')`. */
export const gotNested = (body: unknown): unknown => got((body as { meta: unknown }).meta);

/** What a row's request gets: the handler's `.get('p')` and the checked path(s), or a deny. */
export type ContainerWant =
  | { raw: unknown; checked?: string | string[] }
  | { reason: GuardDenyReason; label: string };

type QueryRow = readonly [string, string, (text: string) => unknown, ContainerWant];
type BodyRow = readonly [string, string, string, string, ContainerWant];

/**
 * Requests to `/qg` (`{ query: 'p' }`) and `/qgo` (the same, optional), in
 * an app whose query parser is the row's, under a policy of `docs/**` in
 * `root`. Before the adapters read containers as records, a required spec
 * found nothing (missing-path), and an optional one was skipped: the
 * handler's `.get('p')` read `../../etc/passwd` unchecked.
 */
export function containerQueryRows(root: string): readonly QueryRow[] {
  const P = 'query.p';
  const out = { reason: 'path-not-in-allowlist', label: P } as const;
  const one = { raw: 'docs/a', checked: `${root}/docs/a` };
  const passwd = '..%2F..%2Fetc%2Fpasswd';
  return [
    ['URLSearchParams', '/qg?p=docs/a', searchParams, one],
    [
      'URLSearchParams: a repeated key is its list, in order',
      '/qg?p=docs/a&p=docs/b',
      searchParams,
      { raw: 'docs/a', checked: [`${root}/docs/a`, `${root}/docs/b`] },
    ],
    [
      'URLSearchParams: a value after the first climbs out',
      `/qg?p=docs/a&p=${passwd}`,
      searchParams,
      out,
    ],
    ['URLSearchParams, optional: climbing out', `/qgo?p=${passwd}`, searchParams, out],
    ['URLSearchParams, optional: absent', '/qgo?x=1', searchParams, { raw: null }],
    ['URLSearchParams: absent', '/qg?x=1', searchParams, { reason: 'missing-path', label: P }],
    ['URLSearchParams: empty', '/qg?p=', searchParams, { reason: 'missing-path', label: P }],
    [
      'URLSearchParams: __proto__ is a key',
      '/qg',
      () => searchParams('p=docs/a&__proto__=..%2Fx'),
      one,
    ],
    ['a Map', '/qg?p=docs/a', mapParams, one],
    ['a Map, optional: climbing out', `/qgo?p=${passwd}`, mapParams, out],
    [
      'a Map: a value as it is, a list checked element by element',
      '/qg',
      () => new Map([['p', ['docs/a', '../x']]]),
      out,
    ],
    [
      'a Map: a value that is no string',
      '/qgo',
      () => new Map([['p', 42]]),
      { reason: 'not-a-string', label: P },
    ],
    [
      'a Map: a key that is no string is ignored',
      '/qg',
      () => new Map<unknown, string>([[{ toString: () => 'p' }, '../x']]),
      { reason: 'missing-path', label: P },
    ],
    [
      'a Map subclass',
      '/qg',
      () => new (class extends Map<string, string> {})([['p', 'docs/a']]),
      one,
    ],
    // Map.prototype's methods refuse a proxy: its entries cannot be read.
    [
      'a proxy of a Map: optional, denied',
      '/qgo',
      () => new Proxy(new Map([['p', 'docs/a']]), {}),
      { reason: 'not-a-string', label: P },
    ],
  ];
}

/** POSTs to `/bg` (`{ body: 'p' }`), `/bgo` (optional) and `/bn`, a body parser making the row's container. */
export function containerBodyRows(root: string): readonly BodyRow[] {
  const out = { reason: 'path-not-in-allowlist', label: 'body.p' } as const;
  return [
    [
      'URLSearchParams',
      '/bg',
      SEARCH_TYPE,
      'p=docs/a&p=docs/b',
      { raw: 'docs/a', checked: [`${root}/docs/a`, `${root}/docs/b`] },
    ],
    ['URLSearchParams, optional: climbing out', '/bgo', SEARCH_TYPE, 'p=../../etc/passwd', out],
    ['URLSearchParams, optional: absent', '/bgo', SEARCH_TYPE, 'x=1', { raw: null }],
    [
      'a Map: a repeated key kept its last value',
      '/bg',
      MAP_TYPE,
      'p=../x&p=docs/b',
      { raw: 'docs/b', checked: `${root}/docs/b` },
    ],
    ['a Map, optional: climbing out', '/bgo', MAP_TYPE, 'p=../../etc/passwd', out],
    // `/bn`: `{ body: ['meta', 'p'], optional: true }`, a body of `{ meta: Map }`.
    [
      'a Map inside the body, optional: climbing out',
      '/bn',
      NESTED_TYPE,
      'p=../../etc/passwd',
      { reason: 'path-not-in-allowlist', label: 'body.meta.p' },
    ],
    [
      'a Map inside the body, optional',
      '/bn',
      NESTED_TYPE,
      'p=docs/a',
      { raw: 'docs/a', checked: `${root}/docs/a` },
    ],
  ];
}
