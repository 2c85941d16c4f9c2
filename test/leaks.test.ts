import { readdirSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { filePart, MULTIPART, multipart } from '../packages/express-middleware/test/helpers.js';
import { httpUpload } from '../packages/express-middleware/test/upload-clients.js';
import { EXAMPLES } from './examples.js';
import { type Answer, abortedUpload, eventually, exchange } from './fault-clients.js';
import { startedForSuite } from './fixture.js';
import { exchangeRaw, openSession, rawRequest } from './raw-http.js';

// Sustained abuse of both examples (Fastify with @fastify/multipart, Express
// with multer and the gate's disk storage): a few hundred refused, cut,
// pipelined and lingering requests, then every count is back to where it was:
// the process's handles and timers by type, its open descriptors, and what is
// below the sandbox (no file, temp file or folder left). Counts only, no
// heap, and no forced GC: it would close a FileHandle left open.

const ROUNDS = 200;
/** Requests in flight at once. */
const PARALLEL = 10;

/** Runs `round` `count` times, `PARALLEL` at a time. */
async function rounds(count: number, round: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) await round(next++);
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}

/**
 * What a leak would leave behind. Timers apart: the test runner's own come
 * and go, so a lingering close's must only not add to them.
 */
function counts(root: string) {
  const resources: Record<string, number> = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  const { Timeout: timers = 0, ...handles } = resources;
  return {
    handles,
    timers,
    descriptors: readdirSync('/proc/self/fd').length,
    sandbox: (readdirSync(root, { recursive: true }) as string[]).sort(),
  };
}

/** Every count as at `baseline`, timers at most as many. */
function atBaseline(now: ReturnType<typeof counts>, baseline: ReturnType<typeof counts>) {
  const { timers, ...rest } = now;
  const { timers: before, ...restBefore } = baseline;
  return timers <= before && JSON.stringify(rest) === JSON.stringify(restBefore);
}

const upload = (body: Buffer) => ({
  path: '/api/upload',
  headers: { 'content-type': MULTIPART },
  chunks: [body],
});
const fileBody = (name: string, data: string | Buffer = 'x') =>
  multipart([filePart('file', name, data)]);
const rawUpload = (body: Buffer, length = body.length) =>
  rawRequest(
    'POST /api/upload HTTP/1.1',
    [`content-type: ${MULTIPART}`, `content-length: ${length}`],
    body,
  );
const get = (target: string) => rawRequest(`GET ${target} HTTP/1.1`);
/** Sends half of a 64 KiB file part, then hangs up once `until` resolves (5 ms by default). */
function cutUpload(
  port: number,
  name: string,
  until: (answer: Answer) => Promise<unknown> = () => new Promise((go) => setTimeout(go, 5)),
) {
  const body = fileBody(name, Buffer.alloc(64 * 1024, 0x61));
  const sent = { ...upload(body.subarray(0, 32 * 1024)), contentLength: body.length };
  return abortedUpload(port, sent, until);
}
const MOVE = '{"from":"../secret.txt","to":"uploads/x"}';
const move = rawRequest(
  'POST /api/move HTTP/1.1',
  ['content-type: application/json', `content-length: ${MOVE.length}`],
  MOVE,
);

interface Pattern {
  /** One round; `i` makes a name unique. Each round checks its own answer. */
  round(port: number, i: number): Promise<void>;
  /** Fewer rounds for the slow ones. Default `ROUNDS`. */
  rounds?: number;
}

const PATTERNS: Record<string, Pattern> = {
  'a refused small upload': {
    async round(port, i) {
      const answer = await exchange(port, upload(fileBody(`../out-${i}.txt`)));
      expect(answer.status).toBe(403);
    },
  },
  'a refused 2 MB upload': {
    rounds: 40,
    async round(port, i) {
      // Field `avatar`: the examples take `file` only, so each one is refused unread.
      const filename = `big-${i}.bin`;
      const answer = await httpUpload({ port, path: '/api/upload', filename, sizeMB: 2 });
      expect(answer.status).toBe(403);
    },
  },
  'an allowed upload cut mid-file': {
    async round(port, i) {
      const answer = await cutUpload(port, `cut-${i}.txt`);
      expect(answer.status).toBeUndefined();
    },
  },
  'a refused upload cut mid-file': {
    async round(port, i) {
      // Cut once the 403 is in: 5 ms after the first half, none had come, so a
      // round that went unrefused passed as well.
      const answered = (answer: Answer) => eventually(() => answer.status !== undefined);
      const answer = await cutUpload(port, `../cut-${i}.txt`, answered);
      expect(answer.status).toBe(403);
    },
  },
  'requests pipelined behind a refused upload': {
    async round(port, i) {
      const refused = rawUpload(fileBody(`../p-${i}.txt`));
      const { responses, closed } = await exchangeRaw(port, [
        Buffer.concat([refused, get('/api/list?dir=public')]),
      ]);
      expect(responses.map((r) => r.status)).toEqual([403]);
      expect(closed).toBe(true);
    },
  },
  'a body still trickling in after the 403, past the lingering': {
    rounds: PARALLEL,
    async round(port, i) {
      // Declares more than it sends, and ignores the server's FIN: the server
      // stops reading after 2 s and closes, and the next piece fails.
      const head = rawUpload(fileBody(`../slow-${i}.txt`), 1024 * 1024);
      const trickle = Array.from({ length: 40 }, () => Buffer.alloc(1024, 0x61));
      const { responses, closed } = await exchangeRaw(port, [head, ...trickle], {
        gapMs: 100,
        halfOpen: true,
        timeoutMs: 10_000,
      });
      expect(responses.map((r) => r.status)).toEqual([403]);
      expect(closed).toBe(true);
    },
  },
  'a second file over the files limit': {
    async round(port, i) {
      const body = multipart([filePart('file', `one-${i}.txt`), filePart('file', `two-${i}.txt`)]);
      const answer = await exchange(port, upload(body));
      expect(answer.status).toBe(413);
    },
  },
  'refused requests on a reused keep-alive connection': {
    async round(port) {
      const session = await openSession(port);
      const statuses = [];
      for (const request of [get('/api/list?dir=..'), move, get('/api/list?dir=public')]) {
        statuses.push((await session.send(request)).status);
      }
      expect(statuses).toEqual([403, 403, 200]);
      expect(session.closed).toBe(false);
      session.close();
    },
  },
};

describe.each(EXAMPLES)('the $name example under sustained abuse', (example) => {
  beforeAll(async () => {
    // The other example's server closed, so that the counts are this one's.
    await eventually(() => !process.getActiveResourcesInfo().includes('TCPServerWrap'));
  });
  const app = startedForSuite(example);

  it.each(Object.entries(PATTERNS))(
    '%s: every count is back to its baseline',
    async (_, pattern) => {
      const { round, rounds: count = ROUNDS } = pattern;
      // At rest: the example fresh, or back to its counts after the pattern before.
      const baseline = counts(app.root);
      await rounds(count, (i) => round(app.port, i));
      const back = await eventually(() => atBaseline(counts(app.root), baseline), 5000);
      if (back) return;
      const now = counts(app.root);
      expect({ ...now, timers: Math.min(now.timers, baseline.timers) }).toEqual(baseline);
    },
    30_000,
  );
});
