import { expect } from 'vitest';

// Shared by the adapters' tests: a rejection nobody handles ends a real
// process (Node's default), so an app function pathgate calls must never
// leave one, whatever it throws or rejects with.

/** Runs `run`, then fails if a promise rejection went unhandled meanwhile. */
export async function withoutUnhandled<T>(run: () => Promise<T>): Promise<T> {
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', record);
  try {
    const result = await run();
    // Node reports an unhandled rejection once the microtasks ran: a few turns are ample.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(unhandled).toEqual([]);
    return result;
  } finally {
    process.off('unhandledRejection', record);
  }
}
