// Request targets no client sends: a fragment, which browsers and fetch keep to
// themselves, and `*` on another method than OPTIONS. Fastify kept a `#…` in
// the query value, Express cut it off, and Fastify served `GET *` the page:
// both examples refuse them instead, before any route. Likewise an absolute
// form (`http://host/path`, what a client sends a proxy) that Fastify's router
// refuses, which Express routed by its path: only http or https, with a host
// the URL parser reads.
import { FileApiError } from './files.js';

/** `http://` or `https://`, any case, then a non-empty authority. */
const ROUTABLE_ABSOLUTE = /^https?:\/\/[^/?]/i;

/** A target that is neither origin form (`/…`) nor an absolute form Fastify routes. */
function unroutable(target: string): boolean {
  if (target.startsWith('/') || target.startsWith('*')) return false;
  return !ROUTABLE_ABSOLUTE.test(target) || !URL.canParse(target);
}

/** A 400 for a raw request target that has a fragment, is `*…` (OPTIONS `*` aside), or is an absolute form Fastify does not route. */
export function badTarget(
  method: string | undefined,
  url: string | undefined,
): FileApiError | undefined {
  const target = url ?? '';
  const asterisk = target.startsWith('*') && !(method === 'OPTIONS' && target === '*');
  const bad = asterisk || target.includes('#') || unroutable(target);
  return bad ? new FileApiError(400, 'bad request') : undefined;
}
