import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CheckResult,
  checkFs,
  compileRouteGuard,
  type FsAccessMode,
  isInside,
  PermissionPolicy,
  resolveSymlinks,
} from '../src/index.js';
import { ANCHOR_EVERY } from '../src/walked-folder.js';
import { runGuard } from './guard-run.js';
import {
  expectedCheck,
  expectedRoot,
  namesBelow,
  type Roots,
  type SimpleRule,
  simpleRule,
} from './link-reference.js';
import { buildTree, linkOut, ROOTS, request, requestText, tree } from './link-tree.js';

// checkFs with `resolve: resolveSymlinks` against the operating system, on
// random trees of folders, files and links (relative, absolute, dangling,
// loops, out of the root and back, through `..`, chains) and random request
// paths into them: the decision, and the canonical path it reports, must be
// the reference's (link-reference.ts), and so must `isInside`'s answer. The
// route guard's too, fenced: its walk of a client's value is bounded to the root.

const RULE_SETS = [['./public/**', 'rw:./uploads/**'], ['./**'], ['rw:./a/*', './public/a/**']];
const MODES: readonly FsAccessMode[] = ['read', 'write'];
const SEED = 20261205;

let top = '';
let base = '';

beforeAll(() => {
  top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pathgate-link-diff-')));
});

afterAll(() => {
  // rmSync removes links themselves and never follows them.
  if (top !== '') fs.rmSync(top, { recursive: true, force: true });
});

/**
 * Where the trees are built: deep down, resolveSymlinks' walk holds a folder
 * open every ANCHOR_EVERY folders and looks names up from it
 * (walked-folder.ts). `depth` is the trees' folder's depth below `/`, as a
 * count of ANCHOR_EVERY: 0 at the temp folder, else a folder that deep, so
 * that the walk takes hold in a tree's first level, and again.
 */
const PLACES = [
  { depth: 0, label: 'in the temp folder', runs: 300 },
  { depth: 1, label: 'held open from its first level', runs: 150 },
  { depth: 2, label: 'held open twice', runs: 100 },
];

/** A folder `depth` × ANCHOR_EVERY - 1 folders below `/`, made below `top`; `top` for 0. */
function placeAt(depth: number): string {
  const above = depth * ANCHOR_EVERY - 1 - top.split('/').length + 1;
  const place = depth === 0 ? top : `${top}${'/d'.repeat(above)}`;
  fs.mkdirSync(place, { recursive: true });
  return place;
}

/** checkFs's answer, cut to what the reference predicts. */
function actualCheck(policy: PermissionPolicy, value: string, mode: FsAccessMode): unknown {
  return predicted(checkFs(policy, value, mode));
}

/** The route guard's decision on a body's `p`, cut to what the reference predicts. */
function actualGuard(policy: PermissionPolicy, value: string, mode: FsAccessMode): unknown {
  const guard = compileRouteGuard(policy, { mode, paths: [{ body: 'p' }] }, 'POST /x');
  const { result, info } = runGuard(guard, { body: { p: value } });
  return result.ok ? { outcome: 'allow', path: info.body.p } : predicted(result.denial.result);
}

/** Both modes' route guard decisions on `value` must be the reference's, fenced. */
function expectGuard(policy: PermissionPolicy, value: string, roots: Roots, rules: SimpleRule[]) {
  // An empty value is a missing one to the guard (`missing-path`): `.` names the root.
  const sent = value || '.';
  for (const mode of MODES) {
    const want = expectedCheck(sent, { ...roots, fenced: true }, rules, mode);
    const got = actualGuard(policy, sent, mode);
    expect({ value: sent, mode, guard: got }).toEqual({ value: sent, mode, guard: want });
  }
}

/** A decision cut to what the reference predicts. */
function predicted(result: CheckResult | undefined): unknown {
  if (result === undefined) return undefined;
  if (result.outcome === 'allow') return { outcome: 'allow', path: result.path };
  return result.reason === 'resolve-failed'
    ? { outcome: 'deny', reason: result.reason }
    : { outcome: 'deny', reason: result.reason, path: result.path };
}

describe.each(PLACES)('resolveSymlinks on a tree $label', ({ depth, runs }) => {
  beforeAll(() => {
    base = placeAt(depth);
  });

  describe('through checkFs, against the operating system', () => {
    it('decides and reports every path of a random tree as the kernel resolves it', () => {
      fc.assert(
        fc.property(
          tree,
          fc.constantFrom(...ROOTS),
          fc.constantFrom(...RULE_SETS),
          fc.array(request, { minLength: 1, maxLength: 8 }),
          (shape, rootName, fsRules, requests) => {
            buildTree(base, shape);
            const root = `${base}/${rootName}`;
            const realRoot = expectedRoot(root);
            const build = () =>
              new PermissionPolicy({
                root,
                permissions: { fs: fsRules },
                resolve: resolveSymlinks,
              });
            // A root that cannot be resolved (a loop) is refused when the policy is built.
            if (realRoot === null) return void expect(build).toThrow(TypeError);
            const policy = build();
            const roots = { realRoot, spelledRoot: root, fenced: false };
            const rules = fsRules.map(simpleRule);
            for (const sent of requests) {
              const value = requestText(base, sent);
              // The predicates resolve the root and the value the same way.
              const want = expectedCheck(value, roots, rules, 'read');
              const inside = 'path' in want && namesBelow(want.path, realRoot) !== null;
              expect({
                value,
                inside: isInside(value, root, { resolve: resolveSymlinks }),
              }).toEqual({
                value,
                inside,
              });
              for (const mode of MODES) {
                const want = expectedCheck(value, roots, rules, mode);
                expect({ value, mode, got: actualCheck(policy, value, mode) }).toEqual({
                  value,
                  mode,
                  got: want,
                });
              }
              expectGuard(policy, value, roots, rules);
            }
          },
        ),
        { seed: SEED, numRuns: runs },
      );
    }, 30_000);
  });

  describe('the route guard, through a link in the root that leads out', () => {
    it('decides as the reference bounded to the root, whatever lies beyond the link', () => {
      fc.assert(
        fc.property(
          linkOut,
          fc.constantFrom('root', 'alias', 'alias2'),
          fc.constantFrom(...RULE_SETS),
          ({ shape, requests }, rootName, fsRules) => {
            buildTree(base, shape);
            const root = `${base}/${rootName}`;
            const policy = new PermissionPolicy({
              root,
              permissions: { fs: fsRules },
              resolve: resolveSymlinks,
            });
            const roots = { realRoot: `${base}/root`, spelledRoot: root, fenced: true };
            const rules = fsRules.map(simpleRule);
            for (const value of requests) expectGuard(policy, value, roots, rules);
          },
        ),
        { seed: SEED, numRuns: runs },
      );
    }, 30_000);
  });
});
