import type { IncomingHttpHeaders } from 'node:http';
import { type PathSpec, type RequestValues, recordView, UNREADABLE_PART } from '@pathgate/core';
import type { Request } from 'express';

const hasOwn = Object.prototype.hasOwnProperty;

/** What a route's guard reads a request's parts from. */
export type ValuesReader = (req: Request) => RequestValues;

/** The request itself: the guard reads only the parts its specs name, by name. */
const theRequest: ValuesReader = (req) => req;

/** The two names Express's `req.get()` reads as one header: `referrer || referer`, for either. */
const REFERER = ['referer', 'referrer'];

const namesReferer = (spec: object): boolean => {
  const name = hasOwn.call(spec, 'headers') ? (spec as { headers: unknown }).headers : undefined;
  return typeof name === 'string' && REFERER.includes(name.toLowerCase());
};

/**
 * The headers with `referer` and `referrer` both holding every value the
 * request sent under either name (one value, or both when they differ):
 * `req.get('referer')` answers a Referrer header, so a check of the
 * Referer header alone would let the handler read a path never checked.
 * An empty value is no path, and `req.get()` reads past it: kept in the
 * list, it denied (missing-path) the other name's allowed value.
 */
function refererHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const sent = [headers.referrer, headers.referer].filter(
    (value) => value !== undefined && value !== '',
  );
  const values = [...new Set(sent)];
  if (values.length === 0) return headers;
  const value = values.length === 1 ? values[0] : (values as string[]);
  return { ...headers, referer: value as string, referrer: value };
}

/**
 * A part read by a getter, where a throw is a deny of its specs, as a
 * throwing value read is, not an error for a 500: Express 5's `req.query`
 * parses the URL on each read (a query parser decoding `%ZZ` with
 * decodeURIComponent throws), and a lazy body parser's `req.body` may too.
 * A parser's container (`URLSearchParams`, `Map`) is read as its record
 * view, so that every spec, optional ones too, checks what the handler's
 * `.get()` reads.
 */
function readPart(req: Request, part: 'query' | 'body'): unknown {
  try {
    return recordView(req[part]);
  } catch {
    return UNREADABLE_PART;
  }
}

/**
 * Body specs without query ones: the request itself, unless a parser made
 * the body a container. A body whose read throws leaves the request as it
 * is too: the guard's own read of it throws, and denies.
 */
const bodyValues: ValuesReader = (req) => {
  let body: unknown;
  try {
    body = req.body;
  } catch {
    return req;
  }
  const view = recordView(body);
  return view === body ? req : { params: req.params, body: view, headers: req.headers };
};

/**
 * Works out once, when a route is built, what its guard reads the request
 * from. Usually the request itself, as in the Fastify adapter (its guard
 * joins a named wildcard's segments, so `req.params` needs no copy; with
 * body specs, unless the body is a container). With a query spec, an object
 * of the parts the specs name: Express 5's `req.query` getter parses the
 * URL on every read, and this reads it once for all. With a Referer (or
 * Referrer) spec, the headers as `req.get()` reads them.
 */
export function valuesReader(paths: readonly PathSpec[]): ValuesReader {
  const specs = paths as readonly object[];
  const declares = (source: string) => specs.some((spec) => hasOwn.call(spec, source));
  const query = declares('query');
  const body = declares('body');
  const referer = specs.some(namesReferer);
  if (!query && !referer) return body ? bodyValues : theRequest;
  const headers = declares('headers');
  return (req) => ({
    params: req.params,
    query: query ? readPart(req, 'query') : undefined,
    body: body ? readPart(req, 'body') : undefined,
    headers: referer ? refererHeaders(req.headers) : headers ? req.headers : undefined,
  });
}
