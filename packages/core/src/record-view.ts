import { setOwn } from './own-key.js';

/**
 * A request part whose every value read throws, so the guard denies each
 * of its specs as `not-a-string` (optional ones too): for a part that
 * could not be read (a container whose entries throw, a getter that
 * throws), whose values a handler may still reach.
 */
export const UNREADABLE_PART: object = new Proxy(Object.freeze({}), {
  getOwnPropertyDescriptor() {
    throw new TypeError('pathgate: reading the request part threw');
  },
});

/** Each key once, a repeated one as the list of its values, in order. */
function searchRecord(search: URLSearchParams): Record<string, string | string[]> {
  const record: Record<string, string | string[]> = {};
  for (const [key, value] of search) {
    const seen = Object.hasOwn(record, key) ? record[key] : undefined;
    if (seen === undefined) setOwn(record, key, value);
    else if (typeof seen === 'string') setOwn(record, key, [seen, value]);
    else seen.push(value);
  }
  return record;
}

function mapRecord(map: Map<unknown, unknown>): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (const [key, value] of map) if (typeof key === 'string') setOwn(record, key, value);
  return record;
}

/**
 * A parser's container as the record selectors read (own keys only, so its
 * values would be missing, and an optional spec would skip what the
 * handler's `.get()` reads): a `URLSearchParams` with a repeated key as the
 * list of its values, in order; a `Map` by its string keys, values as they
 * are. Anything else is returned as it is, for two `instanceof` tests.
 * Adapters pass a request's parsed query and body through it, and the route
 * guard each container a multi-step selector meets inside them; it never
 * throws (a container it cannot read gives a part whose values all fail).
 */
export function recordView(value: unknown): unknown {
  try {
    if (value instanceof URLSearchParams) return searchRecord(value);
    if (value instanceof Map) return mapRecord(value);
  } catch {
    return UNREADABLE_PART;
  }
  return value;
}
