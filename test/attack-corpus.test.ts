import { checkFs, isInside, type PathgateInfo, type PathSpec } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import { REASONS as DENY_REASONS } from './answer.js';
import {
  type Denied,
  FRAMEWORKS,
  forbidden,
  type Got,
  type Handed,
  send,
  sendBytes,
  watchApps,
} from './apps.js';
import {
  CORPUS,
  type CorpusRow,
  decide,
  type Expected,
  fileParts,
  handedValue,
  LOCATIONS,
  pathsOf,
  policy,
  ROOT,
  ROUTES,
  requestOf,
  type Side,
  sideOf,
} from './attack-corpus.js';

// The shared attack corpus (attack-corpus.ts) through (a) the core, given
// the value each framework hands over, (b) the Fastify plugin and (c) the
// Express middleware over real HTTP on 127.0.0.1. All three must give each
// row's hand-written answer: the status, the 403 body with its reason and
// label, and for an allowed request the canonical paths the handler gets,
// which must lie inside the root and match an allowing rule. A counter
// proves no handler ran on a deny.

/** The expected paths, in the shape `pathsOf` gives (files: always a list). */
function expectedPaths(row: CorpusRow, expected: Expected & { status: 200 }): unknown {
  return row.at === 'multipart' ? [expected.path].flat() : expected.path;
}

/** A string value and what checkFs is asked about it (joined under the spec's `under`). */
function plainValue(row: CorpusRow, value: unknown): string | undefined {
  const spec: PathSpec | undefined = LOCATIONS[row.at].route.paths[0];
  const under = spec?.under;
  if (row.at === 'multipart') {
    const parts = fileParts(value);
    const [only] = parts;
    if (parts.length !== 1 || only?.[0] !== 'upload' || !only[1]) return undefined;
    return `${under}/${only[1]}`;
  }
  if (row.at === 'json' || row.at === 'json-deep' || typeof value !== 'string' || value === '') {
    return undefined;
  }
  return under === undefined ? value : `${under}/${value}`;
}

/** Sides that reach pathgate (200 or 403), once each. */
function coreSides(row: CorpusRow): Side[] {
  const sides = 'expect' in row ? [row] : [row.fastify, row.express];
  return sides.filter((s) => s.expect.status === 200 || s.expect.status === 403);
}

const CORE_ROWS = CORPUS.filter((row) => coreSides(row).length > 0);
/** The reasons a request can be denied for: a policy's relative root fails its build instead. */
const REASONS = new Set<string>(DENY_REASONS.filter((reason) => reason !== 'relative-root'));

/** The guard's own reasons, which checkFs on the same value does not give. */
const GUARD_ONLY = new Set(['missing-path', 'path-too-long']);

describe('the corpus itself', () => {
  it('covers every location, with unique names', () => {
    for (const at of Object.keys(LOCATIONS)) {
      const names = CORPUS.filter((row) => row.at === at).map((row) => row.name);
      expect(names.length, at).toBeGreaterThan(at === 'upload-json' ? 3 : 10);
      expect(new Set(names).size, at).toBe(names.length);
    }
  });

  it('never expects a path outside the root to be allowed', () => {
    for (const row of CORPUS) {
      for (const framework of FRAMEWORKS) {
        const { expect: expected } = sideOf(row, framework);
        if (expected.status !== 200) continue;
        for (const path of [expected.path].flat()) {
          expect(path === ROOT || path.startsWith(`${ROOT}/`), `${row.name}: ${path}`).toBe(true);
        }
      }
    }
  });

  it('says why wherever the frameworks differ, and names only documented reasons', () => {
    for (const row of CORPUS) {
      if (!('expect' in row)) expect(row.why.length, row.name).toBeGreaterThan(20);
      for (const framework of FRAMEWORKS) {
        const { expect: expected } = sideOf(row, framework);
        if (expected.status === 403) expect(REASONS.has(expected.reason), row.name).toBe(true);
        if (expected.status !== 200 && expected.status !== 403) {
          expect(expected.by.length, row.name).toBeGreaterThan(10);
        }
      }
    }
  });
});

describe('(a) the core, given the value each framework hands over', () => {
  it.each(CORE_ROWS)('$at: $name', (row) => {
    for (const side of coreSides(row)) {
      const value = handedValue(row, side);
      const answer = decide(row.at, value);
      const expected = side.expect;
      if (expected.status === 200) {
        expect(answer.status).toBe(200);
        if (answer.status !== 200) continue;
        expect(pathsOf(row.at, answer.info)).toEqual(expectedPaths(row, expected));
      } else if (expected.status === 403) {
        const label = expected.label ?? LOCATIONS[row.at].label;
        expect(answer).toMatchObject({ status: 403, denial: { reason: expected.reason, label } });
      }
      // checkFs on the value itself agrees, wherever it is one plain string.
      const plain = plainValue(row, value);
      if (plain === undefined) continue;
      const { mode } = LOCATIONS[row.at].route;
      const result = checkFs(policy, plain, mode);
      if (expected.status === 200) {
        const [path] = [expected.path].flat();
        expect(result).toMatchObject({ outcome: 'allow', path });
      } else if (expected.status === 403 && !GUARD_ONLY.has(expected.reason)) {
        expect(result).toMatchObject({ outcome: 'deny', reason: expected.reason });
      }
    }
  });
});

const seen = watchApps(policy, ROUTES);

function deliver(port: number, row: CorpusRow): Promise<Got> {
  const request = requestOf(row);
  return 'head' in request ? sendBytes(port, request.head) : send(port, request.sent);
}

/** The value the framework handed over, where the row's location reads it. */
function selected(row: CorpusRow, handed: Handed): unknown {
  const location = LOCATIONS[row.at];
  if (location.source === 'body' || row.at === 'upload-json') return handed.body;
  const from = handed[location.source as 'params' | 'query' | 'headers'] as Record<string, unknown>;
  const value = Object.hasOwn(from, location.key) ? from[location.key] : undefined;
  // Express 5 gives a named wildcard as its segments; the adapter joins them with `/`.
  return Array.isArray(value) && location.source === 'params' ? value.join('/') : value;
}

describe.each(FRAMEWORKS)('(b, c) %s over HTTP', (framework) => {
  it.each(CORPUS)('$at: $name', async (row) => {
    const side = sideOf(row, framework);
    const expected = side.expect;
    const { route } = LOCATIONS[row.at];
    seen.clear(framework);
    const before = seen.calls[framework];

    const got = await deliver(seen.apps[framework].port, row);

    if (expected.status === 200) {
      expect(got.status).toBe(200);
      expect(seen.calls[framework] - before).toBe(1);
      expect(seen.denied[framework]).toEqual([]);
      const { pathgate } = got.body as { pathgate: PathgateInfo };
      expect(pathsOf(row.at, pathgate)).toEqual(expectedPaths(row, expected));
      // The adapter's info is the core's for the value the framework handed over.
      const value = handedValue(row, side);
      expect(decide(row.at, value)).toEqual({ status: 200, info: pathgate });
      if (row.at !== 'multipart') {
        expect(selected(row, seen.handled[framework][0] as Handed)).toEqual(value);
      }
      // Independently: each path lies inside the root and an allowing rule matches it.
      for (const path of [pathsOf(row.at, pathgate)].flat() as string[]) {
        expect(isInside(path, ROOT)).toBe(true);
        expect(checkFs(policy, path, route.mode).outcome).toBe('allow');
      }
    } else if (expected.status === 403) {
      const label = expected.label ?? LOCATIONS[row.at].label;
      expect(got).toEqual({ status: 403, body: forbidden(expected.reason, label) });
      expect(seen.calls[framework] - before).toBe(0);
      expect(seen.denied[framework]).toHaveLength(1);
      const [{ denial, handed }] = seen.denied[framework] as [Denied];
      expect({ reason: denial.reason, label: denial.label }).toEqual({
        reason: expected.reason,
        label,
      });
      // The core, given the row's value, denies the same canonical path.
      const value = handedValue(row, side);
      const core = decide(row.at, value);
      expect(core.status).toBe(403);
      if (core.status === 403) expect(denial.result?.path).toBe(core.denial.result?.path);
      if (row.at !== 'multipart') expect(selected(row, handed)).toEqual(value);
    } else {
      // Refused before pathgate: no deny, no handler.
      expect(got.status).toBe(expected.status);
      expect(seen.calls[framework] - before).toBe(0);
      expect(seen.denied[framework]).toEqual([]);
    }
  });
});
