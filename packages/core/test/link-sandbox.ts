import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { type FsAccessMode, PermissionPolicy, resolveSymlinks } from '../src/index.js';
import { type Expected, expectedCheck, expectedRoot, simpleRule } from './link-reference.js';
import { buildTree, type Request, request, requestText, type Tree, tree } from './link-tree.js';

// One base folder for the adapters' tests on random link trees: a policy
// with `resolve: resolveSymlinks` whose root is a link (`alias` -> `root`),
// resolved once when it is built, and the reference's decisions under it.

const RULES = ['./public/**', 'rw:./uploads/**'];

export interface LinkSandbox {
  readonly base: string;
  readonly policy: PermissionPolicy;
  /** The policy root, links resolved: `<base>/root`. */
  readonly realRoot: string;
  /** What a route guard must answer for `value` (the reference's, fenced). */
  expected(value: string, mode: FsAccessMode): Expected;
  /** Empties the base and builds `shape`; the values of `sent`, an empty one as `.`. */
  build(shape: Tree, sent: readonly Request[]): string[];
  remove(): void;
}

/** A case: a tree and 1-3 requests into it. */
export const linkCase = fc.tuple(tree, fc.array(request, { minLength: 1, maxLength: 3 }));

export function linkSandbox(prefix: string): LinkSandbox {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  buildTree(base, { dirs: [], entries: [] });
  const root = `${base}/alias`;
  const policy = new PermissionPolicy({
    root,
    permissions: { fs: RULES },
    resolve: resolveSymlinks,
  });
  const realRoot = expectedRoot(root) as string;
  const rules = RULES.map(simpleRule);
  return {
    base,
    policy,
    realRoot,
    expected: (value, mode) =>
      expectedCheck(value, { realRoot, spelledRoot: root, fenced: true }, rules, mode),
    build: (shape, sent) => {
      buildTree(base, shape);
      // An empty value is a missing one to the guard (`missing-path`): `.` names the root.
      return sent.map((one) => requestText(base, one) || '.');
    },
    // rmSync removes links themselves and never follows them.
    remove: () => fs.rmSync(base, { recursive: true, force: true }),
  };
}
