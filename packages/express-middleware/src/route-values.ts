import { type PathSpec, type RequestValues, setOwn } from '@pathgate/core';
import type { Request } from 'express';

const hasOwn = Object.prototype.hasOwnProperty;

/** Reads the parts of one request that a route's specs check. */
export type ValuesReader = (req: Request) => RequestValues;

/**
 * Express 5 gives a named wildcard (`/files/*path`) as its array of decoded
 * segments: one path, so it is joined with `/` (never a list of paths).
 * Only the declared `keys` are looked at; `req.params` itself is passed when
 * none of them is an array (no copy). `undefined` keys: every param.
 */
function joinedParams(params: unknown, keys: readonly string[] | undefined): unknown {
  if (typeof params !== 'object' || params === null) return params;
  const source = params as Record<string, unknown>;
  const names = keys ?? Object.keys(source);
  let arrays = false;
  for (let i = 0; i < names.length; i += 1) {
    if (Array.isArray(source[names[i] as string])) {
      arrays = true;
      break;
    }
  }
  if (!arrays) return source;
  const joined: Record<string, unknown> = {};
  for (let i = 0; i < names.length; i += 1) {
    const key = names[i] as string;
    if (!hasOwn.call(source, key)) continue;
    const value = source[key];
    // A named wildcard's segments, joined into one path.
    setOwn(joined, key, Array.isArray(value) ? value.join('/') : value);
  }
  return joined;
}

/**
 * The `req.params` keys the specs start from, or undefined when a selector
 * has a shape the guard would not have compiled (then every param is joined).
 * An index first (`[0, …]`) selects nothing in an object: no key needed.
 */
function paramKeys(paths: readonly object[]): readonly string[] | undefined {
  const keys: string[] = [];
  for (const spec of paths) {
    if (!hasOwn.call(spec, 'params')) continue;
    const selector = (spec as { params?: unknown }).params;
    if (selector === undefined) continue;
    const first = Array.isArray(selector) ? selector[0] : selector;
    if (typeof first === 'number') continue;
    if (typeof first !== 'string') return undefined;
    if (!keys.includes(first)) keys.push(first);
  }
  return keys;
}

/**
 * Works out once, when a route is built, which request parts its declaration
 * (already validated by `compileRouteGuard`) reads, so a request reads only
 * those: Express 5's `req.query` getter parses the URL on every read, and
 * `req.params` needs a copy only to join a wildcard. It over-approximates (a
 * source is read when any spec names it); a part it leaves out is one no
 * spec reads, so the guard never sees less than it checks.
 */
export function valuesReader(paths: readonly PathSpec[]): ValuesReader {
  const specs = paths as readonly object[];
  const declares = (source: string) => specs.some((spec) => hasOwn.call(spec, source));
  const params = declares('params');
  const query = declares('query');
  const body = declares('body');
  const headers = declares('headers');
  const keys = paramKeys(specs);
  return (req) => ({
    params: params ? joinedParams(req.params, keys) : undefined,
    query: query ? req.query : undefined,
    body: body ? req.body : undefined,
    headers: headers ? req.headers : undefined,
  });
}
