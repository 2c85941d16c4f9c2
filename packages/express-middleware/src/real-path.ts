import { type FileHandle, readlink, realpath } from 'node:fs/promises';
import { ifMissing } from './file-identity.js';

// Where an open file really is, read back from the kernel, against where the
// storage checked it: a folder on the way swapped for a link between the walk
// and the open is followed by open() (Node has no openat2(RESOLVE_BENEATH)),
// and only seen afterwards.

/** The real path a checked path under the root must have once opened. */
export type RealPathOf = (path: string) => Buffer;

const SLASH = Buffer.from('/');

/**
 * Resolves the root's real path, at each store: the policy's root is
 * canonical text, not necessarily a real path, and a link on the way to it
 * may be retargeted while the server runs (`current -> releases/N`). A root
 * that cannot be resolved stores nothing. Gives a checked path's real path:
 * the root's joined with the path's part under it (the root's own, for the
 * root). Bytes, not text: a name that is not UTF-8 must not decode into a
 * match.
 */
export function realPathsUnder(root: string): () => Promise<RealPathOf> {
  return async () => {
    const base = await realpath(root, { encoding: 'buffer' });
    const joint = base.equals(SLASH) ? [] : [SLASH];
    return (path) => {
      const under = path.slice(root.length).replace(/^\//, '');
      return under === '' ? base : Buffer.concat([base, ...joint, Buffer.from(under)]);
    };
  };
}

/**
 * Whether a real path still resolves to itself, every link followed (one
 * gone rejects). Checked before a removal by name, which a swap after it
 * still redirects: the race the README states.
 */
export const inPlace = (real: Buffer): Promise<boolean> =>
  realpath(real, { encoding: 'buffer' }).then((now) => now.equals(real));

/** The real path of the folder above `real` (`/` above a folder at the top). */
export function parentOf(real: Buffer): Buffer {
  const cut = real.lastIndexOf(SLASH);
  return cut > 0 ? real.subarray(0, cut) : SLASH;
}

/**
 * Where the file open on `handle` is (/proc/self/fd: every link resolved);
 * `undefined` where /proc cannot be read (ENOENT: none, as on macOS).
 */
export function openedAt(handle: FileHandle): Promise<Buffer | undefined> {
  return readlink(`/proc/self/fd/${handle.fd}`, { encoding: 'buffer' }).catch(ifMissing);
}
