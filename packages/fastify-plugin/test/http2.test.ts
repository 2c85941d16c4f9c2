import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import { join } from 'node:path';
import multipart from '@fastify/multipart';
import type { FastifyRequest, FastifyServerOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { type Answer, parseJson, readAnswer } from '../../../test/answer.js';
import { drainedOrClosed } from '../../../test/fault-clients.js';
import { closing, exchangeRaw, rawRequest } from '../../../test/raw-http.js';
import pathgate, { type PathgateOptions, type PathSpec } from '../src/index.js';
import { afterTest, denied, filesIn, listen, newApp, request, sandbox } from './helpers.js';
import { store } from './multipart-server.js';

// pathgate over HTTP/2 (h2c, and h2 with HTTP/1.1 on one TLS server): the
// same answers as over HTTP/1.1, and a refused upload that neither hangs its
// stream nor harms the session. HTTP/2 forbids `Connection: close`, so
// instead of closing the connection, the rest of the body is read and
// dropped within the linger limits; past them the stream is reset.

const MB = 1024 * 1024;
const RULES = ['./public/**', 'rw:./uploads/*.bin'];
const UPLOAD = { mode: 'write', paths: [{ file: true, under: 'uploads' }] } as const;
const INTO = { mode: 'write', paths: [{ params: 'dir' }, UPLOAD.paths[0]] } as const;

interface LogLine {
  level: number;
  msg: string;
}

/** Every guarded source, and an upload route in each multipart mode. */
async function serve(server: object, options: Partial<PathgateOptions> = {}) {
  const root = sandbox();
  const lines: LogLine[] = [];
  const stream = { write: (line: string) => lines.push(JSON.parse(line)) };
  const app = newApp({ ...server, logger: { level: 'info', stream } } as FastifyServerOptions);
  let calls = 0;
  let completed = 0;
  let open = 0;
  app.server.on('stream', (s: http2.ServerHttp2Stream) => {
    open++;
    s.once('close', () => open--);
  });
  app.addHook('onResponse', async () => {
    completed++;
  });
  await app.register(pathgate, { root, fs: RULES, ...options } as PathgateOptions);
  const read = (spec: PathSpec) =>
    ({ config: { pathgate: { mode: 'read', paths: [spec] } } }) as const;
  app.get('/files/*', read({ params: '*' }), async (req) => req.pathgate);
  app.get('/q', read({ query: 'file' }), async (req) => req.pathgate);
  app.get('/h', read({ headers: 'x-file' }), async (req) => req.pathgate);
  // The checked host beside the one the handler reads.
  const host = async (req: FastifyRequest) => ({
    checked: req.pathgate?.headers.host,
    host: req.host,
  });
  app.get('/host', read({ headers: 'host', under: 'public' }), host);
  app.get('/host-optional', read({ headers: 'host', under: 'public', optional: true }), host);
  await app.register(async (scope) => {
    // Starts a 200 event stream before the route's check, as a server-sent events app does.
    scope.addHook('onRequest', async (_req, reply) => {
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
      reply.raw.write('data: open\n\n');
    });
    scope.get('/stream', read({ query: 'file' }), async () => 'never');
  });
  const move = { config: { pathgate: { mode: 'write', paths: [{ body: 'to' }] } } } as const;
  app.post('/move', move, async (req) => req.pathgate);
  await app.register(async (scope) => {
    await scope.register(multipart, { preservePath: true, limits: { fileSize: 100 * MB } });
    scope.post('/file', { config: { pathgate: UPLOAD } }, async (req) => {
      calls++;
      const part = await req.file();
      if (part?.pathgatePath === undefined) {
        part?.file.resume(); // report-only lets a denied name through, unchecked
        return { stored: null };
      }
      return { stored: await store(part) };
    });
  });
  await app.register(
    async (scope) => {
      const limits = { fileSize: 100 * MB };
      await scope.register(multipart, { preservePath: true, limits, attachFieldsToBody: true });
      scope.post('/into/:dir', { config: { pathgate: INTO } }, async () => {
        calls++;
        return { ok: true };
      });
    },
    { prefix: '/a' },
  );
  const port = await listen(app);
  const logged = (level: number) => lines.filter((l) => l.level >= level).map((l) => l.msg);
  return { root, port, calls: () => calls, completed: () => completed, open: () => open, logged };
}

type Session = http2.ClientHttp2Session;

/** A session closed after the test (before its server: afterTest runs in reverse). */
function connect(url: string, options: http2.SecureClientSessionOptions = {}): Session {
  const session = http2.connect(url, options);
  afterTest(() => {
    session.destroy();
  });
  return session;
}

/** One request on the session, read whole, as `request()` reads one over HTTP/1.1. */
function h2Request(
  session: Session,
  method: string,
  path: string,
  headers: http2.OutgoingHttpHeaders = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': method, ':path': path, ...headers });
    const chunks: Buffer[] = [];
    let head: http2.IncomingHttpHeaders = {};
    stream.on('response', (received) => {
      head = received;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const { ':status': status, ...rest } = head;
      resolve({ status: Number(status), headers: rest, text, json: parseJson(text) });
    });
    stream.end(body);
  });
}

const BOUNDARY = 'pathgate-h2';

function fileHead(filename: string): Buffer {
  return Buffer.from(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="upload"; filename="${filename}"\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n',
  );
}
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`);

interface Sent {
  status?: number;
  headers: http2.IncomingHttpHeaders;
  json?: unknown;
  /** When the answer's headers arrived, from the start. */
  answeredMs?: number;
  /** Body bytes written (the part's content, without the multipart framing). */
  sent: number;
  rstCode?: number;
  error?: string;
  /** The stream was still open 4 s in, and was cancelled by the client. */
  stuck: boolean;
}

interface UploadOptions {
  size: number;
  /** Send a Content-Length (HTTP/2 needs none). Default true. */
  length?: boolean;
  /** Cancel the stream (RST_STREAM CANCEL) once this many bytes were written. */
  cancelAt?: number;
  /** Destroy the whole session once this many bytes were written. */
  destroyAt?: number;
}

/**
 * Streams a multipart upload of `size` bytes of `a`, 64 KiB at a time with
 * back-pressure, on until it is all sent or the stream closes: a client
 * that keeps sending after the answer, as curl and browsers do.
 */
function upload(
  session: Session,
  path: string,
  filename: string,
  options: UploadOptions,
): Promise<Sent> {
  const head = fileHead(filename);
  const length =
    options.length === false ? {} : { 'content-length': head.length + options.size + TAIL.length };
  const started = performance.now();
  const stream = session.request({
    ':method': 'POST',
    ':path': path,
    'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
    ...length,
  });
  const out: Sent = { headers: {}, sent: 0, stuck: false };
  const chunks: Buffer[] = [];
  stream.on('response', (headers) => {
    out.answeredMs = performance.now() - started;
    out.status = Number(headers[':status']);
    out.headers = headers;
  });
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.on('error', (error: NodeJS.ErrnoException) => {
    out.error = error.code ?? String(error);
  });
  const stuck = setTimeout(() => {
    out.stuck = true;
    stream.close(http2.constants.NGHTTP2_CANCEL);
  }, 4000);
  const closed = new Promise<Sent>((resolve) =>
    stream.on('close', () => {
      clearTimeout(stuck);
      out.json = parseJson(Buffer.concat(chunks).toString('utf8'));
      out.rstCode = stream.rstCode;
      resolve(out);
    }),
  );
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const writable = () => !stream.closed && !stream.destroyed && !session.destroyed;
  const send = async () => {
    stream.write(head);
    while (out.sent < options.size && writable()) {
      if (out.sent >= (options.cancelAt ?? Number.POSITIVE_INFINITY)) {
        return stream.close(http2.constants.NGHTTP2_CANCEL);
      }
      if (out.sent >= (options.destroyAt ?? Number.POSITIVE_INFINITY)) return session.destroy();
      const data = chunk.subarray(0, Math.min(chunk.length, options.size - out.sent));
      out.sent += data.length;
      if (!stream.write(data)) await drainedOrClosed(stream);
    }
    if (writable()) stream.end(TAIL);
  };
  void send();
  return closed;
}

/** Polls until `done()` holds, or 3 s passed. */
async function settled(done: () => boolean): Promise<boolean> {
  const deadline = Date.now() + 3000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return done();
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('over h2c', () => {
  it('answers params, query, headers and JSON bodies as over HTTP/1.1', async () => {
    const h1 = await serve({});
    const h2 = await serve({ http2: true });
    const session = connect(`http://127.0.0.1:${h2.port}`);
    const json = { 'content-type': 'application/json' };
    const cases: [number, string, string, Record<string, string>, string?][] = [
      [200, 'GET', '/files/public%2Fa.txt', {}],
      [403, 'GET', '/files/public%2F..%2F..%2Fetc%2Fpasswd', {}],
      [403, 'GET', '/files/%2e%2e%2fetc', {}],
      [200, 'GET', '/q?file=public/a.txt', {}],
      [403, 'GET', '/q?file=../../etc/passwd', {}],
      [403, 'GET', '/q', {}],
      [200, 'GET', '/h', { 'x-file': 'public/a.txt' }],
      [403, 'GET', '/h', { 'x-file': 'uploads/../../x' }],
      [200, 'POST', '/move', json, JSON.stringify({ to: 'uploads/x.bin' })],
      [403, 'POST', '/move', json, JSON.stringify({ to: 'public/x.bin' })],
      [200, 'POST', '/move', json, JSON.stringify({ to: ['uploads/x.bin'] })],
      [400, 'POST', '/move', json, '{"to":'],
    ];
    // Each server answers with its own root in a checked path: compare relative to it.
    const relative = (text: string, root: string) => text.replaceAll(root, '<root>');
    for (const [status, method, path, headers, body] of cases) {
      const over1 = await request(h1.port, { method, path, headers, body });
      const over2 = await h2Request(session, method, path, headers, body);
      expect(over1.status).toBe(status);
      expect({ path, status: over2.status, text: relative(over2.text, h2.root) }).toEqual({
        path,
        status,
        text: relative(over1.text, h1.root),
      });
    }
    expect(h2.logged(50)).toEqual([]);
  });

  it('a deny after a hook sent the headers (an event stream): the stream is reset as cut, the session goes on', async () => {
    const { port, logged } = await serve({ http2: true });
    const session = connect(`http://127.0.0.1:${port}`);
    const stream = session.request({ ':path': '/stream?file=../etc' });
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      text += chunk;
    });
    const error = await new Promise<NodeJS.ErrnoException>((resolve) =>
      stream.on('error', resolve),
    );
    expect({ text, rstCode: stream.rstCode }).toEqual({
      text: 'data: open\n\n',
      rstCode: http2.constants.NGHTTP2_INTERNAL_ERROR,
    });
    expect(error.code).toBe('ERR_HTTP2_STREAM_ERROR');
    expect((await h2Request(session, 'GET', '/q?file=public/a.txt')).status).toBe(200);
    expect(logged(40)).toEqual([]);
  });
});

describe("{ headers: 'host' } over h2c", () => {
  // HTTP/2 carries the host as `:authority`, and a `host` header only if the
  // client adds one: the spec checks what `request.host` returns, a `host`
  // header if there is one, else `:authority`.
  const ROUTES = ['/host', '/host-optional'];

  it('checks :authority when no host header came, as request.host reads it', async () => {
    const s = await serve({ http2: true });
    const session = connect(`http://127.0.0.1:${s.port}`);
    const authority = `127.0.0.1:${s.port}`;
    for (const path of ROUTES) {
      expect((await h2Request(session, 'GET', path)).json).toEqual({
        checked: join(s.root, 'public', authority),
        host: authority,
      });
      // nghttp2 refuses a `/` in `:authority`, not a `..` (out of `public` here).
      const forged = await h2Request(session, 'GET', path, { ':authority': '..' });
      expect([path, forged.status, forged.json]).toEqual([
        path,
        403,
        denied('headers.host', 'path-not-in-allowlist'),
      ]);
    }
    expect(s.logged(50)).toEqual([]);
  });

  it('checks the host header when both came, as request.host reads it', async () => {
    const s = await serve({ http2: true });
    const session = connect(`http://127.0.0.1:${s.port}`);
    for (const path of ROUTES) {
      const allowed = { host: 'files.example', ':authority': '..' };
      expect((await h2Request(session, 'GET', path, allowed)).json).toEqual({
        checked: join(s.root, 'public/files.example'),
        host: 'files.example',
      });
      const forged = { host: '..', ':authority': 'files.example' };
      expect((await h2Request(session, 'GET', path, forged)).json).toEqual(
        denied('headers.host', 'path-not-in-allowlist'),
      );
    }
  });

  it('over HTTP/1.1, checks the Host header as before', async () => {
    const s = await serve({});
    for (const path of ROUTES) {
      const allowed = await request(s.port, { path, headers: { host: 'files.example' } });
      expect(allowed.json).toEqual({
        checked: join(s.root, 'public/files.example'),
        host: 'files.example',
      });
      const forged = await request(s.port, { path, headers: { host: '..' } });
      expect([forged.status, forged.json]).toEqual([
        403,
        denied('headers.host', 'path-not-in-allowlist'),
      ]);
    }
  });
});

describe('a denied 50 MB upload over h2c', () => {
  const SIZE = 50 * MB;
  const CASES = [
    ['with a Content-Length', '/file', 'virus.exe', true, 'file *'],
    ['without one', '/file', 'virus.exe', false, 'file *'],
    ['a denied param, attachFieldsToBody', '/a/into/..%2F..%2Fetc', 'ok.bin', true, 'params.dir'],
    ['a denied param, no length', '/a/into/..%2F..%2Fetc', 'ok.bin', false, 'params.dir'],
  ] as const;

  it.each(CASES)(
    '%s: a prompt 403, nothing written, the stream ends, the session goes on',
    async (_name, path, filename, length, label) => {
      const s = await serve({ http2: true });
      const session = connect(`http://127.0.0.1:${s.port}`);
      const sent = await upload(session, path, filename, { size: SIZE, length });
      expect(sent).toMatchObject({ status: 403, json: denied(label, 'path-not-in-allowlist') });
      expect(sent.headers.connection).toBeUndefined();
      expect(sent.answeredMs).toBeLessThan(1000);
      // Read and dropped to the end: the stream ends cleanly, not stuck on flow control.
      expect(sent).toMatchObject({ stuck: false, rstCode: 0, sent: SIZE });
      expect(sent.error).toBeUndefined();
      expect(filesIn(s.root)).toEqual([]);
      expect(s.calls()).toBe(path === '/file' ? 1 : 0);
      expect(await settled(() => s.open() === 0)).toBe(true);
      const next = await h2Request(session, 'GET', '/files/public%2Fa.txt');
      expect(next.status).toBe(200);
      expect(s.logged(50)).toEqual([]);
    },
  );

  it('past lingerBytes, the stream is reset with NO_ERROR after the 403', async () => {
    const s = await serve({ http2: true }, { lingerBytes: MB });
    const session = connect(`http://127.0.0.1:${s.port}`);
    const sent = await upload(session, '/file', 'virus.exe', { size: SIZE });
    expect(sent).toMatchObject({ status: 403, json: denied('file *', 'path-not-in-allowlist') });
    expect(sent).toMatchObject({ stuck: false, rstCode: 0 });
    expect(sent.error).toBeUndefined();
    expect(sent.sent).toBeLessThan(SIZE / 2);
    expect(await settled(() => s.open() === 0)).toBe(true);
    expect((await h2Request(session, 'GET', '/files/public%2Fa.txt')).status).toBe(200);
  });

  it('report-only: the part reaches the handler unchecked, and is read to its end', async () => {
    const s = await serve({ http2: true }, { reportOnly: true });
    const session = connect(`http://127.0.0.1:${s.port}`);
    const sent = await upload(session, '/file', 'virus.exe', { size: SIZE });
    expect(sent).toMatchObject({ status: 200, json: { stored: null }, stuck: false, rstCode: 0 });
    expect(filesIn(s.root)).toEqual([]);
    expect(s.logged(40)).toEqual(['pathgate: would deny (report-only)']);
  });

  it("onDeny's body and headers go out, once", async () => {
    const denials: string[] = [];
    const s = await serve(
      { http2: true },
      {
        onDeny(denial, _request, reply) {
          denials.push(denial.label);
          reply.header('x-denied-by', 'pathgate');
          return { refused: denial.label };
        },
      },
    );
    const session = connect(`http://127.0.0.1:${s.port}`);
    const sent = await upload(session, '/file', 'virus.exe', { size: SIZE });
    expect(sent).toMatchObject({ status: 403, json: { refused: 'file *' }, stuck: false });
    expect(sent.headers['x-denied-by']).toBe('pathgate');
    expect(denials).toEqual(['file *']);
    expect(filesIn(s.root)).toEqual([]);
  });
});

describe('concurrent streams on one h2c session', () => {
  it('denied uploads do not harm the allowed ones beside them', async () => {
    const s = await serve({ http2: true });
    const session = connect(`http://127.0.0.1:${s.port}`);
    const size = 8 * MB;
    const names = ['a.bin', 'virus.exe', 'b.bin', '../x.bin', 'c.bin'];
    const sent = await Promise.all(names.map((n) => upload(session, '/file', n, { size })));
    expect(sent.map((r) => r.status)).toEqual([200, 403, 200, 403, 200]);
    expect(sent.every((r) => !r.stuck && r.error === undefined)).toBe(true);
    expect(filesIn(s.root)).toEqual(['uploads/a.bin', 'uploads/b.bin', 'uploads/c.bin']);
    const whole = sha256(Buffer.alloc(size, 0x61));
    for (const name of ['a', 'b', 'c']) {
      expect(sha256(readFileSync(join(s.root, `uploads/${name}.bin`)))).toBe(whole);
    }
    expect(await settled(() => s.open() === 0)).toBe(true);
  });
});

describe('a client that gives up mid-upload over h2c', () => {
  const CASES = [
    ['cancels an allowed upload', 'ok.bin', { cancelAt: 2 * MB }],
    ['cancels a denied upload', 'virus.exe', { cancelAt: 2 * MB }],
    ['destroys the session during an allowed upload', 'ok.bin', { destroyAt: 2 * MB }],
    ['destroys the session during a denied upload', 'virus.exe', { destroyAt: 2 * MB }],
  ] as const;

  it.each(CASES)('%s: no file, no crash, the server goes on', async (_name, filename, abort) => {
    const s = await serve({ http2: true });
    const session = connect(`http://127.0.0.1:${s.port}`);
    await upload(session, '/file', filename, { size: 16 * MB, ...abort });
    // The handler ends too (a stream cut mid-file fails its part), and leaves no `.partial`.
    const clean = () => s.open() === 0 && s.completed() === 1 && filesIn(s.root).length === 0;
    expect(await settled(clean)).toBe(true);
    const fresh = connect(`http://127.0.0.1:${s.port}`);
    expect((await h2Request(fresh, 'GET', '/files/public%2Fa.txt')).status).toBe(200);
    expect(s.logged(60)).toEqual([]);
  });
});

/** One HTTP/1.1 GET over TLS, trusting `ca`. */
function httpsGet(port: number, ca: string, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, ca, agent: false, path }, (res) =>
      readAnswer(res).then(resolve, reject),
    );
    req.on('error', reject);
  });
}

/** A self-signed certificate for 127.0.0.1 (test only; valid until 2126), made with openssl. */
const fixture = (name: string) =>
  readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('h2 and HTTP/1.1 on one TLS server (allowHTTP1)', () => {
  it('answers both alike; a refused upload closes the connection or ends the stream', async () => {
    const [key, cert] = [fixture('tls-key.pem'), fixture('tls-cert.pem')];
    const s = await serve({ http2: true, https: { allowHTTP1: true, key, cert } });
    const session = connect(`https://127.0.0.1:${s.port}`, { ca: cert });
    for (const path of ['/files/public%2Fa.txt', '/files/..%2F..%2Fetc%2Fpasswd', '/q?file=..']) {
      const over1 = await httpsGet(s.port, cert, path);
      const over2 = await h2Request(session, 'GET', path);
      expect([over2.status, over2.text]).toEqual([over1.status, over1.text]);
    }
    const size = 8 * MB;
    const body = Buffer.concat([fileHead('virus.exe'), Buffer.alloc(size, 0x61), TAIL]);
    // A keep-alive request: node:https without an agent would ask for the close itself.
    const head = [
      `content-type: multipart/form-data; boundary=${BOUNDARY}`,
      `content-length: ${body.length}`,
      'connection: keep-alive',
    ];
    const sent = rawRequest('POST /file HTTP/1.1', head, body);
    const over1 = await exchangeRaw(s.port, [sent], { ca: cert });
    const refused = denied('file *', 'path-not-in-allowlist');
    expect(closing(over1)).toEqual({
      answers: [[403, 'close', refused]],
      closed: true,
      error: undefined,
    });
    const over2 = await upload(session, '/file', 'virus.exe', { size });
    expect(over2).toMatchObject({ status: 403, json: refused, stuck: false, rstCode: 0 });
    expect(over2.headers.connection).toBeUndefined();
    expect(filesIn(s.root)).toEqual([]);
    expect(await settled(() => s.open() === 0)).toBe(true);
    expect(s.logged(50)).toEqual([]);
  });
});
