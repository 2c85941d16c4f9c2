// Where an open file or folder really is, read back from the kernel, against
// where pathgate checked it: a folder on the way swapped for a link between
// the check and the open is followed by open(), and only seen afterwards.
import { realpathSync } from 'node:fs';
import { type FileHandle, readlink, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';

/**
 * The sandbox root's real path, resolved once (the root may sit under a
 * linked /tmp): where the paths pathgate checks lie, as `resolveSymlinks`
 * resolves the root too. A root not in NFC, as given or as its real path,
 * is refused: pathgate normalizes the root to NFC, on Linux another folder
 * (maybe a link out), where pathgate would check, and the Express storage
 * write, every path.
 */
export class RealRoot {
  readonly path: string;

  constructor(root: string) {
    this.path = realpathSync(root);
    if ([root, this.path].some((name) => name.normalize('NFC') !== name)) {
      throw new Error('the sandbox root is not in Unicode NFC, as pathgate reads it: rename it');
    }
  }

  /**
   * A path to what is open on `handle`, checked at `path`: the descriptor's
   * (`/proc/self/fd/<fd>`), which the kernel follows to the file or folder
   * opened wherever it went since, never again along `path`; undefined when
   * what is open is not what was checked (the kernel's path of it, every
   * link resolved, is not `path`). Where /proc cannot be read (ENOENT: none,
   * as on macOS) there is nothing to compare: `path` itself, the check
   * before the open stands alone.
   */
  async through(handle: FileHandle, path: string): Promise<string | undefined> {
    const expected = this.expected(path);
    if (expected === undefined) return undefined;
    const opened = await readlink(`/proc/self/fd/${handle.fd}`, { encoding: 'buffer' }).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return undefined;
        throw error;
      },
    );
    if (opened === undefined) return path;
    const [live, removed] = expected;
    // ` (deleted)` is a name a file or folder can really have, beside the one
    // checked: only one with no name left (no link) is the checked one removed.
    const same =
      opened.equals(live) || (opened.equals(removed) && (await handle.stat()).nlink === 0);
    return same ? `/proc/self/fd/${handle.fd}` : undefined;
  }

  /**
   * Whether the sandbox's own folders on the way to `path` are broken: the
   * root gone or not a folder, or its folder holding `path` (`uploads`,
   * `public`) not a folder. No name a client sends can do that, so a file
   * operation failing there is the server's fault. That folder missing is
   * not: an upload makes it, and until then it holds nothing.
   */
  async broken(path: string): Promise<boolean> {
    const isFolder = (folder: string) => stat(folder).then((info) => info.isDirectory());
    if (!(await isFolder(this.path).catch(() => false))) return true;
    const [top = ''] = relative(this.path, path).split('/');
    const missing = (error: NodeJS.ErrnoException) => error.code === 'ENOENT';
    return !(await isFolder(join(this.path, top)).catch(missing));
  }

  /**
   * What the kernel gives for a file open at the checked `path`, in bytes;
   * undefined for a path not under the root.
   */
  private expected(path: string): [Buffer, Buffer] | undefined {
    const under = relative(this.path, path);
    if (under === '..' || under.startsWith('../')) return undefined;
    // Bytes, not text: a name that is not UTF-8 must not decode into a match.
    // A file replaced or removed since the open is still the one checked:
    // the kernel then gives its last path with ` (deleted)` after it.
    return [Buffer.from(path), Buffer.from(`${path} (deleted)`)];
  }
}
