import type * as fsPromises from 'node:fs/promises';

/** Folders to swap for a link on the next open below them, with the link's target. */
const armed = new Map<string, string>();
let procHidden = false;

/**
 * Arms a swap: the next open of a path below `folder` first replaces the
 * folder by a link to `target`, as another process could between pathgate's
 * check and the open. Deterministic, where a swapping loop only sometimes wins.
 */
export function swapBeforeOpen(folder: string, target: string): void {
  armed.set(folder, target);
}

/** Folders to remove (empty) before the next opens below them, with how many times. */
const removals = new Map<string, number>();

/**
 * Arms `times` removals: each of the next `times` opens below `folder` first
 * removes it, empty, as failed uploads beside this one each take back a
 * folder they share (the open then fails with ENOENT).
 */
export function removeBeforeOpen(folder: string, times: number): void {
  if (times > 0) removals.set(folder, times);
  else removals.delete(folder);
}

/** Makes /proc/self/fd unreadable (ENOENT), as on a system without /proc (macOS). */
export function hideProc(hidden: boolean): void {
  procHidden = hidden;
}

/**
 * `node:fs/promises` for `vi.mock`, with `open` running the swaps armed by
 * `swapBeforeOpen` and the removals armed by `removeBeforeOpen`, and `readlink` failing on /proc while `hideProc` is on.
 * Everything else is the real module.
 */
export async function withFolderSwap(
  importOriginal: () => Promise<typeof fsPromises>,
): Promise<typeof fsPromises> {
  const fs = await importOriginal();
  const open: typeof fs.open = async (path, flags, mode) => {
    for (const [folder, target] of armed) {
      if (!String(path).startsWith(`${folder}/`)) continue;
      armed.delete(folder);
      await fs.rm(folder, { recursive: true });
      await fs.symlink(target, folder);
    }
    for (const [folder, times] of removals) {
      if (!String(path).startsWith(`${folder}/`)) continue;
      if (times <= 1) removals.delete(folder);
      else removals.set(folder, times - 1);
      await fs.rmdir(folder);
    }
    return fs.open(path, flags, mode);
  };
  const readlink = ((path: string, options: { encoding: 'buffer' }) =>
    procHidden && path.startsWith('/proc/')
      ? Promise.reject(Object.assign(new Error('ENOENT: no /proc'), { code: 'ENOENT' }))
      : fs.readlink(path, options)) as typeof fs.readlink;
  return { ...fs, open, readlink };
}
