import type * as fsPromises from 'node:fs/promises';

/**
 * The path a name through a descriptor open on a folder
 * (`/proc/self/fd/<fd>/<name>`) stands for: the name where that folder is
 * now. Any other path as given. `fs`: the real module, from inside a mock.
 */
export async function namedThrough(fs: typeof fsPromises, path: unknown): Promise<string> {
  const [, fd, rest] = /^(\/proc\/self\/fd\/\d+)(\/.*)$/.exec(String(path)) ?? [];
  return fd === undefined ? String(path) : `${await fs.readlink(fd)}${rest}`;
}
