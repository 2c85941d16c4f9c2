import * as fs from 'node:fs';
import { posix } from 'node:path';
import fc from 'fast-check';

// Random small trees of folders, files and symbolic links under one base
// folder, and random request paths into them, for the differential tests of
// `resolveSymlinks` against the operating system (realpath-differential.test.ts).
//
// The base holds `root` (the sandbox), `out` (a sibling outside it), and
// `alias` -> `root`, `alias2` -> `alias` (a sandbox root that is itself a link).

/**
 * Entry names; `.h` is a dotfile, which `**` does not match; `é` decomposed
 * (NFD) and composed (NFC) are two names on disk, one after the core's step 4.
 */
const NAMES = ['public', 'uploads', 'a', 'b', '.h', 'e\u0301', '\u00e9'] as const;
/** What a request or a link target may name besides entries. */
const WORDS = [...NAMES, '..', '.', '', 'missing', 'root', 'out', 'alias'] as const;
/** Folders that may be made, parents first, relative to the base. */
const DIRS = ['root/public', 'root/uploads', 'root/a', 'root/public/a', 'out/a', 'out/public'];
/** Folders an entry may be put in (when it is a real folder by then). */
const PLACES = ['root', 'out', ...DIRS];

/**
 * The sandbox roots a policy may name: the folder, a link to it, a chain of
 * two, and a folder of the tree (maybe a link, dangling, a loop or missing).
 */
export const ROOTS = ['root', 'alias', 'alias2', 'alias/public', 'root/uploads'] as const;

/** How a path is written: relative, below the base, or absolute from `/`. */
type Anchor = 'relative' | 'base' | 'slash';

export interface LinkTarget {
  readonly anchor: Anchor;
  readonly text: string;
}

export interface Entry {
  readonly place: string;
  readonly name: string;
  /** A file, or a link with this target. */
  readonly link: LinkTarget | null;
}

export interface Tree {
  readonly dirs: readonly string[];
  readonly entries: readonly Entry[];
}

export interface Request {
  readonly anchor: 'relative' | 'base';
  /** Below the base (for `base`): the sandbox folder or one of its links. */
  readonly via: string;
  readonly text: string;
}

const words = (max: number) =>
  fc.array(fc.constantFrom(...WORDS), { maxLength: max }).map((list) => list.join('/'));

const linkTarget: fc.Arbitrary<LinkTarget> = fc.record({
  anchor: fc.constantFrom<Anchor>('relative', 'relative', 'base', 'slash'),
  text: fc.oneof(words(4), fc.constantFrom(...NAMES)),
});

const entry: fc.Arbitrary<Entry> = fc.record({
  place: fc.constantFrom(...PLACES),
  name: fc.constantFrom(...NAMES),
  link: fc.option(linkTarget, { freq: 3 }),
});

export const tree: fc.Arbitrary<Tree> = fc.record({
  dirs: fc.subarray(DIRS),
  entries: fc.array(entry, { maxLength: 12 }),
});

export const request: fc.Arbitrary<Request> = fc.record({
  anchor: fc.constantFrom<Request['anchor']>('relative', 'relative', 'base'),
  via: fc.constantFrom('root', 'alias2', 'out'),
  text: fc.tuple(words(6), fc.boolean()).map(([text, slash]) => (slash ? `${text}/` : text)),
});

/**
 * A tree with the link `root/exit` that leads out of the root: to the sibling
 * `out`, to `alias` (a link back in), or up through `..` and back down, then
 * on by random names; and requests through it, relative to the root.
 */
export const linkOut: fc.Arbitrary<{ shape: Tree; requests: string[] }> = fc
  .record({
    shape: tree,
    anchor: fc.constantFrom<Anchor>('relative', 'base'),
    first: fc.constantFrom('out', 'alias', 'alias2', 'out/..', 'root/..'),
    text: words(3),
    requests: fc.array(words(4), { minLength: 1, maxLength: 4 }),
  })
  .map(({ shape, anchor, first, text, requests }) => {
    const target = anchor === 'relative' ? `../${first}/${text}` : `${first}/${text}`;
    const exit: Entry = { place: 'root', name: 'exit', link: { anchor, text: target } };
    return {
      shape: { dirs: shape.dirs, entries: [exit, ...shape.entries] },
      requests: requests.map((one) => `exit/${one}`),
    };
  });

/** The request's text as a client sends it: relative, or absolute below the base. */
export const requestText = (base: string, { anchor, via, text }: Request): string =>
  anchor === 'relative' ? text : `${base}/${via}/${text}`;

/** A link's target text as it is stored on disk (an empty one cannot be made: `.`). */
export const targetText = (base: string, { anchor, text }: LinkTarget): string =>
  anchor === 'relative' ? text || '.' : anchor === 'base' ? `${base}/${text}` : `/${text}`;

/** Whether every name of `place` below the base is a folder, not a link: nothing is made through a link. */
const realDir = (base: string, place: string): boolean =>
  place
    .split('/')
    .every(
      (_name, i, names) =>
        fs
          .lstatSync(`${base}/${names.slice(0, i + 1).join('/')}`, { throwIfNoEntry: false })
          ?.isDirectory() === true,
    );

/** Empties the base and builds `tree` in it; an entry whose place is not a folder is left out. */
export function buildTree(base: string, { dirs, entries }: Tree): void {
  for (const name of fs.readdirSync(base)) fs.rmSync(`${base}/${name}`, { recursive: true });
  fs.mkdirSync(`${base}/root`);
  fs.mkdirSync(`${base}/out`);
  fs.symlinkSync('root', `${base}/alias`);
  fs.symlinkSync('alias', `${base}/alias2`);
  for (const dir of dirs) if (realDir(base, posix.dirname(dir))) fs.mkdirSync(`${base}/${dir}`);
  for (const { place, name, link } of entries) {
    const path = `${base}/${place}/${name}`;
    if (!realDir(base, place) || fs.lstatSync(path, { throwIfNoEntry: false })) continue;
    if (link === null) fs.writeFileSync(path, 'x');
    else fs.symlinkSync(targetText(base, link), path);
  }
}
