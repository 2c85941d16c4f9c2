import type * as nodeFs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { resolveSymlinks } from '../src/realpath.js';

// An lstat error other than a missing or too long name, which a test run as
// root cannot meet on disk (EACCES): given by the mock for names `errno-<code>`.
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const lstatSync = ((path: string, options?: nodeFs.StatSyncOptions) => {
    const code = /\/errno-([A-Z]+)$/.exec(String(path))?.[1];
    if (code !== undefined) throw Object.assign(new Error(`${code}: mocked`), { code });
    return fs.lstatSync(path, options);
  }) as typeof fs.lstatSync;
  return { ...fs, lstatSync };
});

describe('resolveSymlinks on an lstat error', () => {
  it.each(['EACCES', 'EIO', 'ELOOP'])('throws %s, never takes the name as missing', (code) => {
    let thrown: unknown;
    try {
      resolveSymlinks(`/tmp/errno-${code}/x`);
    } catch (error) {
      thrown = error;
    }
    expect((thrown as { code?: string } | undefined)?.code).toBe(code);
  });
});
