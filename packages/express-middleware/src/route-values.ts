import type { PathSpec, RequestValues } from '@pathgate/core';
import type { Request } from 'express';

const hasOwn = Object.prototype.hasOwnProperty;

/** What a route's guard reads a request's parts from. */
export type ValuesReader = (req: Request) => RequestValues;

/** The request itself: the guard reads only the parts its specs name, by name. */
const theRequest: ValuesReader = (req) => req;

/**
 * Works out once, when a route is built, what its guard reads the request
 * from. Usually the request itself, as in the Fastify adapter (its guard
 * joins a named wildcard's segments, so `req.params` needs no copy). With a
 * query spec, an object of the parts the specs name: Express 5's `req.query`
 * getter parses the URL on every read, and this reads it once for all.
 */
export function valuesReader(paths: readonly PathSpec[]): ValuesReader {
  const specs = paths as readonly object[];
  const declares = (source: string) => specs.some((spec) => hasOwn.call(spec, source));
  if (!declares('query')) return theRequest;
  const body = declares('body');
  const headers = declares('headers');
  return (req) => ({
    params: req.params,
    query: req.query,
    body: body ? req.body : undefined,
    headers: headers ? req.headers : undefined,
  });
}
