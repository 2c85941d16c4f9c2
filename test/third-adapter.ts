import type {
  IncomingMessage,
  OutgoingHttpHeaders,
  RequestListener,
  ServerResponse,
} from 'node:http';
import {
  type AdapterOptions,
  type CheckedFile,
  compileRouteGuard,
  denyBody,
  type FsAccessMode,
  type GuardResult,
  hookBody,
  optionError,
  type PathDenial,
  type PathSource,
  type PathSpec,
  type PermissionPolicy,
  type RecordingInfo,
  type RouteGuard,
  readAdapterOptions,
  readFunction,
  recordView,
  requiredParams,
  setOwn,
} from '@pathgate/core';
import { bodyPending, lingerClose } from '@pathgate/core/http';
import busboy from 'busboy';

// A third adapter, for plain node:http, written from the core README and
// type declarations alone: the project's proof that the core's exports are
// enough to guard another framework with the same decisions as
// @pathgate/fastify and @pathgate/express (test/third-adapter.test.ts).
// Test-only: a tiny router, JSON and multipart bodies, nothing stored.

export type DenyHook = (denial: PathDenial, req: IncomingMessage, res: ServerResponse) => unknown;
export type NodeGateOptions = AdapterOptions<DenyHook> & { log?: (entry: object) => void };

export interface NodeRoute {
  method: string;
  /** `/doc/:name`, `/files/*` (the wildcard is param `*`), as Fastify writes them. */
  url: string;
  mode: FsAccessMode;
  paths: readonly PathSpec[];
  handler: (req: IncomingMessage, res: ServerResponse, info: RecordingInfo) => void;
}

interface Compiled extends NodeRoute {
  guard: RouteGuard;
  pattern: RegExp;
  names: string[];
  readsBody: boolean;
}

const BEFORE_BODY: readonly PathSource[] = ['params', 'query', 'headers'];
const JSON_LIMIT = 1024 * 1024;
const MULTIPART = /^multipart\/form-data\b/i;

type Received = Pick<CheckedFile, 'field'>[];

/** `/doc/:name` → a regex over the raw path, and its param names in order. */
function compilePattern(url: string): { pattern: RegExp; names: string[] } {
  const names: string[] = [];
  const source = url
    .split('/')
    .map((segment, i, all) => {
      const name = segment === '*' && i === all.length - 1 ? '*' : /^:(.+)$/.exec(segment)?.[1];
      if (name === undefined) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(name);
      return name === '*' ? '(.*)' : '([^/]+)';
    })
    .join('/');
  return { pattern: new RegExp(`^${source}$`), names };
}

function compileRoute(policy: PermissionPolicy, route: NodeRoute): Compiled {
  const label = `${route.method} ${route.url}`;
  const { pattern, names } = compilePattern(route.url);
  for (const name of requiredParams(route.paths)) {
    if (!names.includes(name)) optionError(`${label}: no route parameter ${name}`);
  }
  const guard = compileRouteGuard(policy, { mode: route.mode, paths: route.paths }, label);
  return {
    ...route,
    guard,
    pattern,
    names,
    readsBody: route.paths.some((spec) => spec.body !== undefined),
  };
}

/** The route's params, decoded once as both frameworks do; undefined for a bad escape. */
function readParams(route: Compiled, path: string): Record<string, string> | undefined {
  const match = route.pattern.exec(path) as RegExpExecArray;
  const params: Record<string, string> = {};
  try {
    for (const [i, name] of route.names.entries()) {
      setOwn(params, name, decodeURIComponent(match[i + 1] ?? ''));
    }
  } catch {
    return undefined;
  }
  return params;
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > JSON_LIMIT) reject(Object.assign(new Error('body too large'), { status: 413 }));
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text === '' ? undefined : JSON.parse(text));
      } catch {
        reject(Object.assign(new Error('bad JSON'), { status: 400 }));
      }
    });
    req.on('error', reject);
  });
}

interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  route: Compiled;
  values: { params: object; query: unknown; headers: object; body: unknown };
  info: RecordingInfo;
  /** Report-only: where the guard puts each would-be deny. */
  denials: PathDenial[] | undefined;
}

/** A plain node:http request listener that guards `routes` (404 for any other request). */
export function nodeGate(options: NodeGateOptions, routes: readonly NodeRoute[]): RequestListener {
  const { settings, read } = readAdapterOptions<DenyHook>(options, ['log']);
  const log = readFunction<(entry: object) => void>(read, 'log') ?? console.warn;
  const compiled = routes.map((route) => compileRoute(settings.policy, route));

  const send = ({ req, res }: Pick<Exchange, 'req' | 'res'>, status: number, body: object) => {
    const headers: OutgoingHttpHeaders = { 'content-type': 'application/json; charset=utf-8' };
    // Refusing a body mid-upload: close cleanly, so the client reads this answer, not a reset.
    if (bodyPending(req) && lingerClose(req, settings.linger)) headers.connection = 'close';
    res.writeHead(status, headers).end(JSON.stringify(body));
  };
  const refuse = (x: Pick<Exchange, 'req' | 'res'>, status: number, message: string) =>
    send(x, status, { statusCode: status, message });

  const deny = (x: Exchange, denial: PathDenial) => {
    const chosen = hookBody(
      () => settings.onDeny?.(denial, x.req, x.res),
      (error) => log({ msg: 'pathgate: onDeny failed', error }),
    );
    if (!x.res.headersSent) send(x, 403, chosen ?? denyBody(denial));
  };

  /** Whether the request goes on: report-only logs each deny, otherwise the first one answers. */
  const passes = (x: Exchange, result: GuardResult) => {
    for (const { reason, label } of x.denials?.splice(0) ?? []) {
      log({ msg: 'pathgate: would deny', reason, label });
    }
    if (!result.ok) deny(x, result.denial);
    return result.ok;
  };
  const check = (x: Exchange, sources?: readonly PathSource[]) =>
    passes(x, x.route.guard.checkRequest(x.values, x.info, sources, x.denials));
  /** The values, then whether each required file came (none can, but in a multipart body). */
  const finish = (x: Exchange, sources: readonly PathSource[] | undefined, received: Received) => {
    if (check(x, sources) && passes(x, x.route.guard.checkMissingFiles(received))) {
      x.route.handler(x.req, x.res, x.info);
    }
  };

  /** Multipart: each file's name is checked before its bytes are read; fields are the body. */
  const readParts = (x: Exchange) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: x.req.headers, preservePath: true });
    } catch {
      return refuse(x, 400, 'bad multipart content type');
    }
    const fields: Record<string, string> = {};
    const received: Received = [];
    const reported = new Set<string>(); // report-only: a file spec once, by its first denied part
    parser.on('field', (name, value) => setOwn(fields, name, value));
    parser.on('file', (field, stream, { filename }) => {
      stream.resume(); // nothing is stored: a real adapter writes to the checked path
      const result = x.route.guard.checkFile(field, filename);
      if (!result.ok && x.denials) {
        if (!reported.has(result.denial.label)) x.denials.push(result.denial);
        reported.add(result.denial.label);
        received.push({ field }); // let through unchecked: reported, not missing too
      } else if (!result.ok) {
        x.req.unpipe(parser);
        if (!x.res.headersSent) deny(x, result.denial);
      } else if (result.file) {
        received.push(result.file); // no file: an optional field's empty file input
        x.info.files.push(result.file);
      }
    });
    parser.on('close', () => {
      if (x.res.headersSent) return;
      x.values.body = fields;
      finish(x, ['body'], received);
    });
    parser.on('error', () => x.res.headersSent || refuse(x, 400, 'bad multipart body'));
    x.req.pipe(parser);
  };

  /** JSON bodies are read whole, then every spec is checked in declaration order. */
  const readBody = (x: Exchange) => {
    const json = /^application\/json\b/i.test(x.req.headers['content-type'] ?? '');
    (json ? readJson(x.req) : Promise.resolve(undefined)).then(
      (body) => {
        x.values.body = body;
        finish(x, undefined, []);
      },
      (error: { status: number; message: string }) => refuse(x, error.status, error.message),
    );
  };

  return (req, res) => {
    const url = req.url ?? '/';
    const split = url.indexOf('?');
    const path = split === -1 ? url : url.slice(0, split);
    const route = compiled.find((r) => r.method === req.method && r.pattern.test(path));
    if (route === undefined) return refuse({ req, res }, 404, 'not found');
    const params = readParams(route, path);
    if (params === undefined) return refuse({ req, res }, 400, 'bad escape in the path');
    // A repeated key is an array, as both frameworks' query parsers give it.
    const query = recordView(new URLSearchParams(split === -1 ? '' : url.slice(split + 1)));
    const x: Exchange = {
      req,
      res,
      route,
      values: { params, query, headers: req.headers, body: undefined },
      info: route.guard.newInfo(),
      denials: settings.reportOnly ? [] : undefined,
    };
    if (route.guard.expectsFiles && MULTIPART.test(req.headers['content-type'] ?? '')) {
      // Params, query and headers before the parts: a deny refuses the upload unread.
      if (check(x, BEFORE_BODY)) readParts(x);
    } else if (route.readsBody || route.guard.expectsFiles) readBody(x);
    else finish(x, undefined, []);
  };
}
