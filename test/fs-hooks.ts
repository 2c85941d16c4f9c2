import type * as fsPromises from 'node:fs/promises';

/** The fs calls a hook can run before. */
export type Hooked = 'stat' | 'lstat' | 'mkdir' | 'readdir' | 'unlink' | 'link';

/** What a hook does before a call, and once it is done before its caller is told. */
interface Actions {
  before?: () => Promise<void>;
  after?: () => Promise<void>;
}

/** One hook per call: the path's ending it waits for, and its actions. */
const armed = new Map<Hooked, Actions & { ending: string }>();

/**
 * Arms a hook: the next `call` whose path ends with `ending` first runs
 * `action` (another client's request, answered), as if that request ran
 * right then: a request held at a known point, with no timing.
 */
export function beforeNext(call: Hooked, ending: string, action: () => Promise<void>): void {
  aroundNext(call, ending, { before: action });
}

/**
 * Arms a hook that runs `action` once the next such `call` is done, before
 * its caller is told: an answer that reaches its caller later than others.
 */
export function afterNext(call: Hooked, ending: string, action: () => Promise<void>): void {
  aroundNext(call, ending, { after: action });
}

/** Arms both: `before` the next such `call`, and `after` it is done. */
export function aroundNext(call: Hooked, ending: string, actions: Actions): void {
  armed.set(call, { ending, ...actions });
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
  /** The hook armed for `call` on `path`, taken (it runs once), if any. */
  const take = (call: Hooked, path: unknown) => {
    const next = armed.get(call);
    if (next === undefined || !String(path).endsWith(next.ending)) return undefined;
    armed.delete(call);
    return next;
  };
  /** `fs[call]`, running the hook before or after it. */
  const hooked = <K extends Hooked>(call: K) =>
    (async (path: unknown, ...rest: unknown[]) => {
      const next = take(call, path);
      await next?.before?.();
      const done = (fs[call] as (...args: unknown[]) => Promise<unknown>)(path, ...rest);
      const after = next?.after;
      if (after !== undefined) await done.then(after, after);
      return done;
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
