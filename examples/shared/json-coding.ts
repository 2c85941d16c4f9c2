// How both examples read a JSON body: as the UTF-8 bytes it came in. Fastify
// would parse gzip or UTF-16 bytes as UTF-8 text, Express would decode them
// first: the same request would move a file in one app only. Neither decodes.
import type { IncomingHttpHeaders } from 'node:http';
import { FileApiError } from './files.js';

/** Methods neither framework reads a body for. */
export const BODYLESS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'TRACE']);

/** A content type's media type, lower-case, without its parameters. */
export const mediaType = (type: string): string | undefined =>
  type.split(';', 1)[0]?.trim().toLowerCase();

/** The charset parameter of a content type, lower-case; `undefined` when absent or empty. */
function charset(type: string): string | undefined {
  const value = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(type)?.[1];
  return value ? value.toLowerCase() : undefined;
}

/**
 * A 415 for a JSON body sent compressed (a Content-Encoding other than
 * identity) or in a charset other than UTF-8; `undefined` for any other request.
 */
export function undecodedJson(request: {
  method?: string | undefined;
  headers: IncomingHttpHeaders;
}): FileApiError | undefined {
  const { 'content-type': type, 'content-encoding': coding } = request.headers;
  if (BODYLESS.has(request.method ?? '') || type === undefined) return undefined;
  if (mediaType(type) !== 'application/json') return undefined;
  const encoded = coding !== undefined && !['', 'identity'].includes(coding.trim().toLowerCase());
  const utf8 = [undefined, 'utf-8'].includes(charset(type));
  return encoded || !utf8 ? new FileApiError(415, 'unsupported media type') : undefined;
}
