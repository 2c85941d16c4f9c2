import type * as fsPromises from 'node:fs/promises';

/**
 * `node:fs/promises` for `vi.mock`, with a full disk as the kernel reports
 * it: a file opened in a folder named `disk-full` is /dev/full instead, where
 * every write fails with ENOSPC. Everything else is the real module.
 */
export async function withFullDisk(
  importOriginal: () => Promise<typeof fsPromises>,
): Promise<typeof fsPromises> {
  const fs = await importOriginal();
  const open: typeof fs.open = (path, flags, mode) =>
    String(path).includes('/disk-full/') ? fs.open('/dev/full', 'w') : fs.open(path, flags, mode);
  return { ...fs, open };
}
