// Reading the canonical paths pathgate checked (request.pathgate in Fastify,
// req.pathgate in Express): the handlers use these, never the raw strings.
import type { PathgateInfo } from '@pathgate/core';
import { FileApiError } from './files.js';

/**
 * The one checked path for `source.key`. Fails closed when pathgate did not
 * run (a 500, never an unchecked path); a repeated value (`?dir=a&dir=b`,
 * `{"from": ["a", "b"]}`) was checked element by element, but this API
 * takes one path at a time.
 */
export function checkedPath(
  info: PathgateInfo | null | undefined,
  source: 'params' | 'query' | 'body',
  key: string,
): string {
  const value = info?.[source][key];
  if (value === undefined) throw new Error(`pathgate did not check ${source}.${key}`);
  if (typeof value !== 'string') throw new FileApiError(400, 'one path at a time');
  return value;
}
