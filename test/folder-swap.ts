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

/** Makes /proc/self/fd unreadable (ENOENT), as on a system without /proc (macOS). */
export function hideProc(hidden: boolean): void {
  procHidden = hidden;
}

/**
 * `node:fs/promises` for `vi.mock`, with `open` running the swaps armed by
 * `swapBeforeOpen` and `readlink` failing on /proc while `hideProc` is on.
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
    return fs.open(path, flags, mode);
  };
  const readlink = ((path: string, options: { encoding: 'buffer' }) =>
    procHidden && path.startsWith('/proc/')
      ? Promise.reject(Object.assign(new Error('ENOENT: no /proc'), { code: 'ENOENT' }))
      : fs.readlink(path, options)) as typeof fs.readlink;
  return { ...fs, open, readlink };
}
