import type { PathSpec, RequestValues } from '@pathgate/core';
import type { Request } from 'express';
import { readKey } from './keyed-read.js';

const hasOwn = Object.prototype.hasOwnProperty;

/** What a route's guard reads a request's parts from. */
export type ValuesReader = (req: Request) => RequestValues;

/**
 * Works out once, when a route is built, which request parts its guard
 * reads, and returns the reader of those parts: an object of the parts the
 * specs name, each read once. `req.params` and `req.body` are own
 * properties, read by key (keyed-read.ts says why); `req.query` (Express 5's
 * getter parses the URL on every read) and `req.headers` live on the
 * prototype, read by name.
 */
export function valuesReader(paths: readonly PathSpec[]): ValuesReader {
  const specs = paths as readonly object[];
  const declares = (source: string) => specs.some((spec) => hasOwn.call(spec, source));
  const params = declares('params');
  const query = declares('query');
  const body = declares('body');
  const headers = declares('headers');
  return (req) => ({
    params: params ? readKey(req, 'params') : undefined,
    query: query ? req.query : undefined,
    body: body ? readKey(req, 'body') : undefined,
    headers: headers ? req.headers : undefined,
  });
}
