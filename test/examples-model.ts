// A model of the examples' sandbox, for the stateful test of both servers
// (examples-model.test.ts): which files and folders it holds, what the policy
// decides for a name, and the answer each API operation must give. Written
// from the READMEs and DESIGN.md's canonicalization, not from the servers' code.
import { STATUS_CODES } from 'node:http';
import { extname } from 'node:path';
import { denyBody, type GuardDenyReason } from '@pathgate/core';

/** An answer as the test compares it: status, media type, and the body (parsed when JSON). */
export interface Observed {
  status: number;
  type: string;
  body: unknown;
}

/** The sandbox's contents: files (path from the root → text) and folders (paths from the root). */
export interface Tree {
  files: Map<string, string>;
  dirs: Set<string>;
}

type Verdict = { ok: true; rel: string[] } | { ok: false; reason: GuardDenyReason };
type Kind = 'file' | 'dir' | 'missing';
type Placed = { ok: true; made: string[] } | { ok: false; answer: Observed };
type Found = { ok: true; path: string } | { ok: false; answer: Observed };

/** The examples' policy: `./public/**` read only, `rw:./uploads/**`, dotfiles never matched. */
const READABLE = new Set(['public', 'uploads']);
const WRITABLE = new Set(['uploads']);
const NAME_MAX = 255;
/** The most folders below the sandbox root an upload's or a move's target may lie in (`uploads/` counted). */
export const FOLDER_DEPTH_MAX = 32;
/** Linux's longest path, in bytes; an upload's folder leaves room for the Express storage's temporary file. */
const PATH_MAX = 4095;
const FOLDER_MAX = PATH_MAX - 52;
const TEXT = new Set(['.txt', '.md', '.csv', '.json', '.log']);

const json = (status: number, body: unknown): Observed => ({
  status,
  type: 'application/json',
  body,
});
/** A failure's answer: `{ statusCode, error, message }`. */
export const failed = (status: number, message: string) =>
  json(status, { statusCode: status, error: STATUS_CODES[status], message });
const denied = (reason: GuardDenyReason, label: string) => json(403, denyBody({ reason, label }));
const tooLong = (segment: string) => Buffer.byteLength(segment) > NAME_MAX;
/** Whether a target at `rel` (its segments under the root, the file's last) lies too deep for a client to make. */
const tooDeep = (rel: readonly string[]) => rel.length - 1 > FOLDER_DEPTH_MAX;

/**
 * DESIGN.md's steps 4–7 for a value without a NUL: its segments under the
 * root, or undefined when it lies outside (absolute, or `..` above the root:
 * no generated name climbs back in by the root's own name). `under` joins a
 * value as relative, also one starting with `/`, as an upload's filename.
 */
function lexical(value: string, under?: string): string[] | undefined {
  const text = value.normalize('NFC');
  if (under === undefined && text.startsWith('/')) return undefined;
  const segments: string[] = [];
  for (const segment of (under === undefined ? text : `${under}/${text}`).split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment !== '..') segments.push(segment);
    else if (segments.pop() === undefined) return undefined;
  }
  return segments;
}

export class SandboxModel {
  readonly files: Map<string, string>;
  readonly dirs: Set<string>;

  /** `tree`: what the sandbox holds; `rootBytes`: the length of its path. */
  constructor(
    tree: Tree,
    private readonly rootBytes: number,
  ) {
    this.files = new Map(tree.files);
    this.dirs = new Set(tree.dirs);
  }

  /** The copies moves linked ahead of their answer (`moveLinked`), by target: the source and the content. */
  private readonly linked = new Map<string, { from: string; text: string }>();

  /** A model of the same sandbox, holding what this one holds now, to act on apart. */
  clone(): SandboxModel {
    const copy = new SandboxModel(this, this.rootBytes);
    for (const [to, link] of this.linked) copy.linked.set(to, link);
    return copy;
  }

  /** The length of `rel`'s path, the sandbox's included, in bytes. */
  private bytes(rel: readonly string[]): number {
    return this.rootBytes + rel.reduce((sum, name) => sum + 1 + Buffer.byteLength(name), 0);
  }

  /** What is at `rel`, or the answer when nothing is: a name too long (400), or none there (404). */
  private there(rel: readonly string[]): Exclude<Kind, 'missing'> | Observed {
    if (this.meetsLongName(rel)) return failed(400, 'name too long');
    const kind = this.kind(rel);
    return kind === 'missing' ? failed(404, 'no such file or folder') : kind;
  }

  /** What `rel` is: below a file or a missing folder nothing is. */
  private kind(rel: readonly string[]): Kind {
    const path = rel.join('/');
    if (path === '' || this.dirs.has(path)) return 'dir';
    return this.files.has(path) ? 'file' : 'missing';
  }

  /** resolveSymlinks refuses a path over PATH_MAX. */
  private resolveFails(rel: readonly string[]): boolean {
    return this.bytes(rel) > PATH_MAX;
  }

  /**
   * Whether a look-up of `rel` meets a name over 255 bytes in a folder that
   * is there (ENAMETOOLONG, the examples' 400): resolveSymlinks takes it as
   * missing, and the rules judge it, so the file operation is what fails.
   */
  private meetsLongName(rel: readonly string[]): boolean {
    for (const [i, segment] of rel.entries()) {
      if (this.kind(rel.slice(0, i)) !== 'dir') return false;
      if (tooLong(segment)) return true;
    }
    return false;
  }

  /** The policy's decision for `value` (an empty one is missing). */
  private judge(value: string, mode: 'read' | 'write', under?: string): Verdict {
    if (value === '') return { ok: false, reason: 'missing-path' };
    if (value.includes('\0')) return { ok: false, reason: 'nul-byte' };
    const rel = lexical(value, under);
    if (rel === undefined) return { ok: false, reason: 'path-not-in-allowlist' };
    if (this.resolveFails(rel)) return { ok: false, reason: 'resolve-failed' };
    const top = rel[0] ?? '';
    if (!READABLE.has(top) || rel.some((segment) => segment.startsWith('.'))) {
      return { ok: false, reason: 'path-not-in-allowlist' };
    }
    if (mode === 'write' && !WRITABLE.has(top)) return { ok: false, reason: 'mode-not-permitted' };
    return { ok: true, rel };
  }

  /**
   * Where a new file at `rel` goes: its missing folders, made one by one,
   * or the failure (nothing made is kept): a parent that is a file, a name
   * too long to make, a target already there (a file or a folder).
   */
  private place(rel: readonly string[]): Placed {
    for (let i = 1; i < rel.length; i++) {
      const kind = this.kind(rel.slice(0, i));
      if (kind === 'file') return { ok: false, answer: failed(409, 'a parent is not a folder') };
      if (kind === 'dir') continue;
      // The folders to make, from rel[i - 1], and the file: mkdir refuses a name too long.
      if (rel.slice(i - 1).some(tooLong)) {
        return { ok: false, answer: failed(400, 'name too long') };
      }
      const made: string[] = [];
      for (let depth = i; depth < rel.length; depth++) made.push(rel.slice(0, depth).join('/'));
      return { ok: true, made };
    }
    // Every folder is there: a name too long for the last one is what fails.
    if (tooLong(rel.at(-1) ?? '')) return { ok: false, answer: failed(400, 'name too long') };
    if (this.kind(rel) !== 'missing') return { ok: false, answer: failed(409, 'already exists') };
    return { ok: true, made: [] };
  }

  /** Stores `text` at `rel`, in the folders `made`. */
  private store(rel: readonly string[], text: string, made: readonly string[]): void {
    for (const dir of made) this.dirs.add(dir);
    this.files.set(rel.join('/'), text);
  }

  list(dir: string): Observed {
    const verdict = this.judge(dir, 'read');
    if (!verdict.ok) return denied(verdict.reason, 'query.dir');
    const kind = this.there(verdict.rel);
    if (typeof kind !== 'string') return kind;
    if (kind === 'file') return failed(400, 'not a folder');
    return json(200, { entries: this.entries(verdict.rel.join('/')) });
  }

  /** A folder's entries as a listing gives them: sorted by name, folders of size 0. */
  private entries(dir: string) {
    const prefix = dir === '' ? '' : `${dir}/`;
    const below = (path: string) =>
      path.startsWith(prefix) && !path.slice(prefix.length).includes('/');
    const name = (path: string) => path.slice(prefix.length);
    const dirs = [...this.dirs]
      .filter(below)
      .map((path) => ({ name: name(path), type: 'dir', size: 0 }));
    const files = [...this.files]
      .filter(([path]) => below(path))
      .map(([path, text]) => ({ name: name(path), type: 'file', size: Buffer.byteLength(text) }));
    return [...dirs, ...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  download(path: string): Observed {
    const found = this.file(path, 'read');
    if (!found.ok) return found.answer;
    const text = TEXT.has(extname(found.path).toLowerCase());
    const type = text ? 'text/plain' : 'application/octet-stream';
    return { status: 200, type, body: this.files.get(found.path) };
  }

  remove(path: string): Observed {
    const found = this.file(path, 'write');
    if (!found.ok) return found.answer;
    this.files.delete(found.path);
    return json(200, { deleted: found.path });
  }

  /** The file a download or a delete names (`/files/<path>`), or their answer when it is none. */
  private file(path: string, mode: 'read' | 'write'): Found {
    const verdict = this.judge(path, mode);
    if (!verdict.ok) return { ok: false, answer: denied(verdict.reason, 'params.*') };
    const kind = this.there(verdict.rel);
    if (typeof kind !== 'string') return { ok: false, answer: kind };
    if (kind === 'dir') return { ok: false, answer: failed(400, 'not a file') };
    return { ok: true, path: verdict.rel.join('/') };
  }

  move(from: string, to: string): Observed {
    const source = this.judge(from, 'write');
    if (!source.ok) return denied(source.reason, 'body.from');
    const target = this.judge(to, 'write');
    if (!target.ok) return denied(target.reason, 'body.to');
    // Judged by its text, before the source or any folder is looked at.
    if (tooDeep(target.rel)) return failed(400, 'too deep');
    const [fromPath, toPath] = [source.rel.join('/'), target.rel.join('/')];
    const link = this.linked.get(toPath);
    if (link?.from === fromPath) {
      this.linked.delete(toPath);
      // Its copy is there: the source goes, or, gone meanwhile, the copy is taken back (if still there).
      if (this.kind(source.rel) === 'file') {
        this.files.delete(fromPath);
        return json(200, { moved: fromPath, to: toPath });
      }
      if (this.files.get(toPath) === link.text) this.files.delete(toPath);
    }
    const kind = this.there(source.rel);
    if (typeof kind !== 'string') return kind;
    if (kind === 'dir') return failed(400, 'not a file');
    const placed = this.place(target.rel);
    if (!placed.ok) return placed.answer;
    const text = this.files.get(source.rel.join('/')) ?? '';
    this.files.delete(source.rel.join('/'));
    this.store(target.rel, text, placed.made);
    return json(200, { moved: source.rel.join('/'), to: target.rel.join('/') });
  }

  /**
   * What a move does before its file arrives, its source a file: makes the
   * target's missing folders (`ahead`). Answers those it made.
   */
  moveAhead(from: string, to: string): string[] {
    const source = this.judge(from, 'write');
    return source.ok && this.kind(source.rel) === 'file' ? this.ahead(to) : [];
  }

  /**
   * `moveAhead`, then the link to the target's name a move makes before it
   * unlinks its source (the examples' READMEs): a request meanwhile meets
   * the file under both names. Answers the folders made.
   */
  moveLinked(from: string, to: string): string[] {
    const made = this.moveAhead(from, to);
    const [source, target] = [this.judge(from, 'write'), this.judge(to, 'write')];
    if (!source.ok || !target.ok || tooDeep(target.rel) || this.kind(source.rel) !== 'file') {
      return made;
    }
    const placed = this.place(target.rel);
    if (!placed.ok || placed.made.length > 0) return made;
    const text = this.files.get(source.rel.join('/')) ?? '';
    this.files.set(target.rel.join('/'), text);
    this.linked.set(target.rel.join('/'), { from: source.rel.join('/'), text });
    return made;
  }

  /** What an upload does before its file arrives: makes the target's missing folders (`ahead`). */
  uploadAhead(filename: string): string[] {
    return this.ahead(filename, 'uploads');
  }

  /**
   * Makes the missing folders of a target that a file can be stored at
   * (`place`), as the examples do before the file arrives: a request sent
   * meanwhile meets them. Answers those made.
   */
  private ahead(value: string, under?: string): string[] {
    const verdict = this.judge(value, 'write', under);
    const refused = !verdict.ok || tooDeep(verdict.rel) || verdict.rel.some(tooLong);
    if (refused || verdict.rel.length < 2) return [];
    const placed = this.place(verdict.rel);
    if (!placed.ok) return [];
    for (const dir of placed.made) this.dirs.add(dir);
    return placed.made;
  }

  /** Removes those of `made` that are empty, deepest first: as a request that failed after making them. */
  takeBack(made: readonly string[]): void {
    for (const dir of [...made].reverse()) {
      const inside = (path: string) => path.startsWith(`${dir}/`);
      if (![...this.dirs, ...this.files.keys()].some(inside)) this.dirs.delete(dir);
    }
  }

  /** An upload of `text` named `filename` (inside uploads/). */
  upload(filename: string, text: string): Observed {
    const verdict = this.judge(filename, 'write', 'uploads');
    if (!verdict.ok) return denied(verdict.reason, 'file file');
    // A name that names a folder (`x/`, `x/..`, uploads/ itself) is no file's.
    const name = filename.slice(filename.lastIndexOf('/') + 1);
    if (['', '.', '..'].includes(name) || verdict.rel.length === 1) {
      return denied('missing-path', 'file file');
    }
    // Refused before the walk, too deep first, then a name too long, as the Express storage does.
    if (tooDeep(verdict.rel)) return failed(400, 'too deep');
    if (verdict.rel.some(tooLong)) return failed(400, 'name too long');
    const placed = this.place(verdict.rel);
    if (!placed.ok) return placed.answer;
    // The Express storage's temporary file must fit beside the target: nothing made is kept.
    if (this.bytes(verdict.rel.slice(0, -1)) > FOLDER_MAX) return failed(400, 'name too long');
    this.store(verdict.rel, text, placed.made);
    return json(201, { uploaded: verdict.rel.join('/'), size: Buffer.byteLength(text) });
  }
}
