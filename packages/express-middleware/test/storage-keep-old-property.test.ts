import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { appPerFile, descriptorsUnder, until } from './helpers.js';
import { NAME, replacingRoute, Sender, textAt } from './overwrite-senders.js';

// overwrite: true, any interleaving of 2-3 requests replacing one name, each
// ending (in any order) in a 201, a 413 or a cut connection: the name must
// end with the last file stored by a request that succeeded (or the file from
// before them all), with no hidden file left and no descriptor open. The
// chains test holds the orders found wrong so far; this one looks for others.

const served = appPerFile(replacingRoute);
const uploads = () => join(served.root, 'uploads');
const BEFORE = 'version 1';

type Ending = 'success' | 'too-large' | 'cut';

interface Scenario {
  /** Each request's ending, by index; its files are the stores naming it. */
  readonly endings: readonly Ending[];
  /** Which request stores its next file at NAME, one store after another. */
  readonly stores: readonly number[];
  /** The order the requests end in. */
  readonly ends: readonly number[];
  /** Every ending started before any settles, or each settled before the next. */
  readonly together: boolean;
}

/** Indexes of `keys` from the smallest key up, ties by index: an order that shrinks to 0, 1, 2… */
const byKey = (keys: readonly { key: number; index: number }[]) =>
  [...keys].sort((a, b) => a.key - b.key || a.index - b.index).map((k) => k.index);

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
    stores: byKey(requests.flatMap((r, index) => r.files.map((key) => ({ key, index })))),
    ends: byKey(requests.map((r, index) => ({ key: r.end, index }))),
    together,
  }));

/** The text of each store, by store: all distinct, all other than BEFORE. */
const textOf = (store: number) => `version ${store + 2}`;

/** The model: the last file a request that succeeded stored, or the file from before. */
function expectedText({ endings, stores }: Scenario): string {
  const last = stores.findLastIndex((i) => endings[i] === 'success');
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
  const texts = s.endings.map((_, i) => s.stores.flatMap((j, k) => (j === i ? [textOf(k)] : [])));
  const to = { port: served.port, folder: uploads() };
  const senders = texts.map((t, i) => new Sender(to, t, s.endings[i] !== 'success'));
  try {
    for (const i of s.stores) await (senders[i] as Sender).store();
    let failures = 0;
    const pending: Promise<void>[] = [];
    for (const i of s.ends) {
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
