import { type PathDenial, type PathSpec, PermissionPolicy } from '@pathgate/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { listenNode, type Route, type Sent, send, startApps } from './apps.js';
import { campaignTimeout } from './campaign.js';
import {
  encode,
  flags,
  JSON_PIECES,
  type Json,
  jsonOf,
  PATH_SAFE,
  pathFrom,
  piece,
  QUERY_SAFE,
  toJson,
} from './fuzz-values.js';

// Differential parity, with random declarations: fast-check builds a policy
// (a few allow rules, r: and rw:, dot on or off) and one or two routes (a
// mode, one to three selectors over params, query, body and headers, with
// `under` and `optional`, a wildcard or named params), starts them in
// Fastify, Express and the node:http adapter of test/third-adapter.ts, and
// sends each the same requests built from traversal pieces. All three must
// answer the same status and JSON body: the same 403 body on a deny, the
// same canonical paths (request.pathgate / req.pathgate) on an allow.
//
// Over real HTTP, not app.inject(): light-my-request parses the URL with
// WHATWG URL, which resolves `..`, `%2e` and turns `\` into `/` before the
// router sees them.
//
// Requests the routers or parsers read differently, before pathgate runs,
// are not generated (README, "The same request"; test/attack-corpus.ts):
// an empty wildcard and a named param with a trailing slash (Express's
// router), a named param over 100 characters (Fastify, 414), a `%` that is
// not a UTF-8 escape in a query (kept by Fastify, U+FFFD in Express), a
// query over 1,000 keys (Express's parser drops the rest) or with a raw `#`
// (the end of Express's query, a character in Fastify's), JSON
// bodies with prototype keys (refused by Fastify), a primitive at the top
// (refused by express.json()) or on a GET (Fastify does not read it).
// Multipart filenames are fuzzed in fuzz-http and the upload matrix.

// PFUZZ_SEED, PFUZZ_RUNS and PFUZZ_TIMEOUT (ms) override these for a longer campaign;
// the timeout grows with the runs by itself.
const SEED = Number(process.env.PFUZZ_SEED ?? 20261202);
const RUNS = Number(process.env.PFUZZ_RUNS ?? 400);
const TIMEOUT = campaignTimeout('PFUZZ_TIMEOUT', RUNS, 75);
const ROOT = '/srv/root';

// ---- policies -------------------------------------------------------------------

const GLOBS = [
  'docs/**',
  'docs/*',
  'docs/*.txt',
  'uploads/**',
  'uploads/*',
  '{docs,uploads}/**',
  'docs/sub/**',
  '**',
  '.',
  '*/a',
  '[a-e]*/**',
  'docs/.hidden/**',
  '.env',
  `${ROOT}/uploads/**`,
] as const;

const rule = fc
  .tuple(fc.constantFrom('', 'r:', 'rw:'), fc.constantFrom(...GLOBS))
  .map(([prefix, glob]) => prefix + glob);

const policyOptions = fc.record({
  fs: fc.array(rule, { minLength: 1, maxLength: 4 }),
  dot: fc.boolean(),
});

/** resolve-failed on demand: a resolver that throws for one name. */
const resolve = (path: string) => {
  if (path.endsWith('/boom')) throw new Error('EACCES');
  return path;
};

// ---- routes ---------------------------------------------------------------------

/** The param part of a route's URL; its params' names. */
const SHAPES = {
  none: { url: '', params: [] },
  wildcard: { url: '/*', params: ['*'] },
  one: { url: '/:name', params: ['name'] },
  two: { url: '/:dir/:name', params: ['dir', 'name'] },
  fixed: { url: '/d/:name', params: ['name'] },
  mixed: { url: '/:dir/*', params: ['dir', '*'] },
} as const;
type Shape = keyof typeof SHAPES;

const UNDER = [undefined, '.', 'docs', './uploads', 'docs/sub', `${ROOT}/uploads`] as const;
const QUERY_SELECTORS = ['path', 'p', 'a', ['path', 0], ['path', 1]] as const;
const BODY_SELECTORS = ['path', 'to', ['files', 0, 'path'], ['list', 1]] as const;
const HEADERS = ['x-file', 'X-Path'] as const;

/**
 * A selector over one source, and whether it must be optional: `params`
 * names one of the route's params (or a list into it), or one it lacks,
 * optional only (a required one stops Fastify's startup, not Express's).
 */
const selector = (shape: Shape) => {
  const names = SHAPES[shape].params;
  const params = names.map((name) =>
    fc
      .constantFrom(name, [name, 0] as const)
      .map((params) => ({ source: { params }, optional: false })),
  );
  return fc.oneof(
    ...params,
    fc.constant({ source: { params: 'zz' }, optional: true }),
    fc.constantFrom(...QUERY_SELECTORS).map((query) => ({ source: { query }, optional: false })),
    fc.constantFrom(...BODY_SELECTORS).map((body) => ({ source: { body }, optional: false })),
    fc.constantFrom(...HEADERS).map((headers) => ({ source: { headers }, optional: false })),
  );
};

const spec = (shape: Shape) =>
  fc
    .tuple(selector(shape), fc.constantFrom(...UNDER), fc.boolean())
    .map(([{ source, optional: must }, under, optional]) => {
      const made: Record<string, unknown> = { ...source };
      if (under !== undefined) made.under = under;
      if (optional || must) made.optional = true;
      return made as unknown as PathSpec;
    });

/** What a spec selects, without `under` and `optional`. */
const selectorKey = (spec: PathSpec): string => {
  const {
    under: _under,
    optional: _optional,
    ...selected
  } = spec as object as Record<string, unknown>;
  return JSON.stringify(selected);
};

const routeOf = (i: number) =>
  fc
    .constantFrom(...(Object.keys(SHAPES) as Shape[]))
    .chain((shape) =>
      fc.record({
        shape: fc.constant(shape),
        mode: fc.constantFrom('read' as const, 'write' as const),
        // One spec per selector: two joining it under different folders fail the build (one record key).
        paths: fc.uniqueArray(spec(shape), { minLength: 1, maxLength: 3, selector: selectorKey }),
      }),
    )
    .map(({ shape, mode, paths }): Route & { shape: Shape } => ({
      method: paths.some((p) => 'body' in p) ? 'POST' : 'GET',
      url: `/r${i}${SHAPES[shape].url}`,
      shape,
      mode,
      paths,
    }));

// ---- values ---------------------------------------------------------------------

const STARTS = ['', '', 'docs/', 'uploads/', 'docs/sub/', `${ROOT}/uploads/`, '../', '/', '//'];
const EXTRA = fc.oneof(
  { weight: 6, arbitrary: piece },
  { weight: 2, arbitrary: fc.constantFrom('/./', '//', 'docs', 'sub', '.hidden', 'boom', 'a.txt') },
);
const pathText = pathFrom(STARTS, EXTRA);

/** A wildcard: any path but an empty one. */
const wildcard = fc
  .tuple(pathText, flags)
  .map(([value, choices]) => encode(value, PATH_SAFE, choices))
  .filter((raw) => raw !== '');

/** A named param: no `/` but encoded, not empty, at most 100 characters. */
const named = fc
  .tuple(pathText, flags)
  .map(([value, choices]) => encode(value, PATH_SAFE, choices).replaceAll('/', '%2F'))
  .filter((raw) => raw !== '' && raw.length <= 100);

/** Query text: repeated keys, look-alike keys, every `%` a UTF-8 escape. */
const queryText = fc
  .tuple(
    fc.array(
      fc.tuple(fc.constantFrom('path', 'p', 'a', 'path[]', 'PATH', 'other', '%70ath'), pathText),
      { maxLength: 4 },
    ),
    flags,
  )
  .map(([pairs, choices]) =>
    pairs.map(([k, v]) => `${k}=${encode(v, QUERY_SAFE, choices, '+')}`).join('&'),
  );

/** A header value: printable ASCII, no spaces around it (Node trims them). */
const ASCII = fc.constantFrom(
  '.',
  '..',
  '/',
  '\\',
  '%2e',
  '%2f',
  '%252e',
  '%00',
  '~',
  ';',
  ',',
  ' ',
  'a',
  'docs',
  'sub',
  'boom',
  '.env',
);
const headerValue = pathFrom(STARTS, ASCII).filter((v) => !/^[ \t]|[ \t]$/.test(v));

/** Absent, once, or sent twice (Node joins them with `, `). */
const header = fc.oneof(
  fc.constant(undefined),
  headerValue,
  fc.array(headerValue, { minLength: 2, maxLength: 2 }),
);

const BODY_KEYS = fc.constantFrom('path', 'to', 'files', 'list', '0', 'a');
const jsonText = pathFrom(STARTS, fc.oneof(JSON_PIECES, EXTRA));
const jsonValue = jsonOf(jsonText, BODY_KEYS);
/** An object at the top, often holding the route's keys. */
const body = fc
  .array(
    fc.tuple(
      BODY_KEYS,
      fc.oneof(
        jsonValue,
        jsonText,
        fc.array(jsonText, { maxLength: 3 }),
        fc.array(
          jsonValue.map((path) => ({ entries: [['path', path]] }) as Json),
          { maxLength: 2 },
        ),
      ),
    ),
    { maxLength: 4 },
  )
  .map((entries) => toJson({ entries }));

/** A request to the route: its params, a query, headers, and a body when it is a POST. */
function requestTo(route: Route & { shape: Shape }): fc.Arbitrary<Sent> {
  const params = SHAPES[route.shape].params.map((name) => (name === '*' ? wildcard : named));
  return fc
    .record({
      params: fc.tuple(...params),
      query: queryText,
      headers: fc.record({ 'x-file': header, 'x-path': header }),
      json: route.method === 'POST' ? fc.option(body, { nil: undefined }) : fc.constant(undefined),
    })
    .map(({ params, query, headers, json }) => {
      const prefix = route.url.slice(0, route.url.length - SHAPES[route.shape].url.length);
      const fixed = route.shape === 'fixed' ? '/d' : '';
      const path = `${prefix}${fixed}${params.map((p) => `/${p}`).join('')}`;
      const sent: Sent = {
        method: route.method,
        path: query === '' ? path : `${path}?${query}`,
        headers: Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)),
      };
      return json === undefined ? sent : { ...sent, json };
    });
}

/** How a deny is answered: the default 403, onDeny's own body, or not at all (report-only). */
const ANSWERS = ['default', 'own body', 'report-only'] as const;

const world = fc
  .tuple(
    policyOptions,
    fc.tuple(routeOf(0), routeOf(1)),
    fc.nat({ max: 1 }),
    fc.constantFrom(...ANSWERS),
  )
  .chain(([fs, routes, extra, answer]) => {
    const used = routes.slice(0, extra + 1);
    return fc.record({
      policy: fc.constant(fs),
      routes: fc.constant(used),
      answer: fc.constant(answer),
      requests: fc.array(fc.oneof(...used.map(requestTo)), { minLength: 1, maxLength: 4 }),
    });
  });

// ---- the property ---------------------------------------------------------------

/** Allowed, denied, and report-only requests that reported a deny: each must occur. */
const tally = { allow: 0, deny: 0, reported: 0 };

describe('random routes and policies: Fastify, Express and node:http answer alike', () => {
  it(
    'the same status, body and checked paths',
    async () => {
      await fc.assert(
        fc.asyncProperty(world, async ({ policy: options, routes, answer, requests }) => {
          const policy = new PermissionPolicy({
            root: ROOT,
            permissions: { fs: options.fs },
            dot: options.dot,
            resolve,
          });
          const reportOnly = answer === 'report-only';
          // Each deny, as onDeny saw it (the node guard logs report-only denies instead).
          const denied = { fastify: [] as string[], express: [] as string[], node: [] as string[] };
          const onDeny = (denial: PathDenial) =>
            answer === 'own body' ? { refused: denial.label, why: denial.reason } : undefined;
          const apps = await startApps({
            policy,
            routes,
            reportOnly,
            onDeny: (framework, denial) => {
              denied[framework].push(`${denial.reason} ${denial.label}`);
              return onDeny(denial);
            },
          });
          const node = await listenNode(
            {
              policy,
              reportOnly,
              onDeny: (denial) => {
                denied.node.push(`${denial.reason} ${denial.label}`);
                return onDeny(denial);
              },
              log: (entry) => {
                const { reason, label } = entry as Partial<PathDenial>;
                if (reason !== undefined) denied.node.push(`${reason} ${label}`);
              },
            },
            routes,
          );
          try {
            for (const sent of requests) {
              for (const list of Object.values(denied)) list.length = 0;
              const [fromFastify, fromExpress, fromNode] = await Promise.all([
                send(apps.fastify.port, sent),
                send(apps.express.port, sent),
                send(node.port, sent),
              ]);
              expect({ express: fromExpress, node: fromNode }).toEqual({
                express: fromFastify,
                node: fromFastify,
              });
              expect({ express: denied.express, node: denied.node }).toEqual({
                express: denied.fastify,
                node: denied.fastify,
              });
              if (fromFastify.status === 200) tally.allow += 1;
              if (fromFastify.status === 403) tally.deny += 1;
              if (reportOnly && denied.fastify.length > 0) tally.reported += 1;
            }
          } finally {
            await Promise.all([apps.close(), node.close()]);
          }
        }),
        { seed: SEED, numRuns: RUNS },
      );
      expect(tally.allow).toBeGreaterThan(RUNS / 10);
      expect(tally.deny).toBeGreaterThan(RUNS / 10);
      expect(tally.reported).toBeGreaterThan(RUNS / 20);
    },
    TIMEOUT,
  );
});
