import type * as fsPromises from 'node:fs/promises';

/** The fs calls a hook can run before. */
export type Hooked = 'stat' | 'lstat' | 'mkdir' | 'readdir' | 'unlink' | 'link';

/** One hook per call: the path's ending it waits for, and what it does first. */
const armed = new Map<Hooked, { ending: string; action: () => Promise<void> }>();

/**
 * Arms a hook: the next `call` whose path ends with `ending` first runs
 * `action` (another client's request, answered), as if that request ran
 * right then: a request held at a known point, with no timing.
 */
export function beforeNext(call: Hooked, ending: string, action: () => Promise<void>): void {
  armed.set(call, { ending, action });
}

/** Drops the hooks no call ran: none waits for the next test. */
export function disarm(): void {
  armed.clear();
}

/** `node:fs/promises` for `vi.mock`, with `stat`, `lstat`, `mkdir`, `readdir`, `unlink` and `link` (by its existing path) running the hook armed for them. */
export async function withHooks(
  importOriginal: () => Promise<typeof fsPromises>,
): Promise<typeof fsPromises> {
  const fs = await importOriginal();
  const hook = async (call: Hooked, path: unknown) => {
    const next = armed.get(call);
    if (next === undefined || !String(path).endsWith(next.ending)) return;
    armed.delete(call);
    await next.action();
  };
  /** `fs[call]`, running the hook first. */
  const hooked = <K extends Hooked>(call: K) =>
    (async (path: unknown, ...rest: unknown[]) => {
      await hook(call, path);
      return (fs[call] as (...args: unknown[]) => unknown)(path, ...rest);
    }) as unknown as (typeof fs)[K];
  return {
    ...fs,
    stat: hooked('stat'),
    lstat: hooked('lstat'),
    mkdir: hooked('mkdir'),
    readdir: hooked('readdir'),
    unlink: hooked('unlink'),
    link: hooked('link'),
  };
}
