import type * as fsPromises from 'node:fs/promises';
import { namedThrough } from './fd-path.js';

/**
 * `node:fs/promises` for `vi.mock`, with a full disk as the kernel reports
 * it: a file opened in a folder named `disk-full` (by path or through a
 * descriptor open on the folder) is /dev/full instead, where
 * every write fails with ENOSPC, and a folder named `no-inodes` cannot be
 * made (ENOSPC: no inode left). /proc/self/fd keeps the fiction: it names
 * the file asked for, not /dev/full. Everything else is the real module.
 */
export async function withFullDisk(
  importOriginal: () => Promise<typeof fsPromises>,
): Promise<typeof fsPromises> {
  const fs = await importOriginal();
  // The path each /dev/full stands in for, by descriptor, for readlink below.
  const standIns = new Map<number, string>();
  const open: typeof fs.open = async (path, flags, mode) => {
    const named = await namedThrough(fs, path);
    if (!named.includes('/disk-full/')) return fs.open(path, flags, mode);
    const handle = await fs.open('/dev/full', 'w');
    standIns.set(handle.fd, named);
    return handle;
  };
  // /proc/self/fd names the stand-in where the file was asked for (a number
  // reused by another file since reads as that file, not /dev/full).
  const readlink = (async (path: string, options: { encoding: 'buffer' }) => {
    const real = await fs.readlink(path, options);
    const standIn = standIns.get(Number(/^\/proc\/self\/fd\/(\d+)$/.exec(path)?.[1]));
    if (standIn === undefined || String(real) !== '/dev/full') return real;
    return Buffer.isBuffer(real) ? Buffer.from(standIn) : standIn;
  }) as typeof fs.readlink;
  const mkdir = ((path, options) =>
    String(path).endsWith('/no-inodes')
      ? Promise.reject(
          Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }),
        )
      : fs.mkdir(path, options)) as typeof fs.mkdir;
  return { ...fs, open, mkdir, readlink };
}
