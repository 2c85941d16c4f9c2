import { existsSync, rmSync } from 'node:fs';
import { afterEach } from 'vitest';
import { beforeDeadline } from './deadline.js';

// What a test leaves to undo: servers to close, sandboxes to remove. One that
// throws must not leave the others undone (a sandbox left in the temp dir).

export type Cleanup = () => unknown;

// A clean-up still running after this long is given up on (it goes on in
// the background), so that one hanging close leaves no sandbox behind it:
// vitest's hook timeout (10 s) would end them all.
const CLEANUP_LIMIT_MS = 5000;

/** Settles as `cleanup` does, or rejects once it has run `ms` without settling. */
const withinLimit = (cleanup: Cleanup, ms: number): Promise<unknown> =>
  beforeDeadline(Promise.resolve().then(cleanup), ms, `a clean-up still ran after ${ms} ms`);

/**
 * Runs every clean-up, in order, each even when one before it threw or hung
 * past `limitMs`; then throws what failed: the one error as it is, several as
 * an AggregateError.
 */
export async function runAll(
  cleanups: readonly Cleanup[],
  limitMs = CLEANUP_LIMIT_MS,
): Promise<void> {
  const errors: unknown[] = [];
  for (const cleanup of cleanups) {
    try {
      await withinLimit(cleanup, limitMs);
    } catch (error) {
      errors.push(error);
    }
  }
  if (errors.length === 1) throw errors[0];
  if (errors.length > 1) throw new AggregateError(errors, `${errors.length} clean-ups failed`);
}

/**
 * A list of clean-ups run after each test of the file that imports it, the
 * last registered first (a session closes before its server); returns how
 * to add one.
 */
export function cleanupsAfterEach(): (cleanup: Cleanup) => void {
  const cleanups: Cleanup[] = [];
  afterEach(() => runAll(cleanups.splice(0).reverse()));
  return (cleanup) => void cleanups.push(cleanup);
}

/**
 * Removes `root` and all below it. Node 26's `rmSync` can return without an
 * error yet leave the folder when a removal races it (@fastify/multipart or
 * multer unlinking a file after the answer): removed again, and a folder
 * still there throws, so no test leaves one in the temp dir unseen.
 */
export function removeTree(root: string): void {
  for (let tries = 0; tries < 3 && existsSync(root); tries++) {
    rmSync(root, { recursive: true, force: true });
  }
  if (existsSync(root)) throw new Error(`could not remove ${root}`);
}
