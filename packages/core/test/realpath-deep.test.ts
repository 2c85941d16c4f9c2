import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { compileRouteGuard, PermissionPolicy } from '../src/index.js';
import { resolveSymlinks } from '../src/realpath.js';
import { foldersWalked } from './folders-walked.js';
import { runGuard } from './guard-run.js';

// resolveSymlinks on deep paths. Each lstat looks its whole path up from `/`,
// so walking N folders one lstat each costs the square of N (2,000 folders:
// 0.23 s a check). Where no link is among the folders above the last name,
// one open of the last folder and its /proc/self/fd name stand for the walk.
// Otherwise, deep down, the walk holds a folder open every ANCHOR_EVERY
// folders and looks names up from it. The lstat calls show which way a path
// went; the answers must be the kernel's either way.

/** The paths lstat-ed, in order. */
const lstated: string[] = [];
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof fs>();
  const lstatSync = ((p: fs.PathLike, options?: fs.StatSyncOptions) => {
    lstated.push(String(p));
    return real.lstatSync(p, options);
  }) as typeof fs.lstatSync;
  return { ...real, lstatSync };
});

const DEPTH = 300;
/** The most folders one lookup may walk: ANCHOR_EVERY (32), the name included. */
const MOST_WALKED = 32;
let base = '';
/** `count` folders named `a`, as a relative path. */
const folders = (count: number) => Array.from({ length: count }, () => 'a').join('/');
const deep = folders(DEPTH);
const half = folders(DEPTH / 2);

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pathgate-deep-')));
  fs.mkdirSync(`${base}/real/${deep}`, { recursive: true });
  fs.writeFileSync(`${base}/real/${deep}/f`, 'x');
  fs.symlinkSync('real', `${base}/alias`);
  // Halfway down another tree, a link to the first one's middle folder.
  fs.mkdirSync(`${base}/linked/${half}`, { recursive: true });
  fs.symlinkSync(`${base}/real/${half}`, `${base}/linked/${half}/in`);
  // A FIFO where a folder could be.
  fs.mkdirSync(`${base}/fifo/a`, { recursive: true });
  execFileSync('mkfifo', [`${base}/fifo/a/pipe`]);
});

afterAll(() => rm(base, { recursive: true, force: true }));

/** resolveSymlinks on `path`, and the lstat calls it made. */
function resolvedWith(path: string): { resolved: string; lstats: number } {
  lstated.length = 0;
  const resolved = resolveSymlinks(path);
  return { resolved, lstats: lstated.length };
}

describe('resolveSymlinks on a path hundreds of folders deep', () => {
  it('looks up only the last name when the folders above it are real folders', () => {
    const file = `${base}/real/${deep}/f`;
    expect(resolvedWith(file)).toEqual({ resolved: fs.realpathSync.native(file), lstats: 1 });
    const missing = `${base}/real/${deep}/new/x`;
    expect(resolvedWith(missing).resolved).toBe(missing);
  });

  it('walks step by step, as the kernel does, when a link is among the folders', () => {
    const through = `${base}/linked/${half}/in/${half}/f`;
    const { resolved, lstats } = resolvedWith(through);
    expect(resolved).toBe(fs.realpathSync.native(through));
    expect(lstats).toBeGreaterThan(DEPTH);
  });

  it('walks step by step below a folder it cannot open as one (a file, a missing name)', () => {
    // The walk appends what lies below a non-folder or a missing name, as before.
    for (const below of [`${base}/real/${deep}/f/x/y`, `${base}/none/a/b`]) {
      expect(resolvedWith(below).resolved).toBe(below);
    }
  });

  it('never opens a FIFO where a folder could be (O_DIRECTORY), so it never blocks on one', () => {
    expect(fs.lstatSync(`${base}/fifo/a/pipe`).isFIFO()).toBe(true);
    const below = `${base}/fifo/a/pipe/x`;
    expect(resolvedWith(below).resolved).toBe(below);
  });

  it('looks each name up from a folder at most 32 folders above it, however deep', () => {
    // From `/` each time, a walk 300 folders deep would look 300 folders up per name.
    const through = `${base}/linked/${half}/in/${half}/f`;
    expect(resolvedWith(through).resolved).toBe(fs.realpathSync.native(through));
    expect(Math.max(...lstated.map(foldersWalked))).toBeLessThanOrEqual(MOST_WALKED);
    // The route guard's bounded walk, through the link the root was given by.
    const policy = new PermissionPolicy({
      root: `${base}/alias`,
      permissions: { fs: ['./**'] },
      resolve: resolveSymlinks,
    });
    const guard = compileRouteGuard(policy, { mode: 'read', paths: [{ body: 'p' }] }, 'POST /x');
    lstated.length = 0;
    const { result, info } = runGuard(guard, { body: { p: `${deep}/f` } });
    expect({ ok: result.ok, path: info.body.p }).toEqual({
      ok: true,
      path: `${base}/real/${deep}/f`,
    });
    expect(lstated.length).toBeGreaterThan(DEPTH);
    expect(Math.max(...lstated.map(foldersWalked))).toBeLessThanOrEqual(MOST_WALKED);
  });
});

describe('resolveSymlinks where a link target makes the path longer than PATH_MAX', () => {
  it('throws ENAMETOOLONG, as the kernel does, though the folder it looks from is held open', () => {
    // 40 folders of 98 letters: a path near 4,000 bytes, deep enough to be held open.
    const long = `${base}/long/${Array.from({ length: 40 }, () => 'l'.repeat(98)).join('/')}`;
    fs.mkdirSync(long, { recursive: true });
    const [x, y] = ['x'.repeat(60), 'y'.repeat(60)];
    // Relative to `long`: the kernel refuses the whole path from `/`.
    execFileSync('mkdir', ['-p', `${x}/${y}`], { cwd: long });
    fs.symlinkSync(long, `${base}/to-long`);
    try {
      const value = `${base}/to-long/${x}/${y}`;
      expect(Buffer.byteLength(`${long}/${x}/${y}`)).toBeGreaterThanOrEqual(4096);
      expect(() => fs.realpathSync.native(value)).toThrow(
        expect.objectContaining({ code: 'ENAMETOOLONG' }),
      );
      expect(() => resolveSymlinks(value)).toThrow(
        expect.objectContaining({ code: 'ENAMETOOLONG' }),
      );
      // One name fewer fits, and is the kernel's answer.
      expect(resolveSymlinks(`${base}/to-long/${x}`)).toBe(
        fs.realpathSync.native(`${base}/to-long/${x}`),
      );
    } finally {
      // fs.rm would call the kernel with the whole path, too long for it.
      execFileSync('rm', ['-rf', x], { cwd: long });
    }
  });
});
