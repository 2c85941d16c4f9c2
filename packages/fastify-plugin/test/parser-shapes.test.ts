import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { lazyValues } from '../../../test/lazy-values.js';
import pathgate, { type PathSpec } from '../src/index.js';
import { denied, newApp } from './helpers.js';

// The shapes Fastify's parsers give a value (router options, a custom
// querystring parser, content-type parsers), through the real router
// (`inject`). On an allow, the handler's own read of the value is what
// pathgate checked; an unreadable shape is a 403, never a 500.

const ROOT = '/srv/root';

/** What a request must get: the raw value the handler reads and the checked path(s), or a deny. */
type Want = { raw: unknown; checked: string | string[] } | { reason: string; label: string };

interface Shapes {
  app: FastifyInstance;
  calls: () => number;
}

/**
 * An app with one route per source; each handler answers the raw value it
 * reads (`request.query.p`, `request.body.p`, …) and what pathgate checked.
 */
async function shapesApp(options: FastifyServerOptions = {}): Promise<Shapes> {
  const app = newApp(options);
  await app.register(pathgate, { root: ROOT, fs: ['docs/**'] });
  app.addContentTypeParser('text/x-lazy', { parseAs: 'string' }, (_req, body, done) =>
    done(null, lazyValues(body as string)),
  );
  let calls = 0;
  const route = (url: string, paths: PathSpec[], raw: (request: never) => unknown) =>
    app.route({
      method: ['GET', 'POST'],
      url,
      config: { pathgate: { mode: 'read', paths } },
      handler: async (request) => {
        calls += 1;
        const { pathgate: info } = request;
        const checked = info?.params.p ?? info?.query.p ?? info?.body.p ?? info?.headers['x-p'];
        return { raw: raw(request as never), checked };
      },
    });
  route('/q', [{ query: 'p' }], (r: { query: { p?: unknown } }) => r.query.p);
  route('/b', [{ body: 'p' }], (r: { body: { p?: unknown } }) => r.body.p);
  return { app, calls: () => calls };
}

async function expectShape(
  shapes: Shapes,
  inject: {
    url: string;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    payload?: string;
  },
  want: Want,
): Promise<void> {
  const before = shapes.calls();
  const res = await shapes.app.inject(inject);
  if ('reason' in want) {
    expect(res.json()).toEqual(denied(want.label, want.reason));
    expect(res.statusCode).toBe(403);
    expect(shapes.calls()).toBe(before);
  } else {
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(want);
  }
}

describe('a parser whose value read throws', () => {
  it('a querystring parser: 403 not-a-string, not a 500', async () => {
    const shapes = await shapesApp({
      routerOptions: { querystringParser: lazyValues as (text: string) => Record<string, string> },
    });
    const bad = { reason: 'not-a-string', label: 'query.p' };
    await expectShape(shapes, { url: '/q?p=docs%2Fa%ZZ' }, bad);
    await expectShape(shapes, { url: '/q?p=docs%2Fa&p=%ZZ' }, bad);
    await expectShape(
      shapes,
      { url: '/q?p=docs%2Fa' },
      { raw: 'docs/a', checked: `${ROOT}/docs/a` },
    );
  });

  it('a content-type parser: 403 not-a-string, not a 500', async () => {
    const shapes = await shapesApp();
    const lazy = (payload: string) => ({
      url: '/b',
      method: 'POST' as const,
      headers: { 'content-type': 'text/x-lazy' },
      payload,
    });
    await expectShape(shapes, lazy('p=%E0%A4%A'), { reason: 'not-a-string', label: 'body.p' });
    await expectShape(shapes, lazy('p=docs%2Fa'), { raw: 'docs/a', checked: `${ROOT}/docs/a` });
  });
});
