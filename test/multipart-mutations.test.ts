import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { FRAMEWORKS, type Framework, send as sendToApp, watchApps } from './apps.js';
import { policy, ROUTES } from './attack-corpus.js';
import { type Answered, Holdings } from './cutoff-invariants.js';
import { send as sendToExample } from './examples.js';
import type { Tree } from './examples-model.js';
import { NOTHING_AROUND, servedPairForSuite } from './examples-model-apps.js';
import { descriptors } from './fault-clients.js';
import { adapterProblems, exampleProblems, onlyAnswer } from './multipart-answers.js';
import { type Plan, plans, type Rendered, render, type Target } from './multipart-mutations.js';
import { idle } from './process-idle.js';
import { exchangeRaw, type RawResponse, rawRequest } from './raw-http.js';

// Valid uploads (allowed and denied names, a field, several files) with 1
// to 5 random mutations of their bytes and headers (multipart-mutations.ts),
// sent over a raw socket to both examples' /api/upload, which write to
// disk, and to both adapters' library route (test/apps.ts, in memory). No
// exact model: every request is answered (one answer before the socket
// closes), never a 5xx, a 4xx in the JSON its server documents; once the
// process is idle the sandbox holds the seed and the uploads answered 201,
// each a whole part of its body, at the name answered, and no temporary
// file, no folder a failure made, nothing beside the sandbox; each server
// still answers; no descriptor is left open. MFUZZ_SEED and MFUZZ_RUNS
// override the fixed seed and the 120 runs; MFUZZ_PATH replays one run
// (fast-check's path) without shrinking. Known to fail on some seeds, as
// both parsers can hang (busboy-hangs.test.ts): seed 2 at run 916 and
// seed 31 at run 14 (a second file past the Fastify example's limit of
// one), seed 21 at run 994 (the Express servers; before d3ebcee
// the Express example also kept its temporary file open once its client
// left); none of seeds 11 to 20 and 32 to 40 in 120 runs. Of seeds 41 to
// 195 in 120 runs, busboy 1.6 hangs on 51, 96, 98, 101, 141, 148 and 161
// (a closing delimiter first or after a part), @fastify/busboy on 102, 157
// and 187 (a skipped part); on 75 and 126 the Express example stores no
// upload (75 does at run 175). A replay renders its bodies from serial 1,
// and the serial is in names and contents: one that hangs on where a
// mutation lands (seed 161; seed 204 at run 813 of 1000) may not hang so.

const SEED = 20261205;
const RUNS = Number(process.env.MFUZZ_RUNS ?? 120);
const seed = Number(process.env.MFUZZ_SEED ?? SEED);

const EXAMPLE: Target = { path: '/api/upload', field: 'file' };
const ADAPTER: Target = { path: '/upload', field: 'upload' };

/**
 * Posts `rendered` to `name` on a new connection: its one answer, read until
 * then or until the server closes. The timeout only bounds a hang, which
 * the property reports as no answer.
 */
async function post(name: string, port: number, target: Target, { type, body }: Rendered) {
  const head = [`content-type: ${type}`, `content-length: ${body.length}`];
  const bytes = rawRequest(`POST ${target.path} HTTP/1.1`, head, body);
  return onlyAnswer(name, await exchangeRaw(port, [bytes], { expect: 1, timeoutMs: 10_000 }));
}

/**
 * Whether `content` is a whole part of `body`: after a line break, right
 * before a delimiter. Not necessarily after a part's head: busboy 1.6
 * (multer) reads a head ending right on a boundary line (`\r\n\r\n--B\r\n`)
 * as a delimiter that does not end the part, whose content is then what
 * follows that line up to the next delimiter (multipart-framing.test.ts).
 */
const wholePart = (body: Buffer, content: string) =>
  body.toString('latin1').includes(`\r\n${content}\r\n--`);

/** What a sandbox holds against its upload's answer: each problem found. */
function diskProblems(start: Tree, tree: Tree, body: Buffer, status: number, json: unknown) {
  const answered: Answered[] = [];
  const problems: string[] = [];
  if (status === 201) {
    const { uploaded, size } = json as { uploaded: string; size: number };
    const content = tree.files.get(uploaded);
    if (content === undefined) problems.push(`201 names ${uploaded}, not there`);
    else if (content.length !== size)
      problems.push(`${uploaded}: ${content.length} bytes, not ${size}`);
    else if (!wholePart(body, content)) problems.push(`${uploaded} is no whole part of the body`);
    const target = uploaded.slice('uploads/'.length);
    const request = {
      operation: 'upload' as const,
      target,
      size,
      second: undefined,
      cut: undefined,
    };
    answered.push({ request, content: content ?? '', status });
  }
  return [...problems, ...new Holdings(start, true).judge(answered, tree)];
}

describe('random mutations of multipart uploads', () => {
  const pair = servedPairForSuite();
  const apps = watchApps(policy, ROUTES);
  let openBefore = 0;

  /** Each server answers a plain request after the mutated one. */
  async function stillAnswering() {
    const listed = await Promise.all(
      pair.ports().map(({ port }) => sendToExample(port, { path: '/api/list?dir=uploads' })),
    );
    const read = await Promise.all(
      FRAMEWORKS.map((name) => sendToApp(apps.apps[name].port, { path: '/files/public/a.txt' })),
    );
    return [...listed, ...read].map(({ status }) => status);
  }

  beforeAll(async () => {
    // Whatever the first requests open for good (modules, pools) is counted in.
    await stillAnswering();
    await idle();
    openBefore = descriptors();
  });

  async function examplesRun(plan: Plan, serial: number) {
    const start = pair.reseed();
    const rendered = render(plan, serial, EXAMPLE);
    const answers = await Promise.all(
      pair.ports().map(({ name, port }) => post(`${name} example`, port, EXAMPLE, rendered)),
    );
    return { start, rendered, answers };
  }

  async function adaptersRun(plan: Plan, serial: number) {
    const rendered = render(plan, serial, ADAPTER);
    const answers = await Promise.all(
      FRAMEWORKS.map((name: Framework) =>
        post(`${name} adapter`, apps.apps[name].port, ADAPTER, rendered),
      ),
    );
    return { rendered, answers };
  }

  it('are answered once, in documented JSON, and leave only whole uploads answered 201', async () => {
    let serial = 0;
    /** The statuses each server answered: stored, denied and refused bodies all occur, or the runs proved little. */
    const seen = new Map<string, Set<number>>();
    const tally = (server: string, status: number) =>
      seen.set(server, (seen.get(server) ?? new Set()).add(status));
    await fc.assert(
      fc.asyncProperty(plans, async (plan) => {
        serial += 1;
        const [examples, adapters] = await Promise.all([
          examplesRun(plan, serial),
          adaptersRun(plan, serial),
        ]);
        await idle();
        const shown = (body: Buffer) => JSON.stringify(body.toString('latin1').slice(0, 600));
        for (const [i, { name, tree, around }] of pair.sandboxes('latin1').entries()) {
          const { status, json, text } = examples.answers[i] as RawResponse;
          tally(`${name} example`, status);
          const said = `${name} example, ${status} ${text}\nbody: ${shown(examples.rendered.body)}`;
          expect(exampleProblems(status, json, text), said).toEqual([]);
          const disk = diskProblems(examples.start, tree, examples.rendered.body, status, json);
          expect(disk, said).toEqual([]);
          expect(around, `${name}: beside the sandbox`).toEqual(NOTHING_AROUND);
        }
        for (const [i, name] of FRAMEWORKS.entries()) {
          const { status, json, text } = adapters.answers[i] as RawResponse;
          tally(`${name} adapter`, status);
          const said = `${name} adapter, ${status} ${text}\nbody: ${shown(adapters.rendered.body)}`;
          expect(adapterProblems(status, json, text), said).toEqual([]);
        }
        expect(await stillAnswering()).toEqual([200, 200, 200, 200]);
        await idle();
        expect(descriptors()).toBeLessThanOrEqual(openBefore);
      }),
      // A hang costs its exchange's timeout at each shrinking step: stop shrinking in time to report it.
      {
        seed,
        numRuns: RUNS,
        ...(process.env.MFUZZ_PATH ? { path: process.env.MFUZZ_PATH, endOnFailure: true } : {}),
        interruptAfterTimeLimit: 150_000,
        markInterruptAsFailure: true,
      },
    );
    const stored = (server: string) => (server.endsWith('example') ? 201 : 200);
    for (const [server, statuses] of seen) {
      expect(
        [stored(server), 400, 403].filter((s) => !statuses.has(s)),
        server,
      ).toEqual([]);
    }
    expect(seen.size).toBe(4);
  }, 240_000);
});
