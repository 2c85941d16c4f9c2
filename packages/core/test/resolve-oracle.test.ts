import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  checkFs,
  compileRouteGuard,
  escapes,
  inside,
  isInside,
  PermissionPolicy,
} from '../src/index.js';
import { BOUNDED_WALK, resolveSymlinks } from '../src/realpath.js';
import { runGuard } from './guard-run.js';

// What a denied value may tell a client about the disk, with the resolver on:
// nothing about what lies outside the root, and nothing about what lies
// inside it that the rules do not grant. The route guard's deny reason is
// what an adapter sends; it must depend on the value and the rules, not on
// which names exist. checkFs and the predicates keep DESIGN.md's steps: they
// resolve every value, and answer the application, not a client.

/** The paths resolveSymlinks lstat-ed or read as a link, in order. */
const touched: string[] = [];
/** The paths it opened: the kernel follows every link on such a path, one out of the root too. */
const opened: string[] = [];
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof fs>();
  // A path below a folder the walk holds open, as the path of that folder.
  const named = (p: fs.PathLike) =>
    String(p).replace(/^\/proc\/self\/fd\/\d+/, (fd) => real.readlinkSync(fd));
  const lstatSync = ((p: fs.PathLike, options?: fs.StatSyncOptions) => {
    touched.push(named(p));
    return real.lstatSync(p, options);
  }) as typeof fs.lstatSync;
  const readlinkSync = ((p: fs.PathLike, options?: fs.EncodingOption) => {
    touched.push(named(p));
    return real.readlinkSync(p, options);
  }) as typeof fs.readlinkSync;
  const openSync = ((p: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
    opened.push(named(p));
    return real.openSync(p, flags ?? 'r', mode);
  }) as typeof fs.openSync;
  return { ...real, lstatSync, readlinkSync, openSync };
});

let base = '';
/** The names the resolver was asked about, in order. */
const asked: string[] = [];
const watching = (p: string): string => {
  asked.push(p);
  return resolveSymlinks(p);
};

/** Longer than any name the kernel accepts (NAME_MAX, 255 bytes). */
const LONG = 'n'.repeat(300);

/** The same scene 40 folders further down, where the walk holds folders open (walked-folder.ts). */
let deep = '';

beforeAll(() => {
  base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pathgate-oracle-')));
  deep = `${base}/deep${'/d'.repeat(40)}`;
  makeScene(base);
  makeScene(deep);
});

/** The root, the folders and links beside it, and those beyond `uploads/out`, in `at`. */
function makeScene(at: string): void {
  for (const dir of ['root/uploads', 'root/private', 'root-alias-target', 'out/dir']) {
    fs.mkdirSync(`${at}/${dir}`, { recursive: true });
  }
  fs.symlinkSync('loop', `${at}/out/loop`);
  fs.symlinkSync(`${at}/root/uploads`, `${at}/out/in`);
  fs.symlinkSync('root', `${at}/alias`);
  makeBeyond(at);
}

afterAll(() => {
  if (base !== '') fs.rmSync(base, { recursive: true, force: true });
});

const policyOf = (root = `${base}/root`, resolve = watching) =>
  new PermissionPolicy({ root, permissions: { fs: ['rw:./uploads/**'] }, resolve });

/** The reason the route guard denies each value (a body's `p`) for, or `allow`. */
function reasons(policy: PermissionPolicy, values: readonly string[]): string[] {
  const guard = compileRouteGuard(policy, { mode: 'read', paths: [{ body: 'p' }] }, 'POST /x');
  return values.map((value) => {
    const { result } = runGuard(guard, { body: { p: value } });
    return result.ok ? 'allow' : result.denial.reason;
  });
}

describe('a client value lexically outside the root, with a resolver', () => {
  it('is never passed to the resolver, so no file outside is looked at', () => {
    const policy = policyOf();
    asked.length = 0;
    const outside = [`${base}/out/dir/x`, '../out/loop', '/etc/passwd', `${base}/out/in/a`];
    reasons(policy, outside);
    expect(asked).toEqual([]);
  });

  it('is denied path-not-in-allowlist whether what it names exists, loops or is missing', () => {
    const values = [
      `${base}/out/loop`,
      `${base}/out/missing`,
      `${base}/out/dir/${LONG}`,
      `${base}/missing/${LONG}`,
      `${base}/out/in/a`,
    ];
    expect(reasons(policyOf(), values)).toEqual(values.map(() => 'path-not-in-allowlist'));
  });

  it('is still resolved below the root as it was given, a link to the resolved root', () => {
    const policy = policyOf(`${base}/alias`);
    expect(reasons(policy, [`${base}/alias/uploads/a`, `${base}/root/uploads/a`])).toEqual([
      'allow',
      'allow',
    ]);
  });
});

describe('checkFs and the predicates, with a resolver (DESIGN.md step 8 for every value)', () => {
  it('resolve a value outside the root: a link back in is inside, a loop resolve-failed', () => {
    const policy = policyOf();
    const read = (value: string) => checkFs(policy, value, 'read');
    expect([read(`${base}/out/in/a`), read(`${base}/out/loop`)]).toMatchObject([
      { outcome: 'allow' },
      { outcome: 'deny', reason: 'resolve-failed' },
    ]);
    const value = `${base}/out/in/a`;
    const options = { resolve: watching };
    expect(isInside(value, `${base}/root`, options)).toBe(true);
    expect(inside('p', `${base}/root`, options)({ p: value })).toBe(true);
    expect(escapes('p', `${base}/root`, options)({ p: value })).toBe(false);
  });
});

describe('a name too long for any folder, with resolveSymlinks', () => {
  it('is denied alike below an existing folder the rules do not grant and a missing one', () => {
    expect(reasons(policyOf(), [`private/${LONG}`, `nowhere/${LONG}`])).toEqual([
      'path-not-in-allowlist',
      'path-not-in-allowlist',
    ]);
  });

  it('is judged by the rules where they grant it: opening it is what fails', () => {
    expect(reasons(policyOf(), [`uploads/${LONG}`, `uploads/none/${LONG}`])).toEqual([
      'allow',
      'allow',
    ]);
  });
});

// A link inside the root that points out (`uploads/out` -> `<base>/out`), and
// what may lie beyond it. Run as root, chmod locks nothing: the other probes
// (a loop, a `..` below a file, a target that is not UTF-8) still fail there.
const locks = process.getuid?.() !== 0;

/** Links in the root (out, back in through a sibling, up to ancestors) and the things beyond `out`. */
function makeBeyond(base: string): void {
  const out = `${base}/out`;
  fs.symlinkSync(out, `${base}/root/uploads/out`);
  fs.symlinkSync('../../out/../root/uploads', `${base}/root/uploads/sibling`);
  fs.symlinkSync('../../none/../root/uploads', `${base}/root/uploads/no-sibling`);
  fs.symlinkSync('../..', `${base}/root/uploads/up`);
  fs.symlinkSync('/', `${base}/root/uploads/top`);
  // Siblings whose names extend the root's or begin it: neither is below it, nor above.
  fs.mkdirSync(`${base}/root2`);
  fs.symlinkSync('loop', `${base}/root2/loop`);
  fs.symlinkSync('roo', `${base}/roo`);
  fs.symlinkSync('../../root2', `${base}/root/uploads/longer`);
  fs.symlinkSync('../../roo', `${base}/root/uploads/shorter`);
  // Links to a folder inside, written through the root as given (`links/root`,
  // a link to it in a folder of its own, on the root's way only as given).
  fs.mkdirSync(`${base}/root/uploads/v2`);
  fs.mkdirSync(`${base}/links`);
  fs.symlinkSync('../root', `${base}/links/root`);
  fs.symlinkSync(`${base}/links/root/uploads/v2`, `${base}/root/uploads/latest`);
  fs.symlinkSync('../../links/root/uploads/v2', `${base}/root/uploads/latest-relative`);
  fs.symlinkSync(`${base}/links/root/uploads/out`, `${base}/root/uploads/alias-out`);
  // A link to a name at `/` that is on no root's way.
  fs.symlinkSync('/pathgate-oracle-none/x', `${base}/root/uploads/elsewhere`);
  fs.writeFileSync(`${out}/file`, 'x');
  fs.symlinkSync('file/../dir', `${out}/file-up`);
  fs.symlinkSync(Buffer.from([0x66, 0xff]), `${out}/not-utf8`);
  fs.mkdirSync(`${out}/locked/dir`, { recursive: true });
  if (locks) fs.chmodSync(`${out}/locked`, 0);
}

/** Values through links out of the root: a resolver walking on beyond them answers some otherwise. */
const BEYOND = [
  'uploads/out/dir/x',
  'uploads/out/none/x',
  'uploads/out/loop/x',
  'uploads/out/file/x',
  'uploads/out/file-up/x',
  'uploads/out/not-utf8/x',
  `uploads/out/dir/${LONG}`,
  `uploads/out/none/${LONG}`,
  'uploads/out/in/a',
  ...(locks ? ['uploads/out/locked/dir/x'] : []),
  // Through links to `root2` and `roo`: each holds a loop, which a walk into them would hit.
  'uploads/longer/loop/x',
  'uploads/shorter/x',
  'uploads/elsewhere/y',
];

/** True when `p` is `real` or below it, or one of its ancestors. */
const onRootsWay = (p: string, real: string) =>
  p === real || p.startsWith(`${real}/`) || real.startsWith(p === '/' ? p : `${p}/`);

describe('a client value through a link inside the root that points out, with resolveSymlinks', () => {
  const bounded = () => policyOf(`${base}/root`, resolveSymlinks);

  it('is denied path-not-in-allowlist whatever lies beyond the link', () => {
    expect(reasons(bounded(), BEYOND)).toEqual(BEYOND.map(() => 'path-not-in-allowlist'));
  });

  it('never makes the resolver lstat or read a path outside the root but its ancestors', () => {
    const policy = bounded();
    touched.length = 0;
    opened.length = 0;
    reasons(policy, BEYOND);
    const real = `${base}/root`;
    expect(touched.length).toBeGreaterThan(0);
    expect(touched.filter((p) => !onRootsWay(p, real))).toEqual([]);
    // No open of a folder chain either (resolveSymlinks' shortcut unbounded): it would follow `out`.
    expect(opened).toEqual([]);
    expect(resolveSymlinks(`${base}/root/uploads/out/dir/x`)).toBe(`${base}/out/dir/x`);
    expect(opened).toEqual([`${base}/root/uploads/out/dir`]);
  });

  it('is resolve-failed when the target leaves and climbs back (`..`), whether that folder exists', () => {
    expect(reasons(bounded(), ['uploads/sibling/a', 'uploads/no-sibling/a'])).toEqual([
      'resolve-failed',
      'resolve-failed',
    ]);
  });

  it('is allowed through a link to an ancestor of the root and back down', () => {
    const back = `root/uploads/a`;
    const values = [`uploads/up/${back}`, `uploads/top${base}/${back}`];
    expect(reasons(bounded(), values)).toEqual(['allow', 'allow']);
    expect(reasons(bounded(), ['uploads/up/out/loop', 'uploads/up/out/in/a'])).toEqual([
      'path-not-in-allowlist',
      'path-not-in-allowlist',
    ]);
  });

  it('is still resolved below the root as it was given, a link to the resolved root', () => {
    const policy = policyOf(`${base}/alias`, resolveSymlinks);
    const values = [`${base}/alias/uploads/a`, `${base}/alias/uploads/out/loop`];
    expect(reasons(policy, values)).toEqual(['allow', 'path-not-in-allowlist']);
  });

  it('is followed through a link inside that names the root as given (a link to it), looking at nothing else', () => {
    const alias = `${base}/links/root`;
    const policy = policyOf(alias, resolveSymlinks);
    const values = ['uploads/latest/a', 'uploads/latest-relative/a', `${alias}/uploads/latest/a`];
    touched.length = 0;
    expect(reasons(policy, values)).toEqual(['allow', 'allow', 'allow']);
    // The root's way as given too: the alias and its ancestors (the root's build looked there).
    const onWay = (p: string) =>
      onRootsWay(p, `${base}/root`) || p === alias || alias.startsWith(`${p}/`);
    expect(touched.filter((p) => !onWay(p))).toEqual([]);
    expect(reasons(policy, ['uploads/alias-out/loop/x'])).toEqual(['path-not-in-allowlist']);
  });

  it('is resolved on through the link by a resolver of your own, even one wrapping resolveSymlinks', () => {
    expect(reasons(policyOf(), ['uploads/out/in/a', 'uploads/out/loop/x'])).toEqual([
      'allow',
      'resolve-failed',
    ]);
    // Known by identity, not by name: a wrapper named after it is asked too.
    const named = { resolveSymlinks: (p: string) => watching(p) }.resolveSymlinks;
    expect(named.name).toBe('resolveSymlinks');
    const policy = policyOf(`${base}/root`, named);
    asked.length = 0;
    expect(reasons(policy, ['uploads/out/loop/x'])).toEqual(['resolve-failed']);
    expect(asked).toEqual([`${base}/root/uploads/out/loop/x`]);
  });

  it('is resolved on by a resolver of your own that carries no walk under the key, or throws on a read', () => {
    // Something other than a function under resolveSymlinks' key is no walk to bound:
    // the resolver is asked, not called through what it carries (which would throw).
    const carrying = Object.defineProperty((p: string) => watching(p), BOUNDED_WALK, {
      value: 'no walk',
    });
    // A proxy whose every property read throws: asked as it is, its build does not throw.
    const trapped = new Proxy((p: string) => watching(p), {
      get() {
        throw new Error('read trapped');
      },
    });
    for (const resolve of [carrying, trapped]) {
      const policy = policyOf(`${base}/root`, resolve);
      asked.length = 0;
      expect(reasons(policy, ['uploads/out/in/a', 'uploads/out/loop/x'])).toEqual([
        'allow',
        'resolve-failed',
      ]);
      expect(asked).toEqual([`${base}/root/uploads/out/in/a`, `${base}/root/uploads/out/loop/x`]);
    }
  });

  it('is denied alike with the resolveSymlinks of the other build of the package (CommonJS)', () => {
    // The built copy beside these sources: another function, as in an app that loads both builds.
    const other = createRequire(import.meta.url)('../dist/index.cjs').resolveSymlinks;
    expect(other).not.toBe(resolveSymlinks);
    const policy = policyOf(`${base}/root`, other);
    expect(reasons(policy, BEYOND)).toEqual(BEYOND.map(() => 'path-not-in-allowlist'));
  });

  it('is resolved on through the link by checkFs, out and back in (DESIGN.md step 8)', () => {
    const policy = bounded();
    const read = (value: string) => checkFs(policy, value, 'read');
    expect([
      read('uploads/out/in/a'),
      read('uploads/sibling/a'),
      read('uploads/out/loop/x'),
    ]).toMatchObject([
      { outcome: 'allow', path: `${base}/root/uploads/a` },
      { outcome: 'allow', path: `${base}/root/uploads/a` },
      { outcome: 'deny', reason: 'resolve-failed' },
    ]);
    expect(resolveSymlinks(`${base}/root/uploads/out/in/a`)).toBe(`${base}/root/uploads/a`);
  });
});

describe('a client value through a link out, deep below a folder the walk holds open', () => {
  it("is denied path-not-in-allowlist, the walk looking at nothing off the root's way", () => {
    const policy = policyOf(`${deep}/root`, resolveSymlinks);
    touched.length = 0;
    opened.length = 0;
    expect(reasons(policy, BEYOND)).toEqual(BEYOND.map(() => 'path-not-in-allowlist'));
    // It held folders open (on the root's way only), and looked names up below them.
    expect(opened.length).toBeGreaterThan(0);
    const offWay = [...touched, ...opened].filter((p) => !onRootsWay(p, `${deep}/root`));
    expect(offWay).toEqual([]);
    expect(reasons(policy, ['uploads/up/root/uploads/a', 'uploads/out/../a'])).toEqual([
      'allow',
      'allow',
    ]);
  });
});
