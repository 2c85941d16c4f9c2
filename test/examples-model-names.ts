// The names the stateful test of the examples sends (examples-model.test.ts):
// a few ordinary ones, so that commands meet each other's files, and hostile
// ones, and the ways each travels in a URL.
import fc from 'fast-check';
import { FOLDER_DEPTH_MAX } from './examples-model.js';
import { SANDBOX_BYTES } from './examples-model-apps.js';

/**
 * A small pool, so that commands meet each other's files: one name in NFC
 * and NFD, a literal `%2e%2e`, a backslash, an upper-case extension, `d`
 * both a file's and a folder's name, and `hello.txt`, seeded in uploads/.
 */
const COMMON = [
  'a.txt',
  'b',
  'café.txt',
  'cafe\u0301.txt',
  'X.MD',
  'hello.txt',
  '%2e%2e',
  'a\\b',
  'd',
];
/** Fewer still, for the names most commands use: each run meets its own files often. */
const FEW = ['a.txt', 'hello.txt', 'café.txt', 'cafe\u0301.txt', 'd'];
/** Segments that climb, vanish, hide, or name the sandbox's own folders and secret. */
const HOSTILE = ['..', '.', '', '.env', '.upload-x.part', 'secret.txt', 'uploads', 'public'];
/** A segment over NAME_MAX (255 bytes). */
const LONG = 'n'.repeat(256);

const segments = (pool: readonly string[], minLength: number, maxLength: number) =>
  fc.array(fc.constantFrom(...pool), { minLength, maxLength });

/** Hostile paths: a prefix that climbs or doubles a slash, then any segments. */
const hostile = (prefixes: readonly string[]) =>
  fc
    .tuple(fc.constantFrom(...prefixes), segments([...COMMON, ...HOSTILE], 0, 4))
    .map(([prefix, rest]) => prefix + rest.join('/'));

/** A chain of 4 to 8 folders and a file: many folders made by one request. */
const deep = (prefix: string) =>
  segments(['d', 'e'], 4, 8).map((rest) => `${prefix}${[...rest, 'f.txt'].join('/')}`);

/**
 * A chain of folders below uploads/ that ends at the deepest a client may
 * make (FOLDER_DEPTH_MAX folders below the root) or one deeper, and a file.
 */
const atDepthMax = (prefix: string) =>
  fc
    .constantFrom(FOLDER_DEPTH_MAX - 1, FOLDER_DEPTH_MAX)
    .chain((below) => segments(['d', 'e'], below, below))
    .map((rest) => `${prefix}${[...rest, 'f.txt'].join('/')}`);

/** A name over 255 bytes, alone or below folders (often new ones), a file's or a folder's. */
const long = (prefix: string) =>
  fc
    .tuple(segments(COMMON, 0, 1), fc.constantFrom([], ['new'], ['new', 'd']), fc.boolean())
    .map(
      ([above, made, below]) =>
        prefix + [...above, ...made, LONG, ...(below ? ['f'] : [])].join('/'),
    );

/** Linux's longest path, in bytes, and the Express storage's longest folder for an upload. */
const PATH_MAX = 4095;
const FOLDER_MAX = PATH_MAX - 52;
const PAD = 'p'.repeat(200);

/**
 * A file named in a folder below uploads/ whose path (the sandbox's
 * included) is just within or just over the longest an upload's folder or
 * any path may be.
 */
const nearPathMax = (prefix: string) =>
  fc.constantFrom(FOLDER_MAX, FOLDER_MAX + 1, PATH_MAX - 2, PATH_MAX - 1).map((bytes) => {
    const names: string[] = [];
    // What the names below uploads/ take, each with its slash: the last one 1 to 201 bytes.
    let left = bytes - SANDBOX_BYTES - '/uploads'.length;
    for (; left > PAD.length + 2; left -= PAD.length + 1) names.push(PAD);
    return `${prefix}${[...names, 'q'.repeat(left - 1), 'f'].join('/')}`;
  });

/** A name holding a NUL, in its last segment. */
const withNul = (prefix: string) =>
  segments(FEW, 0, 2).map((rest) => `${prefix}${[...rest, 'a\0b'].join('/')}`);

/** A name from FEW after `prefix`, or two of them: the names commands meet on most. */
const nearby = (prefix: string) => [
  { weight: 4, arbitrary: fc.constantFrom(...FEW).map((name) => prefix + name) },
  { weight: 2, arbitrary: segments(FEW, 2, 2).map((rest) => prefix + rest.join('/')) },
];

/** Names after `prefix` that commands sent at once collide on (examples-concurrent.test.ts). */
export const colliding = (prefix: string) => fc.oneof(...nearby(prefix));

/** Names inside uploads/, each after `prefix`: ordinary, deep, at the depth limit, long, near PATH_MAX, with a NUL. */
const inUploads = (prefix: string) => [
  ...nearby(prefix),
  { weight: 2, arbitrary: segments(COMMON, 1, 3).map((rest) => prefix + rest.join('/')) },
  { weight: 1, arbitrary: deep(prefix) },
  { weight: 1, arbitrary: atDepthMax(prefix) },
  { weight: 2, arbitrary: long(prefix) },
  { weight: 1, arbitrary: nearPathMax(prefix) },
  { weight: 1, arbitrary: withNul(prefix) },
];

/** A path from the sandbox root, as a URL or a JSON field names it. */
export const rootName = fc.oneof(
  ...inUploads('uploads/'),
  {
    weight: 1,
    arbitrary: segments([...COMMON, 'docs', 'readme.txt'], 0, 2).map((rest) =>
      ['public', ...rest].join('/'),
    ),
  },
  {
    weight: 3,
    arbitrary: hostile(['', '/', '../', '../../', 'uploads/../', './uploads/', 'uploads//']),
  },
);

/** A move's source: often a name the run stored, else any. */
export const sourceName = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...FEW).map((name) => `uploads/${name}`) },
  { weight: 1, arbitrary: rootName },
);

/** An upload's filename: a name inside uploads/. */
export const uploadName = fc.oneof(...inUploads(''), {
  weight: 3,
  arbitrary: hostile(['', '/', '../', '../../', '../public/', '../uploads/', 'x/../']),
});

/** A name as a command's label shows it: a run of 20 or more of a character shortened (`n×256`). */
export const shown = (name: string) =>
  JSON.stringify(name).replace(/(.)\1{19,}/g, (run, char) => `${char}×${run.length}`);

/** How a name travels in a URL: each segment escaped, or also its slashes or its dots. */
export type Escaping = 'segments' | 'slashes' | 'dots';

export const escaping = fc.constantFrom<Escaping>('segments', 'slashes', 'dots');

/** `name` escaped for a URL's path (`/files/<name>`). */
export function inPath(name: string, how: Escaping): string {
  const escaped = name.split('/').map((segment) => encodeURIComponent(segment));
  if (how === 'dots') return escaped.map((segment) => segment.replaceAll('.', '%2e')).join('/');
  return escaped.join(how === 'slashes' ? '%2F' : '/');
}

/** `name` escaped for a query value: its slashes kept, or escaped, or its dots too. */
export function inQuery(name: string, how: Escaping): string {
  const escaped = encodeURIComponent(name);
  if (how === 'dots') return escaped.replaceAll('.', '%2E');
  return how === 'slashes' ? escaped : escaped.replaceAll('%2F', '/');
}
