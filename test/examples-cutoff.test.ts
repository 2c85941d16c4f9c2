import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { campaignTimeout } from './campaign.js';
import { type Answered, Holdings } from './cutoff-invariants.js';
import { batches, contentOf, label, send, type Timed } from './cutoff-requests.js';
import { NOTHING_AROUND, servedPairForSuite } from './examples-model-apps.js';
import { idle } from './process-idle.js';

// Concurrent uploads that fail part-way, sent to both examples: cut off
// (the client hangs up mid-body), carrying a second file (the examples
// take one), over the size limit; on names that share new folders or are
// the same, beside moves and deletes of those names. The order of a failed
// upload's errors varies, so no exact model: once every request is done
// (answered, or its connection closed, and the server idle), no answer is
// a 5xx, every file is the whole content of an upload answered 201 (or a
// seed), at its name or where a 2xx move put it, never a prefix nor a
// failed upload's (but the file a 2xx move took from a failed upload's
// name before its second file failed it, as the READMEs allow: seed 4002
// with 150 runs), and once; a stored file goes only by a 2xx move or
// delete of its name; no temporary file is left, nor an empty folder that
// only failed requests made. Held requests send their last byte (or hang
// up) in one tick, so that the server runs them side by side. A known gap
// is let through (`movesKnown`), met on seeds 8, 13, 24, 31, 32 and 39 of
// 40 (100 runs each): the Express example leaves a new folder its failing
// move and a failing upload shared, as the storage of @pathgate/express
// knows its own uploads' folders only, not the example's moves.

const SEED = 20261206;
const RUNS = Number(process.env.CUTOFF_RUNS ?? 30);
const seed = Number(process.env.CUTOFF_SEED ?? SEED);
// CUTOFF_TIMEOUT (ms) bounds the test; without it, the bound grows with CUTOFF_RUNS.
const TIMEOUT = campaignTimeout('CUTOFF_TIMEOUT', RUNS, 4_000);

/** Sends `batch` to the server at `port`, the held requests released in one tick; their statuses in order. */
async function sendBatch(port: number, batch: readonly Timed[], contents: readonly string[]) {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const sent = batch.map((timed, i) => send(port, timed, contents[i] ?? '', released));
  await Promise.all(sent.filter((_, i) => batch[i]?.held).map(({ ready }) => ready));
  release();
  return Promise.all(sent.map(({ status }) => status));
}

describe('both examples, sent uploads that fail part-way at once', () => {
  const pair = servedPairForSuite();

  it(
    'keep whole uploads answered 201 only, no temporary file, no folder only failures made',
    async () => {
      let serial = 0;
      await fc.assert(
        fc.asyncProperty(batches, async (runs) => {
          const start = pair.reseed();
          const holdings = new Map(
            pair.ports().map(({ name }) => [name, new Holdings(start, name === 'fastify')]),
          );
          for (const batch of runs) {
            const contents = batch.map(({ request }) =>
              contentOf(++serial, request.operation === 'upload' ? request.size : 0),
            );
            const statuses = await Promise.all(
              pair.ports().map(({ port }) => sendBatch(port, batch, contents)),
            );
            await idle();
            for (const [index, { name, tree, around }] of pair.sandboxes().entries()) {
              const answers: Answered[] = batch.map(({ request }, i) => ({
                request,
                content: contents[i] ?? '',
                status: statuses[index]?.[i],
              }));
              const said = answers.map((a) => `${label(a.request)} → ${a.status ?? 'closed'}`);
              const problems = (holdings.get(name) as Holdings).judge(answers, tree);
              expect(problems, `${name}:\n${said.join('\n')}`).toEqual([]);
              expect(around, `${name}: beside the sandbox`).toEqual(NOTHING_AROUND);
            }
          }
        }),
        { seed, numRuns: RUNS },
      );
    },
    TIMEOUT,
  );
});
