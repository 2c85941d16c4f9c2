import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { rm } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveSymlinks, resolveWithin } from '../src/realpath.js';
import { ANCHOR_EVERY } from '../src/walked-folder.js';
import { foldersWalked } from './folders-walked.js';

// Deep down, resolveSymlinks holds a folder of its walk open (the anchor) and
// looks names up from it through /proc/self/fd (walked-folder.ts). Where that
// cannot be done (no /proc, /proc naming another folder, a folder that will
// not open), the walk must answer as the kernel does from `/`, never take a
// name for missing; and whatever happens, it must give every folder back.

/** What the mocked node:fs does differently (reset after each test). */
const trouble: {
  /** Every call on a /proc/self/fd path fails ENOENT, as without /proc. */
  procGone: boolean;
  /** /proc/self/fd/<fd> names another folder than the one opened. */
  procLies: boolean;
  /** Opening a folder fails with this code. */
  openFails: string | undefined;
} = { procGone: false, procLies: false, openFails: undefined };

/** The paths the walk asked the kernel to look up (lstat, readlink, open), in order. */
const looked: string[] = [];
/** The paths it opened, in order. */
const opened: string[] = [];

vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof fs>();
  const fail = (code: string, p: fs.PathLike) =>
    Object.assign(new Error(`${code}: mocked, '${String(p)}'`), { code, path: String(p) });
  const viaProc = (p: fs.PathLike) => String(p).startsWith('/proc/self/fd/');
  // A name `errno-<CODE>` fails lstat with that code, as a test run as root cannot meet on disk.
  const lstatSync = ((p: fs.PathLike, options?: fs.StatSyncOptions) => {
    looked.push(String(p));
    if (trouble.procGone && viaProc(p)) throw fail('ENOENT', p);
    const code = /\/errno-([A-Z]+)$/.exec(String(p))?.[1];
    if (code !== undefined) throw fail(code, p);
    return real.lstatSync(p, options);
  }) as typeof fs.lstatSync;
  const readlinkSync = ((p: fs.PathLike, options?: fs.EncodingOption) => {
    // Reading what /proc/self/fd/<fd> names looks nothing up below it.
    if (!/^\/proc\/self\/fd\/\d+$/.test(String(p))) looked.push(String(p));
    if (trouble.procGone && viaProc(p)) throw fail('ENOENT', p);
    if (trouble.procLies && /^\/proc\/self\/fd\/\d+$/.test(String(p))) return '/elsewhere';
    return real.readlinkSync(p, options);
  }) as typeof fs.readlinkSync;
  const openSync = ((p: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
    looked.push(String(p));
    opened.push(String(p));
    if (trouble.procGone && viaProc(p)) throw fail('ENOENT', p);
    if (trouble.openFails !== undefined) throw fail(trouble.openFails, p);
    return real.openSync(p, flags ?? 'r', mode);
  }) as typeof fs.openSync;
  return { ...real, lstatSync, readlinkSync, openSync };
});

afterEach(() => {
  Object.assign(trouble, { procGone: false, procLies: false, openFails: undefined });
});

let base = '';
/** `count` folders `d` below `at`. */
const down = (at: string, count: number) => `${at}${'/d'.repeat(count)}`;
/** The spine: 100 folders below `base/s`, held open three times on the way. */
let spine = '';
/** The spine through `base/L -> .`: a link first, so the walk goes folder by folder. */
let viaLink = '';

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pathgate-anchor-')));
  spine = `${base}/s`;
  fs.mkdirSync(down(spine, 100), { recursive: true });
  fs.mkdirSync(`${base}/out/x`, { recursive: true });
  fs.symlinkSync('.', `${base}/L`);
  viaLink = `${base}/L/s`;
  // Halfway down, a link out; at the bottom, one back up over two held folders.
  fs.symlinkSync(`${base}/out`, `${down(spine, 50)}/out`);
  fs.symlinkSync(`${'../'.repeat(70)}d/d`, `${down(spine, 100)}/up`);
  fs.symlinkSync('loop', `${down(spine, 100)}/loop`);
  fs.symlinkSync(Buffer.from([0x6e, 0xff]), `${down(spine, 100)}/not-utf8`);
  fs.symlinkSync('e\u0301', `${down(spine, 100)}/nfd`);
});

afterAll(() => rm(base, { recursive: true, force: true }));

/** The process's open descriptors, read in the same tick as the call they surround. */
const descriptors = () => fs.readdirSync('/proc/self/fd').join(',');

/** `run`'s answer or thrown code, and whether it gave back every descriptor it took. */
function outcome(run: () => string): { answer: string; leaked: boolean } {
  const before = descriptors();
  let answer: string;
  try {
    answer = run();
  } catch (error) {
    answer = `throws ${(error as { code?: string }).code ?? (error as Error).message}`;
  }
  return { answer, leaked: descriptors() !== before };
}

/** Values deep enough to be walked from held folders, and the kernel's answer for each. */
function deepValues(): { value: string; kernel: string }[] {
  const values = [
    `${down(viaLink, 50)}/out/x`,
    `${down(viaLink, 100)}/up/d`,
    `${down(viaLink, 100)}/up${'/d'.repeat(18)}/out/x`,
  ];
  return values.map((value) => ({ value, kernel: fs.realpathSync.native(value) }));
}

describe('resolveSymlinks deep down, where a folder cannot be held open and looked up from', () => {
  const cases: [string, Partial<typeof trouble>][] = [
    ['without /proc', { procGone: true }],
    ['with /proc naming another folder', { procLies: true }],
    ['when opening a folder fails (EMFILE)', { openFails: 'EMFILE' }],
    ['when opening a folder fails (EACCES: x but no r)', { openFails: 'EACCES' }],
  ];
  it.each(cases)('answers as the kernel %s, and holds nothing open', (_, how) => {
    const kernel = deepValues();
    Object.assign(trouble, how);
    for (const { value, kernel: want } of kernel) {
      const bound = (p: string) => p.startsWith(base) || base.startsWith(p);
      expect({ value, ...outcome(() => resolveSymlinks(value)) }).toEqual({
        value,
        answer: want,
        leaked: false,
      });
      expect({ value, ...outcome(() => resolveWithin(value, bound)) }).toEqual({
        value,
        answer: want,
        leaked: false,
      });
    }
  });
});

describe('resolveSymlinks deep down, after a link climbs back to the folder it holds open', () => {
  it('still looks each name up, opens and reads links at most ANCHOR_EVERY folders below one', () => {
    // A link 5 folders below a held folder (its depth from `/` a multiple of
    // ANCHOR_EVERY: the spine is walked folder by folder from `base/L`), climbing 5 and back down.
    const depthOfSpine = spine.split('/').length - 1;
    const shift = (((5 - depthOfSpine) % ANCHOR_EVERY) + ANCHOR_EVERY) % ANCHOR_EVERY;
    const j = 2 * ANCHOR_EVERY + shift;
    fs.symlinkSync(`${'../'.repeat(5)}${'d/'.repeat(5)}z`, `${down(spine, j)}/climb`);
    looked.length = 0;
    // Bounded (by nothing): the unbounded walk may open the last folder from `/` at once.
    expect(resolveWithin(`${down(viaLink, j)}/climb`, () => true)).toBe(`${down(spine, j)}/z`);
    expect(looked.length).toBeGreaterThan(j);
    const deepest = looked.reduce((most, lookup) =>
      foldersWalked(lookup) > foldersWalked(most) ? lookup : most,
    );
    expect({ deepest, walked: foldersWalked(deepest) <= ANCHOR_EVERY }).toEqual({
      deepest,
      walked: true,
    });
  });
});

describe('resolveSymlinks deep down, through a link that goes up and down again', () => {
  it('looks each name of `../d/../d/…` up from the held folder, not from `/` again', () => {
    // The link in a folder the walk holds open (its depth a multiple of
    // ANCHOR_EVERY), so each `..` leaves that folder for its parent.
    const j = 2 * ANCHOR_EVERY - (spine.split('/').length - 1);
    const folder = down(spine, j);
    fs.symlinkSync(`${'../d/'.repeat(200)}z`, `${folder}/zigzag`);
    looked.length = 0;
    expect(resolveWithin(`${down(viaLink, j)}/zigzag`, () => true)).toBe(`${folder}/z`);
    expect(looked.length).toBeGreaterThan(200);
    expect(Math.max(...looked.map(foldersWalked))).toBeLessThanOrEqual(ANCHOR_EVERY);
  });
});

describe('resolveSymlinks deep down, folder by folder', () => {
  it('opens one folder every ANCHOR_EVERY folders, not one a folder, below the first it holds', () => {
    // 100 folders through `base/L`, bounded by nothing (no shortcut open of the last
    // folder): the walk costs one lstat a folder, and an open of the folder it holds
    // every ANCHOR_EVERY folders (walked-folder.ts), not an open (and close) a folder.
    opened.length = 0;
    const answer = resolveWithin(`${down(viaLink, 100)}/x`, () => true);
    expect(answer).toBe(`${down(spine, 100)}/x`);
    const depth = answer.split('/').length - 2;
    expect(opened.length).toBeGreaterThan(0);
    expect(opened.length).toBeLessThanOrEqual(Math.ceil(depth / ANCHOR_EVERY));
  });
});

describe('resolveSymlinks deep down gives back every folder it held open', () => {
  it('after a walk that held folders open three times, and went back up over two', () => {
    for (const { value, kernel } of deepValues()) {
      expect({ value, ...outcome(() => resolveSymlinks(value)) }).toEqual({
        value,
        answer: kernel,
        leaked: false,
      });
    }
  });

  it.each([
    ['a link loop', 'loop/x', 'ELOOP'],
    ['a link target that is not UTF-8', 'not-utf8/x', 'EILSEQ'],
    ['an answer not in NFC', 'nfd', 'EILSEQ'],
    ['a `..` after a missing name', 'missing/../x', 'ENOENT'],
    ['an lstat error (EACCES)', 'errno-EACCES', 'EACCES'],
  ])('after a throw mid-walk: %s', (_, tail, code) => {
    const value = `${down(viaLink, 100)}/${tail}`;
    expect(outcome(() => resolveSymlinks(value))).toEqual({
      answer: `throws ${code}`,
      leaked: false,
    });
  });

  it('after a bound that throws, deep down', () => {
    const bound = (p: string) => {
      if (p.split('/').length > 3 * ANCHOR_EVERY) throw new Error('bound threw');
      return true;
    };
    expect(outcome(() => resolveWithin(`${down(spine, 100)}/x`, bound))).toEqual({
      answer: 'throws bound threw',
      leaked: false,
    });
  });
});

describe('resolveSymlinks on a path of exactly PATH_MAX bytes below a held folder', () => {
  it('throws ENAMETOOLONG where the kernel does, and answers one byte shorter', () => {
    // 40 folders of 95 letters, reached through a link: the walk holds them
    // open, so a name in the last one would be looked up through /proc.
    const long = `${base}/long/${Array.from({ length: 40 }, () => 'l'.repeat(95)).join('/')}`;
    fs.mkdirSync(long, { recursive: true });
    fs.symlinkSync(long, `${base}/to-long`);
    const room = 4096 - Buffer.byteLength(`${long}/`);
    const [fits, tooLong] = ['f'.repeat(room - 1), 'g'.repeat(room)];
    // Made relative to `long`: the kernel refuses the longer whole path from `/`.
    execFileSync('mkdir', [fits, tooLong], { cwd: long });
    try {
      expect(Buffer.byteLength(`${long}/${tooLong}`)).toBe(4096);
      expect(() => fs.lstatSync(`${long}/${tooLong}`)).toThrow(
        expect.objectContaining({ code: 'ENAMETOOLONG' }),
      );
      expect(outcome(() => resolveSymlinks(`${base}/to-long/${tooLong}`))).toEqual({
        answer: 'throws ENAMETOOLONG',
        leaked: false,
      });
      expect(resolveSymlinks(`${base}/to-long/${fits}`)).toBe(`${long}/${fits}`);
    } finally {
      execFileSync('rm', ['-rf', fits, tooLong], { cwd: long });
    }
  });
});

describe('resolveSymlinks deep down, on an error', () => {
  it.each(['plain', 'a$&b', "a$'b", 'a$`b', 'a$$b'])(
    'names the path asked for, not the one through /proc (a folder %s)',
    (name) => {
      const folder = down(`${base}/names/${name}`, 40);
      fs.mkdirSync(folder, { recursive: true });
      const here = `${folder}/errno-EACCES`;
      let thrown: { code?: string; path?: string; message?: string } = {};
      try {
        resolveWithin(here, () => true);
      } catch (error) {
        thrown = error as typeof thrown;
      }
      expect(thrown).toMatchObject({ code: 'EACCES', path: here });
      expect(thrown.message).toBe(`EACCES: mocked, '${here}'`);
    },
  );
});
