// The file operations both example servers share. Every path they get was
// canonicalized and checked by pathgate already: they use it as given.
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { type BigIntStats, constants } from 'node:fs';
import {
  type FileHandle,
  link,
  lstat,
  mkdir,
  open,
  readdir,
  rmdir,
  stat,
  unlink,
} from 'node:fs/promises';
import { basename, dirname, extname, relative } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { RealRoot } from './real-root.js';

export interface Entry {
  name: string;
  type: 'file' | 'dir';
  size: number;
}

/** A failure the servers answer with a status and a message that names no path. */
export class FileApiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'FileApiError';
  }
}

/**
 * Maps fs errors a client's request can cause, and a full disk, to clear
 * answers; anything else stays a server error.
 */
function clientError(error: unknown): never {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR') throw noSuchFile();
  // ELOOP: a link swapped in since the check, which O_NOFOLLOW refuses to open;
  // ENXIO: a socket, which has nothing to open.
  if (code === 'EISDIR' || code === 'ELOOP' || code === 'ENXIO') {
    throw new FileApiError(400, 'not a file');
  }
  if (code === 'EEXIST' || code === 'ENOTEMPTY') throw alreadyExists();
  if (code === 'ENAMETOOLONG') throw nameTooLong();
  if (code === 'EFBIG') throw new FileApiError(413, 'file too large');
  if (code === 'ENOSPC' || code === 'EDQUOT') throw new FileApiError(507, 'insufficient storage');
  throw error;
}

/**
 * Creates the parent folders of `path`, each in the one above it opened and
 * confirmed the one checked (`openFolder`), never along the path again:
 * a folder on the way swapped for a link is not followed (on Linux; where
 * /proc cannot be read, the check before stands alone). Tells `walked` of
 * the nearest folder found there, then of each one on the way, the
 * shallowest first, as soon as it is there (after the walks making it, if
 * any: `beingMade`): a failure further down leaves those it made to the
 * caller to take back, and another request may fail or walk in before
 * this walk is over. Errors as the file system gives them (`parentError`).
 */
async function makeParents(path: string, root: RealRoot, walked: Walked): Promise<void> {
  const parent = dirname(path);
  const found = await nearestFolder(parent);
  await makersTold(found);
  walked(found, false);
  if (found === parent) return;
  const names = parent.slice(found.length).split('/').filter(Boolean);
  await makeIn(await openFolder(found, root), found, names, root, walked);
}

/**
 * `dir` or the nearest folder above it that is there, by name: followed
 * through a link swapped in, which `makeParents` refuses once it is open.
 * One that is a file is the client's mistake (409).
 */
async function nearestFolder(dir: string): Promise<string> {
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT' && dirname(dir) !== dir) return undefined;
    throw error;
  });
  if (info === undefined) return nearestFolder(dirname(dir));
  if (!info.isDirectory()) throw parentNotAFolder();
  return dir;
}

/** Told of a folder on a walk's way as soon as it is there: `made` by this walk, or found there. */
type Walked = (folder: string, made: boolean) => void;

/**
 * Makes the folders `names` in `dir`, open (`opened`, closed here), each
 * in the one made before it, opened through it (`MADE_FOLDER_FLAGS`) and
 * confirmed at its path; each folder closed once the next is open, so a
 * deep path holds two descriptors at most, not one per folder. One there
 * already (another request made it) is walked into, told as not made.
 */
async function makeIn(
  opened: OpenFolder,
  dir: string,
  names: string[],
  root: RealRoot,
  walked: Walked,
): Promise<void> {
  let current = opened;
  let folder = dir;
  try {
    for (const [index, name] of names.entries()) {
      const at = `${current.base}/${name}`;
      folder = `${folder}/${name}`;
      await makeTelling(at, folder, walked);
      if (index === names.length - 1) return;
      const next = await openFolder(folder, root, { path: at, flags: MADE_FOLDER_FLAGS });
      await current.handle.close();
      current = next;
    }
  } finally {
    await current.handle.close();
  }
}

/**
 * The folders walks in flight are making, each with their mkdirs. mkdir's
 * and stat's answers come back in another order than the calls ran: a walk
 * that finds a folder there (EEXIST, or `nearestFolder`) while others are
 * making it waits for their mkdirs, so that its maker is told first (and
 * holds it: `HeldFolders`), and this walk finds it held.
 */
const beingMade = new Map<string, Set<Promise<boolean>>>();

/** Once every walk making `folder` (`beingMade`) has been told how its mkdir went. */
const makersTold = async (folder: string) => {
  await Promise.allSettled(beingMade.get(folder) ?? []);
};

/** Makes `folder` (at `at`) and tells `walked`: after its maker, when another walk made it. */
async function makeTelling(at: string, folder: string, walked: Walked): Promise<void> {
  const attempts = beingMade.get(folder) ?? new Set();
  beingMade.set(folder, attempts);
  const attempt = makeFolder(at);
  attempts.add(attempt);
  try {
    // The maker's own reaction to its mkdir runs before any other walk's.
    const made = await attempt;
    if (!made) await makersTold(folder);
    walked(folder, made);
  } finally {
    attempts.delete(attempt);
    if (attempts.size === 0 && beingMade.get(folder) === attempts) beingMade.delete(folder);
  }
}

/** mkdir: `true` once made, `false` when something is there already (walked into, or refused once opened). */
const makeFolder = (path: string) =>
  mkdir(path).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'EEXIST') return false;
      throw error;
    },
  );

/** Making a parent failed: one that is a file is the client's mistake. */
function parentError(error: NodeJS.ErrnoException): never {
  if (error.code === 'EEXIST' || error.code === 'ENOTDIR') throw parentNotAFolder();
  return clientError(error);
}

/**
 * `error`, met by a file operation on `paths`, as the answer to give: a
 * client error (4xx, but a size's 413) where the sandbox's own folders are
 * broken (`RealRoot.broken`) is the server's fault, not the client's: a
 * bare 500, logged, in place of a 404 or a 409 no name could have avoided.
 * Anything else as it is. The original is kept on `cause`, for the log.
 */
export async function sandboxFault(
  error: unknown,
  paths: readonly string[],
  root: RealRoot,
): Promise<unknown> {
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  const named = typeof status === 'number' && status >= 400 && status < 500 && status !== 413;
  if (!named) return error;
  const broken = await Promise.all(paths.map((path) => root.broken(path)));
  return broken.includes(true) ? new Error('the sandbox is broken', { cause: error }) : error;
}

/** Runs the file operation `op` on `paths`, its failure answered as `sandboxFault` says. */
async function blaming<T>(paths: readonly string[], root: RealRoot, op: () => Promise<T>) {
  try {
    return await op();
  } catch (error) {
    throw await sandboxFault(error, paths, root);
  }
}

/**
 * An upload's walk failed: a folder on the way still gone after every
 * attempt (ENOENT, `againIfGone`) is the sandbox changing under the server,
 * no name's fault: as it is, a 500 (the Express example's storage answers
 * it so too). Else as `parentError`.
 */
function walkError(error: NodeJS.ErrnoException): never {
  if (error.code === 'ENOENT') throw error;
  return parentError(error);
}

const parentNotAFolder = () => new FileApiError(409, 'a parent is not a folder');

const noSuchFile = () => new FileApiError(404, 'no such file or folder');

const alreadyExists = () => new FileApiError(409, 'already exists');

const nameTooLong = () => new FileApiError(400, 'name too long');

/** A file opened through a folder swapped for a link since the check is not at `path`: no such file there, a 404. */
async function confirmOpened(handle: FileHandle, path: string, root: RealRoot): Promise<void> {
  if ((await root.through(handle, path)) === undefined) throw noSuchFile();
}

/** Runs `checks` on a file just opened; on any failure the file is closed first. */
async function closingOnFailure<T>(handle: FileHandle, checks: () => Promise<T>): Promise<T> {
  try {
    return await checks();
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * How a folder is opened to name its entries through. On Linux `O_PATH`
 * (Node's constants leave it out; this is its value on every Linux Node
 * runs on): no read permission needed, as naming them by path needed none
 * (a folder of mode 0o300 takes deletes, moves and uploads, not listings).
 */
const FOLDER_FLAGS =
  constants.O_DIRECTORY | (process.platform === 'linux' ? 0o10000000 : constants.O_RDONLY);

/**
 * Runs `use` in the checked folder `dir`, opened once and confirmed the one
 * checked (else a 404, as a download): `use` names its entries through the
 * open folder (`RealRoot.through`), so a folder on the way swapped for a
 * link after the open is not followed either. Closed whatever `use` does;
 * fs errors answered as the client's where they are (`clientError`).
 */
function inFolder<T>(
  dir: string,
  root: RealRoot,
  use: (entry: (name: string) => string) => Promise<T>,
): Promise<T> {
  return inOpenedFolder(dir, root, use).catch(clientError);
}

/**
 * A folder just made, opened through the one it was made in: as
 * `FOLDER_FLAGS`, and a link put in its place since is refused (ENOTDIR
 * where `O_PATH`, else ELOOP), not followed.
 */
const MADE_FOLDER_FLAGS = FOLDER_FLAGS | constants.O_NOFOLLOW;

/** A folder open and confirmed the one checked: `base` names its entries (`RealRoot.through`). */
interface OpenFolder {
  readonly handle: FileHandle;
  readonly base: string;
}

/**
 * Opens the checked folder `dir` and confirms it the one checked, else a
 * 404 (closed first). `opened`: `dir` opened at another path than its own
 * (through the open folder above it, `makeIn`) and with other flags.
 */
async function openFolder(
  dir: string,
  root: RealRoot,
  opened: { path: string; flags: number } = { path: dir, flags: FOLDER_FLAGS },
): Promise<OpenFolder> {
  const handle = await open(opened.path, opened.flags);
  return closingOnFailure(handle, async () => {
    const base = await root.through(handle, dir);
    if (base === undefined) throw noSuchFile();
    return { handle, base };
  });
}

/** `inFolder` with the fs errors as they come: a move or an upload walks again on ENOENT (`againIfGone`). */
async function inOpenedFolder<T>(
  dir: string,
  root: RealRoot,
  use: (entry: (name: string) => string) => Promise<T>,
): Promise<T> {
  const { handle, base } = await openFolder(dir, root);
  try {
    return await use((name) => `${base}/${name}`);
  } finally {
    await handle.close();
  }
}

/** Refuses (400) an entry that is not a regular file (a folder, a link, a socket); else its identity (`identityOf`). */
async function requireFile(entry: string): Promise<string> {
  const info = await lstat(entry, { bigint: true });
  if (!info.isFile()) throw new FileApiError(400, 'not a file');
  return identityOf(info);
}

/**
 * An entry's name as a request can give it, or `undefined` for one no
 * request reaches: not UTF-8 (its text, with U+FFFD, could be another
 * file's name); not NFC (pathgate normalizes every path to NFC, so a
 * download or a delete of it reaches its NFC twin, or nothing); or
 * beginning with `.` (the rules never match one, as pathgate's `dot` is
 * off: a listing would reveal a `.env`, or an upload's temporary file).
 */
function reachableName(bytes: Buffer): string | undefined {
  if (!isUtf8(bytes)) return undefined;
  const name = bytes.toString();
  return name.normalize('NFC') === name && !name.startsWith('.') ? name : undefined;
}

/**
 * A folder's entries, sorted by name. Links are listed, never followed.
 * Names no request reaches are left out (`reachableName`).
 */
export const listDir = (path: string, root: RealRoot) =>
  blaming([path], root, () => listIn(path, root));

async function listIn(path: string, root: RealRoot): Promise<Entry[]> {
  const info = await lstat(path).catch(clientError);
  if (!info.isDirectory()) throw new FileApiError(400, 'not a folder');
  const entries = await inFolder(path, root, readAgainIfGone);
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** How many times a listing reads its folder while an entry it named goes before its look. */
const LIST_ATTEMPTS = 4;

/**
 * The entries of the open folder (`entry`), read again while one its read
 * named was gone before its look (`lstat`): a file another request moved
 * meanwhile would be under neither name, as at no moment. One still going
 * after every read is left out.
 */
async function readAgainIfGone(entry: (name: string) => string): Promise<Entry[]> {
  for (let tries = 1; ; tries++) {
    const read = await readEntries(entry);
    const listed = read.filter((item): item is Entry | undefined => item !== GONE);
    if (listed.length === read.length || tries === LIST_ATTEMPTS) {
      return listed.filter((item): item is Entry => item !== undefined);
    }
  }
}

/** An entry the folder's read named, gone before its look. */
const GONE = Symbol('gone');

/** One read of the open folder: each entry, `undefined` for a name no request reaches, or `GONE`. */
async function readEntries(entry: (name: string) => string) {
  const names = await readdir(entry(''), { encoding: 'buffer' });
  return Promise.all(
    names.map(async (bytes): Promise<Entry | undefined | typeof GONE> => {
      const name = reachableName(bytes);
      if (name === undefined) return undefined;
      const info = await lstat(entry(name)).catch(() => undefined);
      if (info === undefined) return GONE;
      const dir = info.isDirectory();
      return { name, type: dir ? 'dir' : 'file', size: dir ? 0 : info.size };
    }),
  );
}

const TEXT = new Set(['.txt', '.md', '.csv', '.json', '.log']);

export interface Download {
  stream: Readable;
  size: number;
  /** text/plain for a few text extensions, else application/octet-stream: never HTML. */
  type: string;
}

/**
 * Opens a regular file for download; the checks run on the open file, not on
 * its name again: where it really is first (`confirmOpened`), so a file
 * reached outside the sandbox is a 404 whatever it is. `O_NONBLOCK`: a FIFO
 * opens at once (and is refused below) instead of holding a thread until
 * someone writes to it.
 */
export const openFile = (path: string, root: RealRoot) =>
  blaming([path], root, () => openIn(path, root));

async function openIn(path: string, root: RealRoot): Promise<Download> {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
  const handle = await open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(clientError);
  const info = await closingOnFailure(handle, async () => {
    await confirmOpened(handle, path, root);
    const stat = await handle.stat();
    if (!stat.isFile()) throw new FileApiError(400, 'not a file');
    return stat;
  });
  const type = TEXT.has(extname(path).toLowerCase())
    ? 'text/plain; charset=utf-8'
    : 'application/octet-stream';
  const file = handle.createReadStream();
  const stream = Readable.from(firstBytes(file, info.size), { objectMode: false });
  // Whatever ends the answer closes the file, also before a byte of it was read.
  stream.once('close', () => file.destroy());
  return { stream, size: info.size, type };
}

/**
 * The first `size` bytes of `file`, as the Content-Length sent before them
 * promised: bytes appended since are left out (on a kept-alive connection the
 * client would read them as its next answer), and a file cut shorter since
 * fails the stream: the answer is cut off and its connection closed, never
 * left waiting for bytes that will not come.
 */
async function* firstBytes(file: Readable, size: number): AsyncGenerator<Buffer> {
  let left = size;
  for await (const chunk of file) {
    if (left === 0) return;
    const bytes = (chunk as Buffer).subarray(0, left);
    left -= bytes.length;
    yield bytes;
  }
  if (left > 0) throw new FileApiError(409, 'file changed while sent');
}

/**
 * Moves a file, creating the target's folders. The link-then-unlink never
 * replaces an existing target (rename would, silently). Both run in the
 * folders checked (`inFolder`). The target's folder gone before the link
 * (ENOENT: a failed request beside this one took back a new folder they
 * share) is walked to again, as an upload's (`againIfGone`). A target too
 * deep is refused first (`refuseTooDeep`): the name's fault whatever the
 * sandbox holds, never the sandbox's (`blaming`).
 */
export async function moveFile(from: string, to: string, root: RealRoot): Promise<void> {
  refuseTooDeep(to, root);
  await blaming([from, to], root, () => moveIn(from, to, root));
}

async function moveIn(from: string, to: string, root: RealRoot): Promise<void> {
  await inFolder(dirname(from), root, async (fromEntry) => {
    const source = fromEntry(basename(from));
    const identity = await requireFile(source);
    await againIfGone(() => moveTo(source, identity, to, root));
  });
}

/**
 * Links `source` to `to` (`linkAway`) in its folder, made first
 * (`makeParents`) and taken back should the move fail (`removeEmpty`), as
 * an upload's, with those on the way another move or upload in flight
 * made (`HeldFolders`). Its folder made a file since is a 409
 * (`notAFolder`). A failure once the source is no file (another request
 * moved or deleted it meanwhile) is answered as after that request
 * (`sourceNow`), not walked again: whatever the target's folders were
 * then. Other errors of the link as the file system gives them.
 */
async function moveTo(source: string, identity: string, to: string, root: RealRoot): Promise<void> {
  const folders = new HeldFolders();
  try {
    await folders.enter(to, root).catch(parentError);
    const linked = (toEntry: (name: string) => string) =>
      linkAway(source, identity, toEntry(basename(to)));
    await inOpenedFolder(dirname(to), root, linked).catch(notAFolder);
  } catch (error) {
    await folders.removeEmpty(root);
    throw (await sourceNow(source)) ?? error;
  } finally {
    folders.release();
  }
}

/**
 * The target's folder opened as a file (ENOTDIR): another request stored
 * a file of its name since the walk found or made it, a parent that is not
 * a folder (409), as the walk answers one. Else as it is.
 */
function notAFolder(error: NodeJS.ErrnoException): never {
  throw error.code === 'ENOTDIR' ? parentNotAFolder() : error;
}

/**
 * A move's source no longer a file, as the move would have answered after
 * the request that changed it: gone (404), or something else in its place
 * (400; a folder, which link would refuse as EPERM, a 500). `undefined`
 * while it is a file, or when it cannot be looked at.
 */
const sourceNow = (source: string) =>
  requireFile(source).then(
    () => undefined,
    (error: unknown) => {
      if (error instanceof FileApiError) return error;
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? noSuchFile() : undefined;
    },
  );

/**
 * Links `source` (the file `identity` names) to `target`, then unlinks
 * `source`: a move that never replaces a file. Should the unlink fail
 * (another request moved or deleted the source meanwhile), the new copy is
 * taken back only while `target` is still that file (`unlinkIf`): others
 * may have moved it on and stored a file of their own under its name.
 */
async function linkAway(source: string, identity: string, target: string): Promise<void> {
  await link(source, target);
  await unlink(source).catch(async (error: unknown) => {
    await unlinkIf(target, identity).catch(() => {});
    throw error;
  });
}

/**
 * Removes `path` with `remove` in its folder as checked (`inFolder`): one
 * swapped for a link since keeps what is in it, and nothing of that name
 * where the link leads is removed. A failure leaves it, as another request
 * may hold it.
 */
async function removeInFolder(
  path: string,
  root: RealRoot,
  remove: (path: string) => Promise<void>,
): Promise<void> {
  const named = (entry: (name: string) => string) => remove(entry(basename(path)));
  await inFolder(dirname(path), root, named).catch(() => {});
}

/** Removes those of `folders` that are empty (none holding another request's file), deepest first. */
async function removeEmpty(folders: readonly string[], root: RealRoot): Promise<void> {
  const deepestFirst = [...folders].sort((a, b) => b.length - a.length);
  for (const folder of deepestFirst) await removeInFolder(folder, root, rmdir);
}

/** Deletes a file, in the folder checked (`inFolder`). */
export const removeFile = (path: string, root: RealRoot) =>
  blaming([path], root, () => removeIn(path, root));

async function removeIn(path: string, root: RealRoot): Promise<void> {
  await inFolder(dirname(path), root, async (entry) => {
    const file = entry(basename(path));
    await requireFile(file);
    await unlink(file);
  });
}

/** An upload's byte stream; busboy sets `truncated` when the size limit cut it short. */
export type UploadStream = Readable & { truncated?: boolean };

/** The longest name the usual Linux file systems take, in bytes (the Express storage's limit too). */
const NAME_MAX = 255;

/**
 * Refuses an upload's target holding a name over NAME_MAX bytes before its
 * walk, as the Express example's storage does: met on the way, a parent
 * that is a file answered first (409), and the two examples differed.
 */
function refuseLongNames(target: string): void {
  if (target.split('/').some((name) => Buffer.byteLength(name) > NAME_MAX)) {
    throw nameTooLong();
  }
}

/**
 * The most folders below the sandbox root an upload's or a move's target
 * may be nested in, `uploads/` among them. pathgate's check of a path looks
 * at each folder on its way: a client free to make folders could make 2,000
 * (the 4,043 bytes of `FOLDER_MAX`), and every later check there would block
 * the event loop for about 18 ms; at 32, about 0.3 ms. An app's layout
 * (uploads/<user>/<year>/<month>/<day>/<album>/…) fits in a dozen; the
 * seeded files lie 2 deep.
 */
export const FOLDER_DEPTH_MAX = 32;

/**
 * Refuses (400) a checked `target` of an upload or a move deeper than
 * FOLDER_DEPTH_MAX folders below the root: by its text, before any folder
 * is made or looked at, so also where its folders are there (an
 * operator's), which can still be read, deleted and moved out of.
 */
export function refuseTooDeep(target: string, root: RealRoot): void {
  const folders = relative(root.path, target).split('/').length - 1;
  if (folders > FOLDER_DEPTH_MAX) throw new FileApiError(400, 'too deep');
}

/**
 * The longest path of an upload's folder, in bytes: the Express storage's,
 * whose temporary file (52 bytes with its slash) must fit in Linux's 4,095.
 * This one names its temporary file through the open folder, with no such
 * need; but the two examples answer alike.
 */
const FOLDER_MAX = 4095 - 52;

/**
 * What the Express storage refuses once its walk is done, before its
 * temporary file is made: a target already there (409, before a byte is
 * read; the link refuses one stored since), then a folder too long for
 * that file (`FOLDER_MAX`).
 */
async function refuseAsStorage(entry: string, target: string): Promise<void> {
  const there = await lstat(entry).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return false;
      throw error;
    },
  );
  if (there) throw alreadyExists();
  if (Buffer.byteLength(dirname(target)) > FOLDER_MAX) throw nameTooLong();
}

/** A file's identity: its device and inode. */
const identityOf = ({ dev, ino }: BigIntStats) => `${dev}:${ino}`;

/**
 * Unlinks `path` if it is still the file `identity` names (`identityOf`).
 * Another request acting between the look and the unlink is not excluded,
 * only made unlikely: as the Express storage does.
 */
async function unlinkIf(path: string, identity: string): Promise<void> {
  const there = await lstat(path, { bigint: true }).then(identityOf, () => undefined);
  if (there === identity) await unlink(path);
}

/** How many times a move or an upload makes its folders while a folder on the way keeps going. */
const CREATE_ATTEMPTS = 4;

/**
 * Runs `attempt` (make the folders, then act in the last) again while a
 * folder on the way is gone (ENOENT): a failed request beside this one took
 * back a new folder they share, empty until this one's file is in it.
 * Several can fail in turn, so a few times; one that keeps going ends in
 * the error.
 */
async function againIfGone<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const gone = (error as NodeJS.ErrnoException).code === 'ENOENT';
      if (!gone || tries === CREATE_ATTEMPTS) throw error;
    }
  }
}

/**
 * The folders made by moves and uploads in flight, with how many of them
 * hold each: the one that made it, and those that walked into it since.
 * Any of them that fails removes it once empty, so a folder made for two
 * requests that both fail goes with the second, whichever made it: the
 * first found it holding the other's file, or the other's folder.
 */
const inFlight = new Map<string, number>();

/**
 * The folders one move or upload holds in `inFlight`, to take back those
 * left empty should it fail: those it made, and those on its way another
 * request in flight made. Call `release` once it is over.
 */
class HeldFolders {
  private readonly folders: string[] = [];

  /**
   * Makes the parents of `path`, holding each folder on the way as soon as
   * it is there: each one it makes, and each one found there that another
   * request in flight made (with those above). Not once the walk is over:
   * a request that walks in meanwhile must find it held, and one that fails
   * meanwhile, finding it not empty, gives it up to this one. Errors as
   * `makeParents` gives them.
   */
  enter(path: string, root: RealRoot): Promise<void> {
    return makeParents(path, root, (folder, made) => this.take(folder, made));
  }

  /** A folder on the way: held if made here, else with those above it, where a request in flight made them. */
  private take(folder: string, made: boolean): void {
    if (made) this.hold(folder);
    else
      for (let at = folder; at !== dirname(at); at = dirname(at)) {
        if (inFlight.has(at)) this.hold(at);
      }
  }

  /** Removes those held that are empty (`removeEmpty`). */
  removeEmpty(root: RealRoot): Promise<void> {
    return removeEmpty(this.folders, root);
  }

  /** The request is over: its folders are no longer its to remove. */
  release(): void {
    for (const folder of this.folders.splice(0)) {
      const count = (inFlight.get(folder) ?? 1) - 1;
      if (count === 0) inFlight.delete(folder);
      else inFlight.set(folder, count);
    }
  }

  /** Holds `folder`, once. */
  private hold(folder: string): void {
    if (this.folders.includes(folder)) return;
    this.folders.push(folder);
    inFlight.set(folder, (inFlight.get(folder) ?? 0) + 1);
  }
}

/**
 * One request's uploads, stored one after another and taken back together
 * when a later part fails: the files, then the folders they made or share
 * (`inFlight`). Call `release` once the request is over.
 */
export class Uploads {
  /** The file each target took (`identityOf`): `discard` removes that one, not another request's stored there since. */
  private readonly files = new Map<string, string>();
  private readonly folders = new HeldFolders();

  constructor(private readonly root: RealRoot) {}

  /** The targets stored so far, in order. */
  get stored(): string[] {
    return [...this.files.keys()];
  }

  /**
   * Stores an upload at `target`: streamed into a temporary sibling, then
   * linked into place once complete, so a cut-off or failed upload never
   * appears and an existing file is never replaced (409). Both in the
   * target's folder, opened once its folders are made and confirmed the one
   * checked (`inOpenedFolder`): no file is created, written or named through
   * a folder swapped for a link since. The folders are made again while one
   * on the way is gone (`againIfGone`). A target too deep is refused
   * before any, as a move's (`refuseTooDeep`), then a name too long
   * (`refuseLongNames`). Answers the size written. On failure, call
   * `discard`.
   */
  async save(file: UploadStream, target: string): Promise<number> {
    refuseTooDeep(target, this.root);
    const attempts = async () => {
      refuseLongNames(target);
      return againIfGone(() => this.attempt(file, target)).catch(walkError);
    };
    return blaming([target], this.root, attempts);
  }

  /** One walk to `target`'s folder and the upload stored in it; fs errors as they come (ENOENT: the folder went). */
  private async attempt(file: UploadStream, target: string): Promise<number> {
    await this.folders.enter(target, this.root);
    return inOpenedFolder(dirname(target), this.root, (entry) => this.storeIn(entry, file, target));
  }

  /**
   * Creates the temporary file in the open folder (`entry`), once no file
   * is at the target and its folder leaves room (`refuseAsStorage`), writes
   * `file` into it and links it to `target`'s name there. Only the create
   * fails as the fs does (ENOENT: the folder was removed before it); once
   * `file` is being read, every error is the client's answer
   * (`clientError`), never a walk again.
   */
  private async storeIn(
    entry: (name: string) => string,
    file: UploadStream,
    target: string,
  ): Promise<number> {
    await refuseAsStorage(entry(basename(target)), target);
    const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
    const temp = entry(`.upload-${randomUUID()}.part`);
    const handle = await open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
    try {
      // The file this handle made, whatever its name holds by then: the stream closes the handle.
      const identity = identityOf(await handle.stat({ bigint: true }));
      const out = handle.createWriteStream();
      await pipeline(file, out);
      if (file.truncated) throw new FileApiError(413, 'file too large');
      await link(temp, entry(basename(target)));
      this.files.set(target, identity);
      return out.bytesWritten;
    } catch (error) {
      return clientError(error);
    } finally {
      await unlink(temp).catch(() => {});
    }
  }

  /**
   * Removes what was stored, where it still is (`unlinkIf`: another request
   * may have moved it away and stored its own file there since), then
   * those of its folders that are empty (not holding another upload's
   * file), each in its folder as checked (`removeInFolder`).
   */
  async discard(): Promise<void> {
    const removals = [...this.files].map(([path, identity]) =>
      removeInFolder(path, this.root, (entry) => unlinkIf(entry, identity)),
    );
    await Promise.all(removals);
    await this.folders.removeEmpty(this.root);
  }

  /** The request is over: its folders are no longer its to remove. */
  release(): void {
    this.folders.release();
  }
}
