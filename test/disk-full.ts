import type * as fsPromises from 'node:fs/promises';

/**
 * `node:fs/promises` for `vi.mock`, with a full disk as the kernel reports
 * it: a file opened in a folder named `disk-full` is /dev/full instead, where
 * every write fails with ENOSPC, and a folder named `no-inodes` cannot be
 * made (ENOSPC: no inode left). Everything else is the real module.
 */
export async function withFullDisk(
  importOriginal: () => Promise<typeof fsPromises>,
): Promise<typeof fsPromises> {
  const fs = await importOriginal();
  const open: typeof fs.open = (path, flags, mode) =>
    String(path).includes('/disk-full/') ? fs.open('/dev/full', 'w') : fs.open(path, flags, mode);
  const mkdir = ((path, options) =>
    String(path).endsWith('/no-inodes')
      ? Promise.reject(
          Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }),
        )
      : fs.mkdir(path, options)) as typeof fs.mkdir;
  return { ...fs, open, mkdir };
}
