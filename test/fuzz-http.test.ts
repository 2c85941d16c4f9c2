import { checkFs, isInside } from '@pathgate/core';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  FRAMEWORKS,
  type Framework,
  forbidden,
  type Got,
  type Handed,
  MULTIPART_TYPE,
  multipartBody,
  type Sent,
  send,
  watchApps,
} from './apps.js';
import {
  decide,
  type FilePart,
  LOCATIONS,
  type LocationName,
  pathsOf,
  policy,
  ROOT,
  ROUTES,
} from './attack-corpus.js';
import { campaignTimeout } from './campaign.js';
import {
  encode,
  flags,
  JSON_PIECES,
  type Json,
  jsonOf,
  PATH_SAFE,
  PIECES,
  pathFrom,
  piece,
  QUERY_SAFE,
  toJson,
} from './fuzz-values.js';

// Fuzzing over HTTP: fast-check builds paths from traversal pieces (dots,
// slashes, backslashes, percent text, NUL, look-alike dots and slashes,
// combining marks, astral characters, `~`), encodes them for the wire in
// varying ways, and sends them as a wildcard or named param, a header,
// repeated query keys, JSON bodies of arbitrary shape and multipart filenames
// to one Fastify and one Express server, open for the whole property. Each answer (status, body
// and reason) must be the core's decision for the value the framework hands
// over; the handler runs only on allow, and every path it gets lies inside
// the root and passes an independent `checkFs`.

// HFUZZ_RUNS, HFUZZ_SEED and HFUZZ_TIMEOUT (ms, each property's test) override the runs, the
// (random) seed and the timeout, which grows with the runs by itself.
const RUNS = Number(process.env.HFUZZ_RUNS ?? 250);
vi.setConfig({ testTimeout: campaignTimeout('HFUZZ_TIMEOUT', RUNS, 20) });
const SEED = process.env.HFUZZ_SEED === undefined ? undefined : Number(process.env.HFUZZ_SEED);

/** Allowed and denied answers in the current property: both must occur, or it proved little. */
const tally = { allow: 0, deny: 0 };

const seen = watchApps(policy, ROUTES);

// ---- values -------------------------------------------------------------------

/** A path from traversal pieces, often starting inside an allowed folder. */
const pathText = (extra: fc.Arbitrary<string> = piece) =>
  pathFrom(['', '', 'public/', 'uploads/', '/srv/root/uploads/', '../', '/'], extra);

// ---- one request, both checks -------------------------------------------------

/**
 * Sends the request and checks the adapter's answer against the core's
 * decision for `value` at `at`; `handedValue` reads back what the framework
 * handed over (to check the generated encoding reached it intact).
 */
async function agree(
  framework: Framework,
  at: LocationName,
  value: unknown,
  sent: Sent,
  handedValue?: (h: Handed) => unknown,
): Promise<void> {
  seen.clear(framework);
  const before = seen.calls[framework];
  const got: Got = await send(seen.apps[framework].port, sent);
  if (handedValue) {
    const handed = [...seen.handled[framework], ...seen.denied[framework].map((d) => d.handed)];
    expect(handed.map(handedValue)).toEqual([value]);
  }
  const decision = decide(at, value);
  const { mode } = LOCATIONS[at].route;
  if (decision.status === 403) {
    tally.deny += 1;
    expect(got).toEqual({
      status: 403,
      body: forbidden(decision.denial.reason, decision.denial.label),
    });
    expect(seen.calls[framework] - before).toBe(0);
    expect(
      seen.denied[framework].map(({ denial: d }) => [d.reason, d.label, d.result?.path]),
    ).toEqual([[decision.denial.reason, decision.denial.label, decision.denial.result?.path]]);
    return;
  }
  tally.allow += 1;
  expect(got).toEqual({ status: 200, body: { pathgate: decision.info } });
  expect(seen.calls[framework] - before).toBe(1);
  for (const path of [pathsOf(at, decision.info)].flat() as string[]) {
    // An independent look at what the handler got.
    expect(isInside(path, ROOT)).toBe(true);
    expect(checkFs(policy, path, mode).outcome).toBe('allow');
  }
}

/** A request the framework refuses before pathgate runs: that status, no deny, no handler. */
async function refusedBefore(framework: Framework, sent: Sent, status: number): Promise<void> {
  seen.clear(framework);
  const before = seen.calls[framework];
  const got = await send(seen.apps[framework].port, sent);
  expect(got.status).toBe(status);
  expect(seen.calls[framework] - before).toBe(0);
  expect(seen.denied[framework]).toEqual([]);
}

const own = (from: unknown, key: string): unknown =>
  Object.hasOwn(from as object, key) ? (from as Record<string, unknown>)[key] : undefined;

// ---- JSON shapes ------------------------------------------------------------------

const KEYS = fc.constantFrom(
  'path',
  'path',
  'files',
  '__proto__',
  'constructor',
  'prototype',
  '0',
  'a',
);
const jsonValue = jsonOf(pathText(JSON_PIECES), KEYS);

/** Path values, often a string or a list inside `uploads/` (the one writable folder). */
const selectedValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 2, arbitrary: jsonValue },
  { weight: 2, arbitrary: pathText(JSON_PIECES).map((v) => `uploads/${v}`) },
  {
    weight: 1,
    arbitrary: fc.array(
      pathText(JSON_PIECES).map((v) => `uploads/${v}`),
      { minLength: 1, maxLength: 3 },
    ),
  },
);

/** A route and a body shaped around its selector (`path`, or `files[0].path`), or any shape at all. */
const jsonRequest = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(selectedValue, fc.array(fc.tuple(KEYS, jsonValue), { maxLength: 2 }))
      .map(([v, more]) => ({
        at: 'json' as const,
        body: { entries: [['path', v], ...more] } as Json,
      })),
  },
  {
    weight: 3,
    arbitrary: fc.tuple(selectedValue, fc.array(jsonValue, { maxLength: 2 })).map(([v, rest]) => ({
      at: 'json-deep' as const,
      body: { entries: [['files', [{ entries: [['path', v]] }, ...rest]]] } as Json,
    })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      at: fc.constantFrom('json' as const, 'json-deep' as const),
      body: jsonValue,
    }),
  },
);

/** Fastify's JSON parser (secure-json-parse) refuses own `__proto__` keys and `constructor.prototype`. */
function fastifyRefuses(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (Object.hasOwn(value, '__proto__')) return true;
  const ctor = own(value, 'constructor');
  if (typeof ctor === 'object' && ctor !== null && Object.hasOwn(ctor, 'prototype')) return true;
  return Object.values(value).some(fastifyRefuses);
}

// ---- the properties --------------------------------------------------------------

describe.each(FRAMEWORKS)('%s answers as the core decides', (framework) => {
  beforeEach(() => {
    tally.allow = 0;
    tally.deny = 0;
  });

  afterEach(({ task }) => {
    if (task.result?.state !== 'pass') return;
    expect(tally.allow, 'allowed runs').toBeGreaterThan(RUNS / 20);
    expect(tally.deny, 'denied runs').toBeGreaterThan(RUNS / 20);
  });

  it('for a wildcard param and a param joined under public', async () => {
    // An empty param is a corpus row (Express: no route); Fastify caps a named param at 100 characters.
    const target = fc
      .tuple(fc.constantFrom<LocationName>('param', 'param-under'), pathText(), flags)
      .map(([at, value, choices]) => {
        const safe = at === 'param' ? PATH_SAFE : /^[A-Za-z0-9\-._~!$&'()*+,;=:@\\]$/;
        return { at, value, raw: encode(value, safe, choices) };
      })
      .filter(({ at, value, raw }) => value !== '' && (at === 'param' || raw.length <= 100));
    await fc.assert(
      fc.asyncProperty(target, async ({ at, value, raw }) => {
        const { url } = LOCATIONS[at].route;
        const sent = { path: `${url.slice(0, url.lastIndexOf('/') + 1)}${raw}` };
        // Express 5 hands a named wildcard over as its segments; the adapter joins them.
        const key = LOCATIONS[at].key;
        const param = (h: Handed) => [own(h.params, key)].flat().join('/');
        await agree(framework, at, value, sent, param);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('for a header', async () => {
    // Header values are latin1 bytes, never decoded; node trims spaces and tabs around them.
    const ascii = fc.constantFrom(...PIECES.filter((p) => /^[\x20-\x7e]+$/.test(p)));
    await fc.assert(
      fc.asyncProperty(
        pathText(ascii).filter((v) => !/^[ \t]|[ \t]$/.test(v)),
        async (value) => {
          const sent = { path: '/h', headers: { 'x-file': value } };
          await agree(framework, 'header', value, sent, (h) => own(h.headers, 'x-file'));
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('for a query string with repeated and look-alike keys', async () => {
    const key = fc.oneof(
      { weight: 4, arbitrary: fc.constant('path') },
      { weight: 1, arbitrary: fc.constant('%70ath') },
      { weight: 2, arbitrary: fc.constantFrom('other', 'path[]', 'PATH', '__proto__', 'path.0') },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(key, pathText()), { maxLength: 4 }),
        flags,
        async (pairs, choices) => {
          const text = pairs
            .map(([k, v]) => `${k}=${encode(v, QUERY_SAFE, choices, '+')}`)
            .join('&');
          const values = pairs.filter(([k]) => k === 'path' || k === '%70ath').map(([, v]) => v);
          const value = values.length <= 1 ? values[0] : values;
          const sent = { path: text === '' ? '/q' : `/q?${text}` };
          await agree(framework, 'query', value, sent, (h) => own(h.query, 'path'));
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('for JSON bodies of any shape around the selected key', async () => {
    await fc.assert(
      fc.asyncProperty(jsonRequest, async ({ at, body }) => {
        const text = toJson(body);
        const value: unknown = JSON.parse(text);
        const sent = { method: 'POST', path: LOCATIONS[at].route.url, json: text };
        // Both are corpus rows: Fastify refuses prototype keys, express.json() a top-level primitive.
        if (framework === 'fastify' && fastifyRefuses(value)) {
          await refusedBefore(framework, sent, 400);
        } else if (framework === 'express' && (typeof value !== 'object' || value === null)) {
          await refusedBefore(framework, sent, 400);
        } else {
          await agree(framework, at, value, sent, (h) => h.body);
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });

  it('for multipart filenames', async () => {
    // No raw NUL in filename="…": busboy 1 (multer) refuses the header (a corpus row).
    const part = fc.record({
      field: fc.constantFrom('upload', 'upload', 'upload', 'other'),
      filename: pathText(),
      quoted: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(part, { minLength: 1, maxLength: 3 }), async (parts) => {
        const sent = parts.map(({ field, filename, quoted }) => {
          if (quoted && !/["\0\r\n]/.test(filename)) {
            const text = Buffer.from(filename.replaceAll('\\', '\\\\'), 'utf8').toString('latin1');
            return {
              field,
              filename,
              star: false,
              disposition: `name="${field}"; filename="${text}"`,
            };
          }
          const text = encode(filename, /^[A-Za-z0-9\-._~]$/, [false]);
          return {
            field,
            filename,
            star: true,
            disposition: `name="${field}"; filename*=UTF-8''${text}`,
          };
        });
        // busboy 1 (multer) skips a part whose filename*= is empty, without an event (a corpus row).
        const reaching = sent.filter(
          (p) => framework === 'fastify' || !(p.star && p.filename === ''),
        );
        const value: FilePart[] = reaching.map(({ field, filename }) => [field, filename] as const);
        const dispositions = sent.map((p) => p.disposition);
        const request = {
          method: 'POST',
          path: '/upload',
          headers: { 'content-type': MULTIPART_TYPE },
          body: multipartBody(dispositions),
        };
        await agree(framework, 'multipart', value, request);
      }),
      { numRuns: RUNS, seed: SEED },
    );
  });
});
