import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import pathgate, { type RouteGuardOptions } from '../src/index.js';
import {
  BOUNDARY,
  denied,
  filesIn,
  listen,
  multipartBody,
  newApp,
  postMultipart,
  type RawPart,
  request,
  sandbox,
} from './helpers.js';

// Body specs on multipart routes: with attachFieldsToBody the fields are in
// the body, where each spec reads them; in streaming mode nothing parsed the
// body, so a body spec cannot be checked and the request is refused.

const RULES = ['./public/**', 'rw:./uploads/**'];

const field = (name: string, data: string): RawPart => ({ disposition: `name="${name}"`, data });
const file = (name: string, filename: string): RawPart => ({
  disposition: `name="${name}"; filename="${filename}"`,
  contentType: 'application/octet-stream',
  data: 'x',
});

describe('attachFieldsToBody: body specs read the fields', () => {
  async function serve() {
    const root = sandbox();
    const app = newApp();
    let calls = 0;
    await app.register(pathgate, { root, fs: RULES });
    const route = (scope: FastifyInstance, to: RouteGuardOptions['paths'][number]) =>
      scope.post('/move', { config: { pathgate: { mode: 'write', paths: [to] } } }, async (req) => {
        calls++;
        return req.pathgate?.body;
      });
    await app.register(
      async (scope) => {
        await scope.register(multipart, { attachFieldsToBody: true });
        route(scope, { body: ['to', 'value'] });
      },
      { prefix: '/parts' },
    );
    await app.register(
      async (scope) => {
        await scope.register(multipart, { attachFieldsToBody: 'keyValues' });
        route(scope, { body: 'to' });
      },
      { prefix: '/kv' },
    );
    return { root, port: await listen(app), calls: () => calls };
  }

  it.each([
    ['true: at ["field", "value"]', '/parts/move', 'body.to.value'],
    ["'keyValues': at the field's name", '/kv/move', 'body.to'],
  ])('%s', async (_name, url, label) => {
    const s = await serve();
    const ok = await postMultipart(s.port, url, [field('to', 'uploads/a.txt')]);
    expect(ok.json).toEqual({ [label.slice('body.'.length)]: `${s.root}/uploads/a.txt` });
    const bad = await postMultipart(s.port, url, [field('to', '../../etc/cron.d/x')]);
    expect(bad.json).toEqual(denied(label, 'path-not-in-allowlist'));
    expect(s.calls()).toBe(1);
  });

  it.each([['/parts/move'], ['/kv/move']])(
    '%s: a malformed body (no boundary, cut, no final boundary) is a 400, not a 500',
    async (url) => {
      const s = await serve();
      const whole = multipartBody([field('to', 'uploads/a.txt')]);
      const withBoundary = `multipart/form-data; boundary=${BOUNDARY}`;
      const bodies: [string, Buffer][] = [
        ['multipart/form-data', whole],
        [withBoundary, whole.subarray(0, whole.length - 30)],
        [withBoundary, whole.subarray(0, whole.length - 8)],
      ];
      for (const [type, body] of bodies) {
        const headers = { 'content-type': type, 'content-length': body.length };
        const res = await request(s.port, { method: 'POST', path: url, headers, body });
        expect(res.status).toBe(400);
      }
      expect(s.calls()).toBe(0);
    },
  );
});

describe('streaming: a body spec on a route with a file spec', () => {
  it('refuses a multipart request (missing-path), optional specs too; the handler never runs', async () => {
    const root = sandbox();
    const app = newApp();
    let calls = 0;
    await app.register(pathgate, { root, fs: RULES });
    await app.register(multipart);
    const paths = [
      { file: true, under: 'uploads' },
      { body: 'note', optional: true },
    ] as const;
    app.post('/up', { config: { pathgate: { mode: 'write', paths } } }, async (req) => {
      calls++;
      for await (const part of req.files()) await part.toBuffer();
      return 'ran';
    });
    const port = await listen(app);
    const res = await postMultipart(port, '/up', [field('note', 'x'), file('f', 'a.txt')]);
    expect(res).toMatchObject({ status: 403, json: denied('body.note', 'missing-path') });
    expect(calls).toBe(0);
    expect(filesIn(root)).toEqual([]);
  });
});

describe('a route without a file spec answers alike, whatever the registration order', () => {
  it.each([
    ['after', false],
    ['before', true],
  ])(
    'declared %s the plugin: its body spec is checked, a file part is not its business',
    async (_when, before) => {
      const root = sandbox();
      const app = newApp();
      await app.register(multipart, { attachFieldsToBody: true });
      const paths = [{ body: ['dest', 'value'] }];
      const declare = () =>
        app.post('/save', { config: { pathgate: { mode: 'write', paths } } }, async (req) => {
          return req.pathgate?.body;
        });
      if (before) declare();
      await app.register(pathgate, { root, fs: RULES });
      if (!before) declare();
      const port = await listen(app);
      const upload = file('photo', 'photo.png');
      const ok = await postMultipart(port, '/save', [field('dest', 'uploads/a.png'), upload]);
      expect(ok.json).toEqual({ 'dest.value': `${root}/uploads/a.png` });
      const bad = await postMultipart(port, '/save', [field('dest', '../a.png'), upload]);
      expect(bad.json).toEqual(denied('body.dest.value', 'path-not-in-allowlist'));
    },
  );
});
