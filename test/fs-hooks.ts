import type * as fsPromises from 'node:fs/promises';

/** The fs calls a hook can run before. */
export type Hooked = 'stat' | 'lstat' | 'mkdir' | 'readdir';

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

/** `node:fs/promises` for `vi.mock`, with `stat`, `lstat`, `mkdir` and `readdir` running the hook armed for them. */
export async function withHooks(
  importOriginal: () => Promise<typeof fsPromises>,
): Promise<typeof fsPromises> {
  const fs = await importOriginal();
  const hook = async (call: Hooked, path: unknown) => {
    const hooked = armed.get(call);
    if (hooked === undefined || !String(path).endsWith(hooked.ending)) return;
    armed.delete(call);
    await hooked.action();
  };
  const stat = (async (path: Parameters<typeof fs.stat>[0], options?: never) => {
    await hook('stat', path);
    return fs.stat(path, options);
  }) as typeof fs.stat;
  const lstat = (async (path: Parameters<typeof fs.lstat>[0], options?: never) => {
    await hook('lstat', path);
    return fs.lstat(path, options);
  }) as typeof fs.lstat;
  const mkdir = (async (path: Parameters<typeof fs.mkdir>[0], options?: never) => {
    await hook('mkdir', path);
    return fs.mkdir(path, options);
  }) as typeof fs.mkdir;
  const readdir = (async (path: Parameters<typeof fs.readdir>[0], options?: never) => {
    await hook('readdir', path);
    return fs.readdir(path, options);
  }) as typeof fs.readdir;
  return { ...fs, stat, lstat, mkdir, readdir };
}
