import type { FastifyRequest } from 'fastify';

/** What @fastify/multipart's `saveRequestFiles()` leaves on a request (absent where it is not registered). */
interface Spooling {
  tmpUploads?: unknown;
  cleanRequestFiles?: () => Promise<void>;
}

/**
 * Removes the files `saveRequestFiles()` spooled for this request; undefined
 * when there are none. multipart removes them in its `onResponse` hook, after
 * the answer: a deny removes them first, so a client that looks right after
 * it finds none. The list is emptied after, so that hook does not try (and
 * log failing) a second time.
 */
export function removeSpooled(request: FastifyRequest): Promise<void> | undefined {
  const spooling = request as Spooling;
  const { tmpUploads, cleanRequestFiles } = spooling;
  if (!Array.isArray(tmpUploads) || tmpUploads.length === 0) return undefined;
  if (typeof cleanRequestFiles !== 'function') return undefined;
  return cleanRequestFiles.call(request).then(() => {
    spooling.tmpUploads = [];
  });
}
