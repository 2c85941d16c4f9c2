// Request targets no client sends: a fragment, which browsers and fetch keep to
// themselves, and `*` on another method than OPTIONS. Fastify kept a `#…` in
// the query value, Express cut it off, and Fastify served `GET *` the page:
// both examples refuse them instead, before any route.
import { FileApiError } from './files.js';

/** A 400 for a raw request target that has a fragment or is `*…` (OPTIONS `*` aside). */
export function badTarget(
  method: string | undefined,
  url: string | undefined,
): FileApiError | undefined {
  const target = url ?? '';
  const asterisk = target.startsWith('*') && !(method === 'OPTIONS' && target === '*');
  return asterisk || target.includes('#') ? new FileApiError(400, 'bad request') : undefined;
}
