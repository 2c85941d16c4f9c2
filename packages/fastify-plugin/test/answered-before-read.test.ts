import type { FastifyRequest } from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { filesIn, listen, sandbox, sendAroundAnswer } from './helpers.js';
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

async function serve(read: Read) {
  const { root, app, config } = await answeringUploadApp(10 * SIZE);
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
  return { root, spool, settled, port: await listen(app) };
}

const file = {
  disposition: 'name="f"; filename="a.bin"',
  contentType: 'application/octet-stream',
  data: Buffer.alloc(SIZE, 'a'),
};

describe('a read started after an answer sent while the upload was arriving', () => {
  describe.each(READS)('%s', (_name, read) => {
    it.each([
      ['the handler', '/accept', 202],
      ["Fastify's handlerTimeout", '/slow', 503],
    ])('answered by %s: fails at once, no file is left', async (_by, path, status) => {
      const s = await serve(read);
      const answer = await sendAroundAnswer(s.port, path, [file]);
      expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      await vi.waitFor(() => expect(s.settled).toEqual([expect.stringMatching(/^failed: /)]), {
        timeout: 1000,
      });
      expect(s.settled[0]).toMatch(/^failed: PATHGATE_ANSWERED .*reply was already sent/);
      expect(filesIn(s.root)).toEqual([]);
      expect(filesIn(s.spool)).toEqual([]);
    });
  });
});
