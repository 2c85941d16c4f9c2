import { describe, expect, it, vi } from 'vitest';
import { filesIn, listen, sendAroundAnswer } from './helpers.js';
import { answeringUploadApp, store } from './multipart-server.js';

// A handler that answers while the allowed file it reads is still arriving
// (a 202 before the work, or Fastify's `handlerTimeout` answering for it),
// then goes on reading it. pathgate closes such a connection once the body is
// read and dropped: the part the handler holds must then settle, stored or
// failed, never leave it waiting with a half-written file.

const SIZE = 256 * 1024;

async function serve() {
  const { root, app, config } = await answeringUploadApp(10 * SIZE);
  const settled: string[] = [];
  app.post('/accept', { config }, async (request, reply) => {
    const part = await request.file();
    reply.code(202).send({ accepted: true });
    try {
      await store(part as never);
      settled.push('stored');
    } catch {
      settled.push('failed');
    }
  });
  // Fastify answers 503 for a handler that takes too long, which reads on.
  app.post('/slow', { config }, async (request) => {
    const part = await request.file();
    try {
      await store(part as never);
      settled.push('stored');
    } catch {
      settled.push('failed');
    }
    return { stored: true };
  });
  return { root, settled, port: await listen(app) };
}

const part = (filename: string, size: number) => ({
  disposition: `name="f"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data: Buffer.alloc(size, 'a'),
});

/** Sends half the body, waits for the answer, then sends the rest and ends. */
const sendAround = (port: number, path: string, parts = [part('a.bin', SIZE)]) =>
  sendAroundAnswer(port, path, parts);

describe('an answer sent while the handler still reads an allowed file', () => {
  it.each([
    ['the handler', '/accept', 202],
    ["Fastify's handlerTimeout", '/slow', 503],
  ])(
    'by %s: the rest arrives, the part fails as cut, no half-written file is left',
    async (_by, path, status) => {
      const s = await serve();
      const answer = await sendAround(s.port, path);
      expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(answer).toMatch(/\r\nconnection: close\r\n/i);
      await vi.waitFor(() => expect(s.settled).toEqual(['failed']), { timeout: 4000 });
      expect(filesIn(s.root)).toEqual([]);
    },
  );

  it('a part that arrived whole before the answer is still read whole', async () => {
    const s = await serve();
    const answer = await sendAround(s.port, '/accept', [part('a.bin', 16), part('b.bin', SIZE)]);
    expect(answer).toMatch(/^HTTP\/1\.1 202 /);
    await vi.waitFor(() => expect(s.settled).toEqual(['stored']), { timeout: 4000 });
    expect(filesIn(s.root)).toEqual(['uploads/a.bin']);
  });
});
