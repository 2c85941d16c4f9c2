import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkFs, PermissionPolicy } from '../src/index.js';
import { resolveSymlinks } from '../src/realpath.js';

// The temp dir as os.tmpdir() spells it (it may hold a link), and with its links resolved.
let base = '';
let real = '';

/** `é` decomposed (NFD) and composed (NFC): two names on Linux, one after the core's step 4. */
const NFD = 'e\u0301';
const NFC = '\u00e9';

const at = (relative: string): string => path.posix.join(base, relative);
const expected = (relative: string): string => path.posix.join(real, relative);

function file(relative: string): void {
  fs.mkdirSync(path.dirname(at(relative)), { recursive: true });
  fs.writeFileSync(at(relative), 'x');
}

function link(relative: string, target: string): void {
  fs.mkdirSync(path.dirname(at(relative)), { recursive: true });
  fs.symlinkSync(target, at(relative));
}

function errorOf(run: () => unknown): { name?: string; code?: string } {
  try {
    run();
  } catch (error) {
    return error as { name?: string; code?: string };
  }
  throw new Error('expected a throw');
}

beforeAll(() => {
  base = path.posix.resolve(fs.mkdtempSync(path.join(os.tmpdir(), 'pathgate-realpath-')));
  real = fs.realpathSync(base);
  file('sandbox/file.txt');
  file('sandbox/dir/nested.txt');
  file('outside/secret.txt');
  file('outside/dir/file.txt');
  link('sandbox/out', `${base}/outside`);
  link('sandbox/out-file', `${base}/outside/secret.txt`);
  link('sandbox/dir-link', `${base}/outside/dir`);
  link('sandbox/alias', 'file.txt');
  link('sandbox/chain1', 'chain2');
  link('sandbox/chain2', 'dir/chain3');
  link('sandbox/dir/chain3', '../../outside/secret.txt');
  link('sandbox/upload', `${base}/outside/cron.d/job`);
  link('sandbox/dir/up', '../../outside/new.txt');
  link('sandbox/dangle-chain', 'upload');
  link('sandbox/physical', 'dir-link/../secret.txt');
  link('sandbox/under-file', 'file.txt/x');
  link('sandbox/root', '/');
  link('sandbox-link', 'sandbox');
  link('sandbox/loop-a', 'loop-b');
  link('sandbox/loop-b', 'loop-a');
  link('sandbox/self', 'self');
  link('sandbox/missing-up', 'nowhere/../../outside');
  link('sandbox/file-up', 'file.txt/../dir');
  link('sandbox/dots', './dir/./nested.txt');
  fs.symlinkSync(Buffer.from([0x6e, 0xff]), at('sandbox/not-utf8'));
  // `é` twice: a folder named in NFD, and beside it, named in NFC, a link out.
  fs.mkdirSync(at(`sandbox/${NFD}`));
  link(`sandbox/${NFC}`, `${base}/outside`);
  link('sandbox/to-nfd', NFD);
  link('sandbox/to-nfd-missing', `new-${NFD}`);
  // l0 -> l1 -> ... -> l40 -> end.txt: from l1 that is 40 links, from l0 it is 41.
  file('long/end.txt');
  for (let i = 0; i <= 40; i += 1) link(`long/l${i}`, i === 40 ? 'end.txt' : `l${i + 1}`);
});

afterAll(() => {
  // rmSync removes links themselves and never follows them (sandbox/root -> /).
  if (base !== '') fs.rmSync(base, { recursive: true, force: true });
});

describe('resolveSymlinks', () => {
  // [what, input below the temp dir, expected below the real temp dir]
  const cases: [string, string, string][] = [
    ['an existing regular file', 'sandbox/file.txt', 'sandbox/file.txt'],
    ['an existing directory', 'sandbox/dir', 'sandbox/dir'],
    ['a missing file below an existing directory', 'sandbox/dir/new.txt', 'sandbox/dir/new.txt'],
    ['a missing deep path', 'sandbox/a/b/c/d.txt', 'sandbox/a/b/c/d.txt'],
    ['a link to a directory outside', 'sandbox/out', 'outside'],
    ['a file below a link to outside', 'sandbox/out/secret.txt', 'outside/secret.txt'],
    ['a link to a file outside', 'sandbox/out-file', 'outside/secret.txt'],
    ['a link in the middle of the path', 'sandbox/dir-link/file.txt', 'outside/dir/file.txt'],
    [
      'a missing file below a link in the middle',
      'sandbox/dir-link/new.txt',
      'outside/dir/new.txt',
    ],
    ['a relative link beside its target', 'sandbox/alias', 'sandbox/file.txt'],
    ['a chain of relative links', 'sandbox/chain1', 'outside/secret.txt'],
    ['a dangling link to a missing target outside', 'sandbox/upload', 'outside/cron.d/job'],
    ['a dangling relative link with ..', 'sandbox/dir/up', 'outside/new.txt'],
    ['a link to a dangling link', 'sandbox/dangle-chain', 'outside/cron.d/job'],
    ['.. in a target after a link goes up physically', 'sandbox/physical', 'outside/secret.txt'],
    ['the sandbox itself behind a link', 'sandbox-link', 'sandbox'],
    ['a file below a sandbox behind a link', 'sandbox-link/file.txt', 'sandbox/file.txt'],
    ['a missing file below a sandbox behind a link', 'sandbox-link/new.txt', 'sandbox/new.txt'],
    ['a path through a regular file (appended)', 'sandbox/file.txt/x', 'sandbox/file.txt/x'],
    ['a path through a link to a regular file', 'sandbox/alias/x/y', 'sandbox/file.txt/x/y'],
    ['a dangling link below a regular file', 'sandbox/under-file', 'sandbox/file.txt/x'],
    ['a relative link whose target holds . segments', 'sandbox/dots', 'sandbox/dir/nested.txt'],
    // The kernel's ENAMETOOLONG says no such name is there: as missing, not a throw.
    [
      'a name too long for its folder',
      `sandbox/${'n'.repeat(300)}/x`,
      `sandbox/${'n'.repeat(300)}/x`,
    ],
  ];

  it.each(cases)('resolves %s', (_what, input, want) => {
    expect(resolveSymlinks(at(input))).toBe(expected(want));
    // Oracle: where the path exists, the kernel's own realpath must agree.
    if (fs.existsSync(at(input))) expect(fs.realpathSync.native(at(input))).toBe(expected(want));
  });

  // From the real temp dir: a link on the way to TMPDIR (TMPDIR=/tmp/link) counts too.
  it('follows 40 links in a row, as the kernel does, and throws ELOOP on 41', () => {
    const chain = (from: string) => path.posix.join(real, 'long', from);
    expect(resolveSymlinks(chain('l1'))).toBe(expected('long/end.txt'));
    expect(fs.realpathSync.native(chain('l1'))).toBe(expected('long/end.txt'));
    expect(errorOf(() => resolveSymlinks(chain('l0'))).code).toBe('ELOOP');
  });

  it('resolves / to itself', () => {
    expect(resolveSymlinks('/')).toBe('/');
  });

  it('resolves a link to / to /', () => {
    expect(resolveSymlinks(at('sandbox/root'))).toBe('/');
  });

  it('resolves a link to / and back down into the temp dir', () => {
    expect(resolveSymlinks(at(`sandbox/root${real}/outside/secret.txt`))).toBe(
      expected('outside/secret.txt'),
    );
  });

  it('returns no trailing slash for a link target that has one', () => {
    expect(resolveSymlinks(at('sandbox/dir-link'))).toBe(expected('outside/dir'));
  });

  it.each([
    ['a loop a -> b -> a', 'sandbox/loop-a', 'ELOOP'],
    ['a path below a loop', 'sandbox/loop-a/file.txt', 'ELOOP'],
    ['a self-link', 'sandbox/self', 'ELOOP'],
    ['.. in a target after a missing component', 'sandbox/missing-up', 'ENOENT'],
    ['.. in a target after a regular file', 'sandbox/file-up', 'ENOTDIR'],
    ['a link target that is not UTF-8', 'sandbox/not-utf8', 'EILSEQ'],
    // The core normalizes the answer to NFC, which names another file: here a link out.
    ['a link to a folder named in NFD', 'sandbox/to-nfd/passwd', 'EILSEQ'],
    // The walk ends in the NFD folder itself: no missing name is appended.
    ['a link to a folder named in NFD, the folder itself', 'sandbox/to-nfd', 'EILSEQ'],
    ['a dangling link to a name in NFD', 'sandbox/to-nfd-missing', 'EILSEQ'],
    // No lstat ever sees the long part: the walk stops at `missing`, as it would append the rest.
    [
      'a path longer than PATH_MAX below a missing component',
      `sandbox/missing/${'a/'.repeat(2100)}x`,
      'ENAMETOOLONG',
    ],
    [
      'a 1 MiB path of one-letter names',
      `sandbox/missing/${'a/'.repeat(512 * 1024)}x`,
      'ENAMETOOLONG',
    ],
  ])('throws on %s', (_what, input, code) => {
    expect(errorOf(() => resolveSymlinks(at(input))).code).toBe(code);
  });

  it('says why in its error, naming the path, the link or the rest it could not walk', () => {
    const long = `/${'a'.repeat(5000)}`;
    expect(
      [
        () => resolveSymlinks(at('sandbox/self')),
        () => resolveSymlinks(at('sandbox/not-utf8')),
        () => resolveSymlinks(at('sandbox/missing-up')),
        () => resolveSymlinks(long),
        () => resolveSymlinks(42 as unknown as string),
      ].map((run) => (errorOf(run) as Error).message),
    ).toEqual([
      `ELOOP: too many symbolic links, '${at('sandbox/self')}'`,
      `EILSEQ: link target is not UTF-8, '${expected('sandbox/not-utf8')}'`,
      `ENOENT: cannot walk ".." from here, 'nowhere/../../outside'`,
      `ENAMETOOLONG: path too long, '${long.slice(0, 64)}…'`,
      'resolveSymlinks: the path must be a string starting with "/"',
    ]);
  });

  it('names only the start of a path too long for PATH_MAX in its error', () => {
    // The client picks the length: an error that quoted it whole would carry a megabyte.
    const error = errorOf(() => resolveSymlinks(`/${'a/'.repeat(512 * 1024)}x`)) as Error;
    expect(error.message.length).toBeLessThan(200);
    expect(error.message).toContain('/a/a/a/');
  });

  it('counts PATH_MAX in UTF-8 bytes: 4,095 resolves, 4,096 is ENAMETOOLONG', () => {
    // Names of 50 three-byte characters below a missing component, padded to the byte.
    const ofBytes = (bytes: number) => {
      let p = at('sandbox/missing');
      while (Buffer.byteLength(p) + 152 < bytes) p += `/${'€'.repeat(50)}`;
      p += '/';
      while (Buffer.byteLength(p) + 3 <= bytes) p += '€';
      return p + 'a'.repeat(bytes - Buffer.byteLength(p));
    };
    const under = ofBytes(4095);
    expect([Buffer.byteLength(under), resolveSymlinks(under)]).toEqual([
      4095,
      expected(under.slice(base.length)),
    ]);
    const over = ofBytes(4096);
    expect([Buffer.byteLength(over), errorOf(() => resolveSymlinks(over)).code]).toEqual([
      4096,
      'ENAMETOOLONG',
    ]);
  });

  it.each([
    // The folder's own name limit: the kernel's ENAMETOOLONG is about the last name.
    ['4,095 with a last name of 300 bytes is missing there', 4095, 100, 'resolves'],
    // The whole path's limit: lstat's ENAMETOOLONG says nothing of the name.
    ['4,096 with a last name of 180 bytes throws', 4096, 60, 'ENAMETOOLONG'],
  ])(
    'counts PATH_MAX on the path a link leads to, in UTF-8 bytes: %s',
    (_what, bytes, euros, want) => {
      // The input is short; its link leads to a folder whose path, with the last name, has `bytes`.
      const name = '€'.repeat(euros);
      const folderBytes = bytes - 1 - Buffer.byteLength(name);
      let deep = expected('far');
      while (folderBytes - Buffer.byteLength(deep) > 255) deep += `/${'d'.repeat(200)}`;
      deep += `/${'d'.repeat(folderBytes - Buffer.byteLength(deep) - 1)}`;
      fs.mkdirSync(deep, { recursive: true });
      const leads = `sandbox/leads-${bytes}`;
      link(leads, deep);
      const walked = `${deep}/${name}`;
      const got = (() => {
        try {
          return resolveSymlinks(at(`${leads}/${name}`));
        } catch (error) {
          return (error as { code?: string }).code;
        }
      })();
      expect([Buffer.byteLength(walked), got]).toEqual([
        bytes,
        want === 'resolves' ? walked : want,
      ]);
    },
  );

  it.each([
    ['a relative path', 'sandbox/file.txt'],
    ['an empty path', ''],
    ['a non-string', 42 as unknown as string],
  ])('throws a TypeError on %s', (_what, input) => {
    expect(errorOf(() => resolveSymlinks(input)).name).toBe('TypeError');
  });
});

describe('resolveSymlinks as a policy resolve', () => {
  it('denies a write through a link to an NFD name whose NFC twin is a link out', () => {
    // Answered as it was, the NFD path became the NFC one, `sandbox/é/passwd`,
    // allowed: a handler writing there wrote through `sandbox/é` to outside/passwd.
    const policy = new PermissionPolicy({
      root: at('sandbox'),
      permissions: { fs: ['rw:./**'] },
      resolve: resolveSymlinks,
    });
    expect(checkFs(policy, 'to-nfd/passwd', 'write')).toEqual({
      outcome: 'deny',
      reason: 'resolve-failed',
    });
  });
});
