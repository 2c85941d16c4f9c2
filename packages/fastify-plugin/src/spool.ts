import { rm } from 'node:fs/promises';
import type { FastifyRequest } from 'fastify';
import { log } from './log.js';

/** What @fastify/multipart's `saveRequestFiles()` leaves on a request (absent where it is not registered). */
interface Spooling {
  tmpUploads?: unknown;
}

/**
 * Removes the files `saveRequestFiles()` spooled for this request; undefined
 * when there are none. multipart removes them in its `onResponse` hook, after
 * the answer: a deny removes them first, so a client that looks right after
 * it finds none. The list is taken at once, so that hook, which may run
 * meanwhile, does not remove (and log failing) them a second time.
 */
export function removeSpooled(request: FastifyRequest): Promise<void> | undefined {
  const spooling = request as Spooling;
  const { tmpUploads } = spooling;
  if (!Array.isArray(tmpUploads) || tmpUploads.length === 0) return undefined;
  spooling.tmpUploads = [];
  const removals = tmpUploads.map((file) =>
    rm(String(file), { force: true }).catch((error: unknown) => {
      log(request, 'error', { err: error }, 'pathgate: could not remove a spooled file');
    }),
  );
  return Promise.all(removals).then(() => undefined);
}
