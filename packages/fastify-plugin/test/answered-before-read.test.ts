import type { ServerHttp2Stream } from 'node:http2';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { filesIn, listen, sandbox, sendAroundAnswer, sendAroundAnswerH2 } from './helpers.js';
import { answeringUploadApp, READS, type Read } from './multipart-server.js';

// A handler that answers while the upload is still arriving (a 202 first, or
// Fastify's `handlerTimeout` answering for it) and only then starts reading
// it. The answer ended the upload (answered-mid-file.test.ts: a read already
// under way fails): a read started after it must fail at once too, not wait
// for bytes the lingering close drops, and leave no file. Over HTTP/1.1 and
// h2c. An async onSend hook that holds the answer back delays that end: a
// read begun before pathgate's onSend runs goes on until it does, then fails
// as cut, its file removed.

const SIZE = 256 * 1024;

async function serve(read: Read, server: object = {}) {
  const { root, app, config } = await answeringUploadApp(10 * SIZE, server);
  const spool = sandbox();
  const settled: string[] = [];
  const readAfter = async (request: FastifyRequest) => {
    try {
      await read(request, spool);
      settled.push('read');
    } catch (error) {
      const { code, message } = error as { code?: string; message: string };
      settled.push(`failed: ${code} ${message}`);
    }
  };
  const sendThenRead = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.code(202).send({ accepted: true });
    await readAfter(request);
  };
  app.post('/accept', { config }, sendThenRead);
  // Fastify answers 503 for a handler that takes too long; it then starts reading.
  app.post('/slow', { config }, async (request) => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    await readAfter(request);
    return { read: true };
  });
  // An app's async onSend hook holds the answer back while the handler, past
  // `send()`, reads on: a context's hook runs before pathgate's route-level
  // one, the route's own after it.
  const hold = async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
  };
  await app.register(async (scope) => {
    scope.addHook('onSend', hold);
    scope.post('/held-before', { config }, sendThenRead);
  });
  app.post('/held-after', { config, onSend: hold }, sendThenRead);
  let open = 0;
  // HTTP/2 only: the server's streams still open (a stream left waiting on the body).
  app.server.on('stream', (stream: ServerHttp2Stream) => {
    open++;
    stream.once('close', () => open--);
  });
  return { root, spool, settled, open: () => open, port: await listen(app) };
}

/** A read refused as it starts (`PathgateAnsweredError`). */
const REFUSED = /^failed: PATHGATE_ANSWERED .*reply was already sent/;
/** A read under way when the answer left, which ended the upload: failed as a cut body. */
const CUT = /^failed: .*Part terminated early/;

/** Who answers, the route, the status, what the body holds, and how the read fails. */
const ANSWERS = [
  ['the handler', '/accept', 202, { accepted: true }, REFUSED],
  ["Fastify's handlerTimeout", '/slow', 503, { code: 'FST_ERR_HANDLER_TIMEOUT' }, REFUSED],
  // Until that hook lets it go, the answer is not out, and the read goes on.
  [
    "the handler, held by an onSend hook before pathgate's",
    '/held-before',
    202,
    { accepted: true },
    CUT,
  ],
  [
    "the handler, held by an onSend hook after pathgate's",
    '/held-after',
    202,
    { accepted: true },
    REFUSED,
  ],
] as const;

/** The read failed once the answer was out, as `failure` says, and left no file. */
async function expectFailedClean(s: Awaited<ReturnType<typeof serve>>, failure: RegExp) {
  await vi.waitFor(() => expect(s.settled).toEqual([expect.stringMatching(/^failed: /)]), {
    timeout: 1000,
  });
  expect(s.settled[0]).toMatch(failure);
  expect(filesIn(s.root)).toEqual([]);
  expect(filesIn(s.spool)).toEqual([]);
}

const file = {
  disposition: 'name="f"; filename="a.bin"',
  contentType: 'application/octet-stream',
  data: Buffer.alloc(SIZE, 'a'),
};

describe('a read started after an answer sent while the upload was arriving', () => {
  describe.each(READS)('%s', (_name, read) => {
    it.each(ANSWERS)(
      'answered by %s: fails once the answer is out, no file is left',
      async (_by, path, status, _body, failure) => {
        const s = await serve(read);
        const answer = await sendAroundAnswer(s.port, path, [file]);
        expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
        await expectFailedClean(s, failure);
      },
    );

    // HTTP/2 has no connection to close: the stream is read and dropped to
    // its end instead, which must end it cleanly with the handler's answer.
    it.each(ANSWERS)(
      'over h2c, answered by %s: fails once the answer is out, no file, the stream ends cleanly',
      async (_by, path, status, body, failure) => {
        const s = await serve(read, { http2: true });
        const sent = await sendAroundAnswerH2(s.port, path, [file]);
        expect(sent).toMatchObject({ status, rstCode: 0, error: undefined });
        expect(JSON.parse(sent.text)).toMatchObject(body);
        await expectFailedClean(s, failure);
        await vi.waitFor(() => expect(s.open()).toBe(0), { timeout: 1000 });
      },
    );
  });
});
