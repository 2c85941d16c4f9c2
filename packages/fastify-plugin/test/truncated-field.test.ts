import multipart from '@fastify/multipart';
import type { PathSpec } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import { closing } from '../../../test/raw-http.js';
import pathgate from '../src/index.js';
import {
  denied,
  listen,
  newApp,
  postMultipart,
  postMultipartKeepAlive,
  type RawPart,
  sandbox,
} from './helpers.js';

// A multipart field longer than @fastify/multipart's `limits.fieldSize`:
// busboy cuts it and multipart only flags the part `valueTruncated`. On a
// route with body specs that cut value must not be checked (and handed on)
// as if the client had sent it: the request is a 413, as multer's
// LIMIT_FIELD_VALUE makes it under the Express adapter.

const RULES = ['./public/**', 'rw:./uploads/**'];
const LIMIT = 16;

const field = (name: string, data: string): RawPart => ({ disposition: `name="${name}"`, data });
const upload: RawPart = {
  disposition: 'name="f"; filename="a.bin"',
  contentType: 'application/octet-stream',
  data: 'x',
};

/** `uploads/` and `n` more characters: 16 is the limit. */
const path = (n: number) => `uploads/${'a'.repeat(n)}`;

type Attach = true | 'keyValues';

interface Route {
  attach: Attach;
  /** With a file spec too: pathgate then also wraps the multipart methods for the files. */
  file: boolean;
  /** Declared before pathgate is registered: guarded by its app-wide hooks. */
  before: boolean;
  reportOnly?: boolean;
}

async function serve({ attach, file, before, reportOnly = false }: Route) {
  const root = sandbox();
  const app = newApp();
  let calls = 0;
  let denies = 0;
  await app.register(multipart, { attachFieldsToBody: attach, limits: { fieldSize: LIMIT } });
  const to: PathSpec = { body: attach === true ? ['to', 'value'] : 'to' };
  const paths: PathSpec[] = file ? [to, { file: 'f', under: 'uploads' }] : [to];
  const declare = () =>
    app.post('/move', { config: { pathgate: { mode: 'write', paths } } }, async (req) => {
      calls++;
      return req.pathgate?.body;
    });
  if (before) declare();
  const onDeny = () => {
    denies++;
  };
  await app.register(pathgate, { root, fs: RULES, reportOnly, onDeny });
  if (!before) declare();
  const port = await listen(app);
  /** The parts, and the route's file after them when it declares one. */
  const withFile = (parts: RawPart[]) => (file ? [...parts, upload] : parts);
  const post = (parts: RawPart[]) => postMultipart(port, '/move', withFile(parts));
  return { root, port, withFile, post, calls: () => calls, denies: () => denies };
}

const TOO_LONG = {
  statusCode: 413,
  code: 'PATHGATE_FIELD_TOO_LONG',
  error: 'Payload Too Large',
  message: 'a multipart field is longer than limits.fieldSize: its value was cut',
};

const ROUTES: Route[] = [true, 'keyValues'].flatMap((attach) =>
  [false, true].flatMap((file) =>
    [false, true].map((before) => ({ attach: attach as Attach, file, before })),
  ),
);

describe.each(ROUTES)(
  'attachFieldsToBody $attach, file spec $file, declared before $before',
  (route) => {
    const label = route.attach === true ? 'to.value' : 'to';

    it('a selected field at the limit is checked as sent', async () => {
      const s = await serve(route);
      const res = await s.post([field('to', path(LIMIT - 8))]);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ [label]: `${s.root}/${path(LIMIT - 8)}` });
    });

    it('a selected field one byte over the limit: 413, the handler never runs', async () => {
      const s = await serve(route);
      const res = await s.post([field('to', path(LIMIT - 7))]);
      expect({ status: res.status, json: res.json }).toEqual({ status: 413, json: TOO_LONG });
      expect(s.calls()).toBe(0);
    });

    it('a cut traversal is a 413, not the deny of the cut text', async () => {
      const s = await serve(route);
      const res = await s.post([field('to', 'uploads/../../etc/passwd')]);
      expect({ status: res.status, json: res.json }).toEqual({ status: 413, json: TOO_LONG });
    });

    it('another field cut, the selected one whole: 413 all the same', async () => {
      const s = await serve(route);
      const res = await s.post([field('note', 'n'.repeat(LIMIT + 1)), field('to', path(1))]);
      expect({ status: res.status, json: res.json }).toEqual({ status: 413, json: TOO_LONG });
    });

    it('a cut field ahead of a large file: the 413 arrives and closes the connection', async () => {
      const s = await serve(route);
      const big: RawPart = {
        ...upload,
        disposition: 'name="big"; filename="b.bin"',
        data: Buffer.alloc(4 << 20),
      };
      // The rest of the body must not hold the keep-alive connection open.
      const parts = s.withFile([field('to', path(LIMIT)), big]);
      const got = await postMultipartKeepAlive(s.port, '/move', parts, { timeoutMs: 5000 });
      expect(closing(got)).toEqual({
        answers: [[413, 'close', TOO_LONG]],
        closed: true,
        error: undefined,
      });
      expect(s.calls()).toBe(0);
    });

    it('a denied path within the limit is still the 403', async () => {
      const s = await serve(route);
      const res = await s.post([field('to', '../x')]);
      expect(res.json).toEqual(denied(`body.${label}`, 'path-not-in-allowlist'));
    });
  },
);

describe('report-only mode', () => {
  it('answers a cut field with the 413 too: it is a limit, not a deny', async () => {
    const s = await serve({ attach: 'keyValues', file: false, before: false, reportOnly: true });
    const res = await s.post([field('to', path(LIMIT))]);
    expect({ status: res.status, json: res.json }).toEqual({ status: 413, json: TOO_LONG });
    expect({ calls: s.calls(), denies: s.denies() }).toEqual({ calls: 0, denies: 0 });
  });
});

describe('a route without a body spec', () => {
  const QUERY: PathSpec = { query: 'p', optional: true };
  it.each([
    ['a file spec: pathgate checks only the file', { file: 'f', under: 'uploads' }, false],
    ['a query spec alone: pathgate wraps no multipart method', QUERY, false],
    ['a query spec alone, declared before pathgate (app-wide hooks)', QUERY, true],
  ] as [string, PathSpec, boolean][])(
    'leaves a cut field to the app, multipart flags it (%s)',
    async (_n, spec, before) => {
      const root = sandbox();
      const app = newApp();
      await app.register(multipart, { attachFieldsToBody: true, limits: { fieldSize: LIMIT } });
      const declare = () =>
        app.post('/up', { config: { pathgate: { mode: 'write', paths: [spec] } } }, async (req) => {
          const { note } = req.body as { note: { value: string; valueTruncated: boolean } };
          return { note: note.value, truncated: note.valueTruncated };
        });
      if (before) declare();
      await app.register(pathgate, { root, fs: RULES });
      if (!before) declare();
      const port = await listen(app);
      const res = await postMultipart(port, '/up', [field('note', 'n'.repeat(LIMIT + 1)), upload]);
      expect(res.json).toEqual({ note: 'n'.repeat(LIMIT), truncated: true });
    },
  );
});

describe('the onRequest hook that guards fields', () => {
  /** The onRequest hooks a body-spec route ends up with, as a later onRoute hook sees them. */
  async function onRequestOf(withMultipart: boolean): Promise<unknown> {
    const app = newApp();
    if (withMultipart) await app.register(multipart, { attachFieldsToBody: 'keyValues' });
    await app.register(pathgate, { root: sandbox(), fs: RULES });
    let seen: unknown;
    app.addHook('onRoute', (route) => {
      seen = route.onRequest;
    });
    const paths = [{ body: 'to' }];
    app.post('/move', { config: { pathgate: { mode: 'write', paths } } }, async () => 'ok');
    await app.ready();
    await app.close();
    return seen;
  }

  it('is added where multipart is registered', async () => {
    expect(await onRequestOf(true)).toEqual([expect.any(Function)]);
  });

  it('is not added to a JSON-only app: its body routes keep running no hook', async () => {
    expect(await onRequestOf(false)).toBeUndefined();
  });
});
