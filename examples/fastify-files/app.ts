// The file API on Fastify. Each route declares its paths in `config.pathgate`;
// pathgate checks them before the handler runs (a deny is a 403 and the handler
// never runs), and the handlers use only the canonical paths it checked.
import multipart from '@fastify/multipart';
import { denyBody, resolveSymlinks } from '@pathgate/core';
import pathgate, { PathgateDeniedError } from '@pathgate/fastify';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { checkedPath } from '../shared/checked.js';
import { FileApiError, listDir, moveFile, openFile, removeFile, Uploads } from '../shared/files.js';
import { undecodedJson } from '../shared/json-coding.js';
import { RealRoot } from '../shared/real-root.js';
import {
  answerClientError,
  downloadHeaders,
  type ErrorBody,
  errorBody,
  indexPage,
  NOT_FOUND,
  shownPath,
} from '../shared/replies.js';
import { badTarget } from '../shared/request-target.js';
import {
  HOST,
  IDLE_TIMEOUT_MS,
  type ListenOptions,
  REQUEST_TIMEOUT_MS,
  type Started,
} from '../shared/run.js';
import { RULES, UPLOAD_FOLDER, UPLOAD_LIMITS } from '../shared/sandbox.js';

/** An error's body, in JSON also where a download set its own type before its file failed. */
function sendError(reply: FastifyReply, body: ErrorBody): FastifyReply {
  return reply.code(body.statusCode).type('application/json; charset=utf-8').send(body);
}

export async function buildApp(
  root: string,
  { idleTimeoutMs = IDLE_TIMEOUT_MS }: ListenOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify({
    requestTimeout: REQUEST_TIMEOUT_MS,
    connectionTimeout: idleTimeoutMs,
    // close() ends every connection, as the Express example's does: Fastify's
    // default ends only idle ones, and waits on a download nobody reads, or a
    // keep-alive socket whose answer went out after close began (72 s).
    forceCloseConnections: true,
    // A URL that does not decode (FST_ERR_BAD_URL) is answered before any
    // route or error handler, with a message that echoes it: the same bare
    // 400 as the Express example instead.
    frameworkErrors: (error, _request, reply) => sendError(reply, errorBody(error)),
    // A request Node cannot parse: the same JSON as the Express example.
    clientErrorHandler: answerClientError,
  });
  // One policy for every route: public/ read-only, uploads/ read-write, links resolved.
  await app.register(pathgate, { root, fs: RULES, resolve: resolveSymlinks });
  // preservePath: busboy would strip `../../x` to `x`, and the policy would judge another name.
  await app.register(multipart, { preservePath: true, limits: UPLOAD_LIMITS });
  // Bodies are JSON or multipart: a text/plain body is a 415, as in the Express example.
  app.removeContentTypeParser('text/plain');
  // A target with a fragment is a 400; a JSON body compressed or in another
  // charset a 415, before Fastify reads it as UTF-8.
  app.addHook('onRequest', async (request) => {
    const refused = badTarget(request.method, request.raw.url) ?? undecodedJson(request);
    if (refused) throw refused;
  });

  const page = indexPage();
  const realRoot = new RealRoot(root);
  // The checked paths lie under the resolved root, whatever link `root` is reached by.
  const shown = (path: string) => shownPath(realRoot.path, path);

  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(page));

  app.get(
    '/api/list',
    { config: { pathgate: { mode: 'read', paths: [{ query: 'dir' }] } } },
    async (request) => ({
      entries: await listDir(checkedPath(request.pathgate, 'query', 'dir'), realRoot),
    }),
  );

  app.get(
    '/files/*',
    { config: { pathgate: { mode: 'read', paths: [{ params: '*' }] } } },
    async (request, reply) => {
      const download = await openFile(checkedPath(request.pathgate, 'params', '*'), realRoot);
      return reply.headers(downloadHeaders(download)).send(download.stream);
    },
  );

  app.delete(
    '/files/*',
    { config: { pathgate: { mode: 'write', paths: [{ params: '*' }] } } },
    async (request) => {
      const path = checkedPath(request.pathgate, 'params', '*');
      await removeFile(path, realRoot);
      return { deleted: shown(path) };
    },
  );

  app.post(
    '/api/move',
    { config: { pathgate: { mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] } } },
    async (request) => {
      const from = checkedPath(request.pathgate, 'body', 'from');
      const to = checkedPath(request.pathgate, 'body', 'to');
      await moveFile(from, to, realRoot);
      return { moved: shown(from), to: shown(to) };
    },
  );

  app.post(
    '/api/upload',
    { config: { pathgate: { mode: 'write', paths: [{ file: 'file', under: UPLOAD_FOLDER }] } } },
    async (request, reply) => {
      // Each part's filename is checked before a byte of it is read: a denied
      // one throws PathgateDeniedError here, and nothing of it is written.
      const uploads = new Uploads(realRoot);
      let size = 0;
      try {
        for await (const part of request.parts()) {
          // No field is read, but one cut at its size limit is a 413, as multer's.
          if (part.type === 'field') {
            if (part.valueTruncated) throw new FileApiError(413, 'payload too large');
            continue;
          }
          const target = part.pathgatePath;
          if (target === undefined) throw new Error('a file part pathgate did not check');
          size = await uploads.save(part.file, target);
        }
      } catch (error) {
        // A part failed (cut, too large, a second file, a field too long):
        // keep none of the request, nor its folders.
        await uploads.discard();
        throw error;
      } finally {
        uploads.release();
      }
      const [target] = uploads.stored;
      if (target === undefined) throw new FileApiError(400, 'no file');
      return reply.code(201).send({ uploaded: shown(target), size });
    },
  );

  app.setNotFoundHandler(async (_request, reply) => reply.code(404).send(NOT_FOUND));

  app.setErrorHandler(async (error, request, reply) => {
    // A denied filename, thrown out of request.files(): the same 403 body as a hook's deny.
    if (error instanceof PathgateDeniedError) {
      const { reason, label } = error;
      return reply.code(403).send(denyBody({ reason, label }));
    }
    const body = errorBody(error);
    // A client that hung up mid-request is no fault of the server's: nothing to
    // log. `readableAborted`, not `destroyed`: a body read to its end is
    // destroyed too, and a move's or an upload's 500 would go unlogged.
    if (body.statusCode === 500 && !request.raw.readableAborted) console.error(error);
    return sendError(reply, body);
  });

  return app;
}

/** Builds the app and listens on 127.0.0.1 (`port` 0: any free port). */
export async function listen(
  root: string,
  port: number,
  options?: ListenOptions,
): Promise<Started> {
  const app = await buildApp(root, options);
  const url = await app.listen({ host: HOST, port });
  return { url, close: () => app.close() };
}
