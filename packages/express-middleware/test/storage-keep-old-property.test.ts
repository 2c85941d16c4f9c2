import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { appPerFile, descriptorsUnder, until } from './helpers.js';
import { NAME, replacingRoute, Sender, textAt } from './overwrite-senders.js';

// overwrite: true, any interleaving of 2-3 requests replacing one name, each
// ending (in any order, between the others' stores too) in a 201, a 413 or
// a cut connection: the name must end with the last file stored by a request
// that succeeded (or the file from before them all), with no hidden file left
// and no descriptor open. The chains test holds the orders found wrong so
// far; this one looks for others.

/**
 * A failed request's removal looks at the name, then acts: puts the old file
 * back (a rename from `.old`) or unlinks it. A few milliseconds between the
 * two, so that a store of another request started meanwhile lands there.
 */
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  // Not a hidden name (`.pathgate-*`): the name itself.
  const atName = (path: unknown) => !String(path).includes('/.pathgate-');
  const later = () => new Promise((resolve) => setTimeout(resolve, 30));
  const rename: typeof fs.rename = async (from, to) => {
    if (String(from).endsWith('.old') && atName(to)) await later();
    return fs.rename(from, to);
  };
  const unlink: typeof fs.unlink = async (path) => {
    if (atName(path)) await later();
    return fs.unlink(path);
  };
  return { ...fs, rename, unlink };
});

const served = appPerFile(replacingRoute);
const uploads = () => join(served.root, 'uploads');
const BEFORE = 'version 1';

type Ending = 'success' | 'too-large' | 'cut';

/** A request stores its next file at NAME (each store settles before the next step), or ends. */
type Step = readonly ['store' | 'end', number];

interface Scenario {
  /** Each request's ending, by index; its files are the stores naming it. */
  readonly endings: readonly Ending[];
  /** Which request stores or ends, in turn: a request ends after its last store. */
  readonly steps: readonly Step[];
  /** Each ending settled before the next step, or every one started and left to settle meanwhile. */
  readonly together: boolean;
}

interface Keyed {
  readonly key: number;
  readonly step: Step;
}

const endsLast = ({ step }: Keyed) => (step[0] === 'end' ? 1 : 0);

/** Steps from the smallest key up, ties stores first, then by request: an order that shrinks to all stores, then all ends. */
const byKey = (keys: readonly Keyed[]) =>
  [...keys]
    .sort((a, b) => a.key - b.key || endsLast(a) - endsLast(b) || a.step[1] - b.step[1])
    .map((k) => k.step);

/** A request's stores, and its end after the last of them. */
const stepsOf = ({ files, end }: { files: number[]; end: number }, index: number): Keyed[] => [
  ...files.map((key) => ({ key, step: ['store', index] as const })),
  { key: Math.max(...files) + end, step: ['end', index] as const },
];

// Orders come from sort keys rather than `chain`ed permutations: fast-check
// shrinks keys and lists on their own, so a failure shrinks to a short case.
const order = fc.nat({ max: 9 });
const scenario: fc.Arbitrary<Scenario> = fc
  .record({
    requests: fc.array(
      fc.record({
        files: fc.array(order, { minLength: 1, maxLength: 2 }),
        ending: fc.constantFrom<Ending>('success', 'too-large', 'cut'),
        end: order,
      }),
      { minLength: 2, maxLength: 3 },
    ),
    together: fc.boolean(),
  })
  .map(({ requests, together }) => ({
    endings: requests.map((r) => r.ending),
    steps: byKey(requests.flatMap(stepsOf)),
    together,
  }));

/** Which request stores each file, one store after another. */
const storesOf = ({ steps }: Scenario) =>
  steps.flatMap(([kind, i]) => (kind === 'store' ? [i] : []));

/** The text of each store, by store: all distinct, all other than BEFORE. */
const textOf = (store: number) => `version ${store + 2}`;

/** The model: the last file a request that succeeded stored, or the file from before. */
function expectedText(s: Scenario): string {
  const last = storesOf(s).findLastIndex((i) => s.endings[i] === 'success');
  return last === -1 ? BEFORE : textOf(last);
}

/**
 * Ends one request; settled once its answer came (201, 413), or for a cut
 * once the error handler saw as many failures as have ended so far.
 */
async function finish(sender: Sender, ending: Ending, failuresSoFar: number): Promise<void> {
  if (ending !== 'cut') return sender.end();
  sender.cut();
  expect(await until(() => served.errors.calls.length >= failuresSoFar)).toBe(true);
}

async function play(s: Scenario): Promise<void> {
  const stores = storesOf(s);
  const texts = s.endings.map((_, i) => stores.flatMap((j, k) => (j === i ? [textOf(k)] : [])));
  const to = { port: served.port, folder: uploads() };
  const senders = texts.map((t, i) => new Sender(to, t, s.endings[i] !== 'success'));
  try {
    let failures = 0;
    const pending: Promise<void>[] = [];
    for (const [kind, i] of s.steps) {
      if (kind === 'store') {
        await (senders[i] as Sender).store();
        continue;
      }
      const ending = s.endings[i] as Ending;
      if (ending !== 'success') failures++;
      const settled = finish(senders[i] as Sender, ending, failures);
      if (s.together) pending.push(settled);
      else await settled;
    }
    const failed = (await Promise.allSettled(pending)).find((p) => p.status === 'rejected');
    if (failed) throw failed.reason;
  } finally {
    // A run that failed midway leaves no request open for the next one.
    for (const sender of senders) sender.cut();
  }
}

/** A fresh uploads folder holding BEFORE at NAME, and no error seen yet. */
function freshFolder(): void {
  rmSync(uploads(), { recursive: true, force: true });
  mkdirSync(uploads());
  writeFileSync(join(uploads(), NAME), BEFORE);
  served.errors.calls.length = 0;
}

describe('overwrite, requests replacing one name in turn, each ending in a 201, a 413 or a cut', () => {
  it('the name ends with the last file of one that succeeded, nothing hidden or open stays', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        freshFolder();
        await play(s);
        const failures = s.endings.filter((e) => e !== 'success').length;
        expect(await until(() => served.errors.calls.length === failures)).toBe(true);
        await until(() => readdirSync(uploads()).join() === NAME);
        expect(readdirSync(uploads())).toEqual([NAME]);
        expect(textAt(uploads())).toBe(expectedText(s));
        await until(() => descriptorsUnder(served.root).length === 0);
        expect(descriptorsUnder(served.root)).toEqual([]);
      }),
      { numRuns: 40 },
    );
  }, 60_000);
});
