import type { ServerHttp2Stream } from 'node:http2';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { filesIn, listen, sandbox, sendAroundAnswer, sendAroundAnswerH2 } from './helpers.js';
import { answeringUploadApp, store } from './multipart-server.js';

// A handler that answers while the upload is still arriving (a 202 first, or
// Fastify's `handlerTimeout` answering for it) and only then starts reading
// it. The answer ended the upload (answered-mid-file.test.ts: a read already
// under way fails): a read started after it must fail at once too, not wait
// for bytes the lingering close drops, and leave no file.

const SIZE = 256 * 1024;

type Read = (request: FastifyRequest, spool: string) => Promise<unknown>;

const READS: [string, Read][] = [
  ['file()', async (request) => store((await request.file()) as never)],
  [
    'files()',
    async (request) => {
      for await (const part of request.files()) await store(part);
    },
  ],
  [
    'parts()',
    async (request) => {
      for await (const part of request.parts()) if (part.type === 'file') await store(part);
    },
  ],
  ['saveRequestFiles()', (request, spool) => request.saveRequestFiles({ tmpdir: spool })],
];

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
  app.post('/accept', { config }, async (request, reply) => {
    reply.code(202).send({ accepted: true });
    await readAfter(request);
  });
  // Fastify answers 503 for a handler that takes too long; it then starts reading.
  app.post('/slow', { config }, async (request) => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    await readAfter(request);
    return { read: true };
  });
  let open = 0;
  // HTTP/2 only: the server's streams still open (a stream left waiting on the body).
  app.server.on('stream', (stream: ServerHttp2Stream) => {
    open++;
    stream.once('close', () => open--);
  });
  return { root, spool, settled, open: () => open, port: await listen(app) };
}

/** Who answers, the route, the status, and what the body holds. */
const ANSWERS = [
  ['the handler', '/accept', 202, { accepted: true }],
  ["Fastify's handlerTimeout", '/slow', 503, { code: 'FST_ERR_HANDLER_TIMEOUT' }],
] as const;

/** The read failed at once with PathgateAnsweredError, and left no file. */
async function expectFailedClean(s: Awaited<ReturnType<typeof serve>>) {
  await vi.waitFor(() => expect(s.settled).toEqual([expect.stringMatching(/^failed: /)]), {
    timeout: 1000,
  });
  expect(s.settled[0]).toMatch(/^failed: PATHGATE_ANSWERED .*reply was already sent/);
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
    it.each(ANSWERS)('answered by %s: fails at once, no file is left', async (_by, path, status) => {
      const s = await serve(read);
      const answer = await sendAroundAnswer(s.port, path, [file]);
      expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      await expectFailedClean(s);
    });

    // HTTP/2 has no connection to close: the stream is read and dropped to
    // its end instead, which must end it cleanly with the handler's answer.
    it.each(ANSWERS)(
      'over h2c, answered by %s: fails at once, no file, the stream ends cleanly',
      async (_by, path, status, body) => {
        const s = await serve(read, { http2: true });
        const sent = await sendAroundAnswerH2(s.port, path, [file]);
        expect(sent).toMatchObject({ status, rstCode: 0, error: undefined });
        expect(JSON.parse(sent.text)).toMatchObject(body);
        await expectFailedClean(s);
        await vi.waitFor(() => expect(s.open()).toBe(0), { timeout: 1000 });
      },
    );
  });
});
