import { closeSync, openSync, readSync } from 'node:fs';

/**
 * The file's bytes, or undefined when it holds more than `cap`. One descriptor, read until
 * end of file: a pipe or FIFO (`--policy /dev/stdin`) works, and a file that never ends
 * (`/dev/zero`) stops after `cap + 1` bytes instead of filling the memory.
 */
export function readCapped(file: string, cap: number): Buffer | undefined {
  const buffer = Buffer.alloc(cap + 1);
  const fd = openSync(file, 'r');
  try {
    let length = 0;
    while (length < buffer.length) {
      // A pipe hands over what it holds: a short read is not the end, only 0 is.
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) return buffer.subarray(0, length);
      length += read;
    }
    return undefined;
  } finally {
    closeSync(fd);
  }
}
