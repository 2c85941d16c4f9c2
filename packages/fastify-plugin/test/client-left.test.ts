import multipart from '@fastify/multipart';
import { describe, expect, it, vi } from 'vitest';
import pathgate from '../src/index.js';
import { filesIn, hangUp, listen, multipartBody, newApp, sandbox } from './helpers.js';
import { READS, type Read, UPLOAD } from './multipart-server.js';

// A handler that awaits something of its own (a lookup) before it reads the
// upload, while the client hangs up mid-body. multipart watches for that
// hang-up only from the moment a read begins: a read begun after it would
// wait forever for the rest of the body, holding the request and the
// handler. It fails at once instead, as a read under way then does, with
// multipart's own 400, and leaves no file.

async function serve(read: Read) {
  const root = sandbox();
  const spool = sandbox();
  const app = newApp();
  await app.register(pathgate, { root, fs: ['rw:./uploads/**'] });
  await app.register(multipart);
  const settled: string[] = [];
  app.post('/wait', { config: { pathgate: UPLOAD } }, async (request) => {
    // The lookup, over once the client has gone.
    if (!request.raw.destroyed) await new Promise((resolve) => request.raw.once('close', resolve));
    try {
      await read(request, spool);
      settled.push('read');
    } catch (error) {
      settled.push(`failed: ${(error as { code?: string }).code}`);
    }
    return 'done';
  });
  return { root, spool, settled, port: await listen(app) };
}

const body = multipartBody([
  {
    disposition: 'name="f"; filename="a.bin"',
    contentType: 'application/octet-stream',
    data: Buffer.alloc(256 * 1024, 'a'),
  },
]);

describe('a read begun after the client hung up mid-body', () => {
  it.each(READS)('%s: fails at once with a premature close, no file is left', async (_, read) => {
    const s = await serve(read);
    // Little enough that the server reads it all, unpaused, and so sees the hang-up.
    await hangUp(s.port, '/wait', body, 1024);
    await vi.waitFor(() => expect(s.settled).toEqual(['failed: FST_MP_PREMATURE_CLOSE']), {
      timeout: 4000,
    });
    expect(filesIn(s.root)).toEqual([]);
    expect(filesIn(s.spool)).toEqual([]);
  });
});
