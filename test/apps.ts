import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import multipart from '@fastify/multipart';
import type { FsAccessMode, PathDenial, PathSpec, PermissionPolicy } from '@pathgate/core';
import { pathgate as expressGate } from '@pathgate/express';
import { pathgate as fastifyGate } from '@pathgate/fastify';
import express from 'express';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
} from 'fastify';
import multer from 'multer';
import { afterAll, beforeAll } from 'vitest';
import { parseJson, readAnswer } from './answer.js';
import { type NodeGateOptions, type NodeRoute, nodeGate } from './third-adapter.js';

// Shared by the cross-package HTTP tests (parity, attack corpus, fuzzing):
// one route table and one policy → a Fastify app and an Express app on
// 127.0.0.1, and raw clients that send paths, headers and bodies byte for
// byte, so encodings reach each router untouched.

export const FRAMEWORKS = ['fastify', 'express'] as const;
export type Framework = (typeof FRAMEWORKS)[number];

export interface Route {
  method: 'GET' | 'POST';
  /** Fastify syntax; a trailing `*` is the wildcard, param `*` in both apps. */
  url: string;
  mode: FsAccessMode;
  paths: PathSpec[];
}

/** What the framework handed over, as the handler (or pathgate's onDeny) sees it. */
export interface Handed {
  params: unknown;
  query: unknown;
  body: unknown;
  headers: http.IncomingHttpHeaders;
}

export interface AppOptions {
  policy: PermissionPolicy;
  routes: readonly Route[];
  /** Called by every handler, so only once pathgate allowed the request. */
  onHandle?: (framework: Framework, handed: Handed) => void;
  /** Called by pathgate's onDeny on every deny; what it returns is the adapters' onDeny's answer. */
  onDeny?: (framework: Framework, denial: PathDenial, handed: Handed) => unknown;
  /** Both adapters' `reportOnly` option. */
  reportOnly?: boolean;
  /** Both adapters' `lingerMs` and `lingerBytes` options. */
  linger?: { lingerMs?: number; lingerBytes?: number };
  /** busboy's limits, for @fastify/multipart and for the gate's multer alike. */
  multipartLimits?: { fieldSize?: number };
  /** Both apps' query parser (Express's 'query parser', Fastify's `querystringParser`). */
  queryParser?: (text: string) => unknown;
  /** What both apps make of a parsed JSON body before the gate: a custom parser's shape. */
  jsonBody?: (parsed: unknown) => unknown;
  /** A part an app's middleware or hook, before the gate, makes a getter that throws. */
  unreadable?: 'query' | 'body';
  /** Each log line pathgate writes calls this: Express's `log` option, Fastify's `loggerInstance`. */
  failingLog?: () => unknown;
  /**
   * A middleware (Express) or `onRequest` hook (Fastify) sends a 200 event
   * stream's headers and `OPENED` before the gate, and onDeny ends it with `DENIED_END`.
   */
  eventStream?: boolean;
}

export const OPENED = 'data: open\n\n';
export const DENIED_END = 'data: denied\n\n';

/** Begins the event stream `eventStream` asks for. */
function openStream(res: http.ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(OPENED);
}

/** Ends the event stream on a deny, when `eventStream` opened one. */
function endStream(options: AppOptions, res: http.ServerResponse): void {
  if (options.eventStream) res.end(DENIED_END);
}

/**
 * A Fastify `loggerInstance` whose every method calls `fail` on pathgate's
 * lines (their message starts with `pathgate`), and writes nothing else.
 */
function loggerFailing(fail: () => unknown): FastifyBaseLogger {
  const write = (_fields: unknown, message?: unknown) => {
    if (String(message).startsWith('pathgate')) return fail();
  };
  const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
  const logger = Object.fromEntries(levels.map((level) => [level, write]));
  return {
    ...logger,
    level: 'info',
    child: () => loggerFailing(fail),
  } as unknown as FastifyBaseLogger;
}

/** Makes `part` of `request` a getter that throws, as an app's lazy parser may. */
function makeUnreadable(request: object, part: 'query' | 'body'): void {
  Object.defineProperty(request, part, {
    get() {
      throw new Error(`no ${part} here`);
    },
  });
}

/** Express 5 names every wildcard; a quoted name keeps Fastify's `*`, so labels match. */
export const expressPath = (url: string) => url.replace(/\*$/, '*"*"');

const takesFiles = (route: Route) => route.paths.some((spec) => spec.file !== undefined);

/**
 * Every handler answers `{ pathgate }`: the canonical paths pathgate checked.
 * Uploads go through the gate's multer (memory storage: nothing is written),
 * after the gate, as its README says.
 */
export function buildExpress(options: AppOptions): express.Express {
  const handed = (req: express.Request): Handed => ({
    params: req.params,
    query: req.query,
    body: req.body,
    headers: req.headers,
  });
  const gate = expressGate({
    policy: options.policy,
    reportOnly: options.reportOnly,
    ...options.linger,
    ...(options.failingLog ? { log: options.failingLog } : {}),
    onDeny: (denial, req, res) => {
      endStream(options, res);
      return options.onDeny?.('express', denial, handed(req));
    },
  });
  const upload = gate.multer({ storage: multer.memoryStorage(), limits: options.multipartLimits });
  const app = express();
  if (options.eventStream) {
    app.use((_req, res, next) => {
      openStream(res);
      next();
    });
  }
  if (options.queryParser) app.set('query parser', options.queryParser);
  app.use(express.json());
  const { jsonBody } = options;
  if (jsonBody) {
    app.use((req, _res, next) => {
      if (req.is('application/json')) req.body = jsonBody(req.body);
      next();
    });
  }
  const { unreadable } = options;
  if (unreadable) {
    app.use((req, _res, next) => {
      makeUnreadable(req, unreadable);
      next();
    });
  }
  for (const route of options.routes) {
    const method = route.method === 'GET' ? 'get' : 'post';
    const files = takesFiles(route) ? [upload.any()] : [];
    app[method](expressPath(route.url), gate[route.mode](...route.paths), ...files, (req, res) => {
      options.onHandle?.('express', handed(req));
      res.json({ pathgate: req.pathgate });
    });
  }
  // The framework's own refusals (a bad escape, bad JSON) as JSON, without logging a stack.
  app.use(((error, _req, res, next) => {
    if (res.headersSent) return next(error);
    const status = Number(error?.status ?? error?.statusCode ?? 500);
    res.status(status).json({ statusCode: status, message: String(error?.message) });
  }) as express.ErrorRequestHandler);
  return app;
}

const fastifyHanded = ({ params, query, body, headers }: FastifyRequest): Handed => ({
  params,
  query,
  body,
  headers,
});

/**
 * The same routes in Fastify. Uploads: @fastify/multipart with
 * `attachFieldsToBody` (every part is checked before the handler runs) and
 * `preservePath` (busboy would cut `../x` to `x`; multer in the Express app
 * keeps it too).
 */
export async function buildFastify(options: AppOptions): Promise<FastifyInstance> {
  // close() ends every connection, as the Express side's does: Fastify's
  // default leaves a busy keep-alive socket open for its 72 s timeout.
  const querystringParser = options.queryParser as (text: string) => Record<string, string>;
  const { failingLog } = options;
  const app = Fastify({
    forceCloseConnections: true,
    ...(failingLog ? { loggerInstance: loggerFailing(failingLog) } : {}),
    ...(options.queryParser ? { routerOptions: { querystringParser } } : {}),
  });
  const { jsonBody } = options;
  if (jsonBody) {
    app.addHook('preValidation', async (request) => {
      const json = request.headers['content-type']?.startsWith('application/json') === true;
      if (json) request.body = jsonBody(request.body);
    });
  }
  if (options.eventStream)
    app.addHook('onRequest', async (_request, reply) => openStream(reply.raw));
  const { unreadable } = options;
  if (unreadable) {
    app.addHook('preValidation', async (request) => makeUnreadable(request, unreadable));
  }
  await app.register(fastifyGate, {
    policy: options.policy,
    reportOnly: options.reportOnly,
    ...options.linger,
    onDeny: (denial, request, reply) => {
      endStream(options, reply.raw);
      return options.onDeny?.('fastify', denial, fastifyHanded(request));
    },
  });
  if (options.routes.some(takesFiles)) {
    await app.register(multipart, {
      attachFieldsToBody: true,
      preservePath: true,
      limits: options.multipartLimits,
    });
  }
  for (const route of options.routes) {
    app.route({
      method: route.method,
      url: route.url,
      config: { pathgate: { mode: route.mode, paths: route.paths } },
      handler: async (request) => {
        options.onHandle?.('fastify', fastifyHanded(request));
        return { pathgate: request.pathgate };
      },
    });
  }
  return app;
}

export interface Listening {
  readonly port: number;
  /** The node:http server, to count its connections and watch its sockets. */
  readonly server: http.Server;
  close(): Promise<void>;
}

export type Apps = Record<Framework, Listening> & { close(): Promise<void> };

/** A listening node:http server; `close` ends its open connections too. */
function listening(server: http.Server): Listening {
  return {
    port: (server.address() as AddressInfo).port,
    server,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Both apps from one route table, listening on 127.0.0.1; `close` closes both. */
export async function startApps(options: AppOptions): Promise<Apps> {
  const fastify = await buildFastify(options);
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  const fromFastify: Listening = {
    port: (fastify.server.address() as AddressInfo).port,
    server: fastify.server,
    close: () => fastify.close(),
  };
  let server: http.Server;
  try {
    server = await new Promise<http.Server>((resolve, reject) => {
      const s = buildExpress(options).listen(0, '127.0.0.1', () => resolve(s));
      s.on('error', reject);
    });
  } catch (error) {
    await fastify.close();
    throw error;
  }
  const fromExpress = listening(server);
  return {
    fastify: fromFastify,
    express: fromExpress,
    close: async () => {
      await Promise.all([fromFastify.close(), fromExpress.close()]);
    },
  };
}

/** The node:http guard of test/third-adapter.ts, with the same routes, on 127.0.0.1. */
export async function listenNode(
  options: NodeGateOptions,
  routes: readonly Route[],
): Promise<Listening> {
  const answering: NodeRoute[] = routes.map((route) => ({
    ...route,
    handler: (_req, res, info) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ pathgate: info }));
    },
  }));
  const server = http.createServer(nodeGate(options, answering));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return listening(server);
}

/** A pathgate deny, with what the framework had handed over. */
export interface Denied {
  denial: PathDenial;
  handed: Handed;
}

/** Both apps of a test file, and what their handlers and pathgate's onDeny saw. */
export interface Watched {
  /** The apps, once the file's `beforeAll` started them. */
  readonly apps: Apps;
  /** Handler runs since the apps started: a deny must leave it unchanged. */
  readonly calls: Record<Framework, number>;
  /** What each handler got, since the last `clear`. */
  readonly handled: Record<Framework, Handed[]>;
  /** Each deny, since the last `clear`. */
  readonly denied: Record<Framework, Denied[]>;
  clear(framework: Framework): void;
}

/** Starts both apps in `beforeAll`, recording what they see, and closes them in `afterAll`. */
export function watchApps(policy: PermissionPolicy, routes: readonly Route[]): Watched {
  let started: Apps | undefined;
  const calls: Record<Framework, number> = { fastify: 0, express: 0 };
  const handled: Record<Framework, Handed[]> = { fastify: [], express: [] };
  const denied: Record<Framework, Denied[]> = { fastify: [], express: [] };
  beforeAll(async () => {
    started = await startApps({
      policy,
      routes,
      onHandle: (framework, handed) => {
        calls[framework] += 1;
        handled[framework].push(handed);
      },
      onDeny: (framework, denial, handed) => {
        denied[framework].push({ denial, handed });
      },
    });
  });
  afterAll(async () => {
    await started?.close();
  });
  return {
    get apps() {
      if (started === undefined) throw new Error('the apps start in beforeAll');
      return started;
    },
    calls,
    handled,
    denied,
    clear(framework) {
      handled[framework].length = 0;
      denied[framework].length = 0;
    },
  };
}

export interface Sent {
  method?: string;
  /** The request target, sent as is (latin1 bytes): `%00`, `%c0%ae`, `..` reach the router untouched. */
  path: string;
  /** Header values are sent as latin1 bytes; an array sends the header once per element. */
  headers?: http.OutgoingHttpHeaders;
  /** JSON text, sent with `content-type: application/json`. */
  json?: string;
  /** A raw body: give its content-type in `headers`. */
  body?: Buffer;
}

export interface Got {
  status: number;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  body: unknown;
}

/** One request with node:http (no agent, no URL normalization). */
export function send(port: number, sent: Sent): Promise<Got> {
  return new Promise((resolve, reject) => {
    const body = sent.json === undefined ? sent.body : Buffer.from(sent.json);
    const headers = {
      ...(sent.json === undefined ? {} : { 'content-type': 'application/json' }),
      ...sent.headers,
      ...(body ? { 'content-length': body.length } : {}),
    };
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: sent.path,
      method: sent.method ?? 'GET',
      headers,
      agent: false,
    });
    req.on('response', (res) => {
      readAnswer(res).then(({ status, json }) => resolve({ status, body: json }), reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A request written byte for byte on a plain socket, for what node:http
 * refuses to send (a NUL in a header value). `head` is latin1 text: the
 * request line and header lines, without the blank line.
 */
export function sendBytes(port: number, head: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const [, code] = /^HTTP\/1\.1 (\d{3})/.exec(text) ?? [];
      const split = text.indexOf('\r\n\r\n');
      const rest = split === -1 ? '' : text.slice(split + 4);
      resolve({
        status: Number(code ?? 0),
        body: parseJson(Buffer.from(rest, 'latin1').toString('utf8')),
      });
    });
    socket.end(Buffer.from(`${head}\r\nconnection: close\r\n\r\n`, 'latin1'));
  });
}

export { forbidden } from './answer.js';

export const BOUNDARY = '----pathgate-corpus-7MA4YWxkTrZu0gW';
export const MULTIPART_TYPE = `multipart/form-data; boundary=${BOUNDARY}`;

/**
 * A multipart body with one small file part per Content-Disposition: each is
 * the raw text after `form-data; `, as latin1 (so UTF-8, NUL and `\` go out
 * as the bytes written).
 */
export function multipartBody(dispositions: readonly string[]): Buffer {
  const chunks: Buffer[] = [];
  for (const disposition of dispositions) {
    chunks.push(
      Buffer.from(
        `--${BOUNDARY}\r\nContent-Disposition: form-data; ${disposition}\r\nContent-Type: application/octet-stream\r\n\r\ndata\r\n`,
        'latin1',
      ),
    );
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}
