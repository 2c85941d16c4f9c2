import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { denyBody, type GuardDenyReason } from '@pathgate/core';
import { describe, expect, it } from 'vitest';
import {
  BOUNDARY,
  filePart,
  MULTIPART,
  multipart,
  type RawPart,
} from '../packages/express-middleware/test/helpers.js';
import { filesIn } from '../packages/fastify-plugin/test/helpers.js';
import {
  type Answer,
  abortedUpload,
  connections,
  eventually,
  exchange,
  type Sent,
  slices,
} from './fault-clients.js';
import {
  ADAPTERS,
  type FaultServer,
  FIELD,
  JSON_LIMIT,
  SEEDED,
  start,
  UPLOAD_LIMITS,
} from './fault-servers.js';

// Faults over real HTTP, against both adapters: resolvers that throw or
// answer garbage, clients that abort or trickle, bodies over their limits,
// malformed multipart and odd JSON. Every case must end in a clear answer
// (never a 500), leave the server answering with no connection left open,
// and leave nothing new or partial in the sandbox.

/** What one adapter answers to one case. */
interface Want {
  status: number;
  /** pathgate's 403 body, compared whole; or a subset of the framework's own error body. */
  body?: object;
  exact?: boolean;
  /** Files the request rightly leaves in the sandbox, besides the seeded one. */
  stored?: readonly string[];
}

const denied = (reason: GuardDenyReason, label: string): Want => ({
  status: 403,
  body: denyBody({ reason, label }),
  exact: true,
});
const FILE_LABEL = `file ${FIELD}`;

/** The connection is gone, the sandbox holds what it should, and the server still answers. */
async function expectSettled(s: FaultServer, stored: readonly string[] = []): Promise<void> {
  const want = [SEEDED, ...stored].sort();
  const same = () => JSON.stringify(filesIn(s.root)) === JSON.stringify(want);
  await eventually(same);
  expect(filesIn(s.root)).toEqual(want);
  expect(await eventually(async () => (await connections(s.server)) === 0)).toBe(true);
  const health = await exchange(s.port, { method: 'GET', path: '/health' });
  expect(health.status).toBe(200);
}

async function expectAnswer(s: FaultServer, answer: Answer, want: Want): Promise<void> {
  expect(answer.error, 'the connection failed before an answer').toBeUndefined();
  expect(answer.status).toBe(want.status);
  if (want.body && want.exact) expect(answer.json).toEqual(want.body);
  else if (want.body) expect(answer.json).toMatchObject(want.body);
  await expectSettled(s, want.stored);
}

const json = (text: string): Sent => ({
  path: '/move',
  headers: { 'content-type': 'application/json' },
  chunks: text === '' ? [] : [Buffer.from(text)],
});
const upload = (body: Buffer, contentType = MULTIPART): Sent => ({
  path: '/upload',
  headers: { 'content-type': contentType },
  chunks: [body],
});
const filePartOf = (name: Buffer | string, data: Buffer | string = 'x') =>
  filePart(FIELD, name, data);
/** A file part whose raw header lines are given (`name="upload"` and the data are added). */
const rawPart = (headers: string): RawPart => ({ headers, body: 'x' });
const disposition = (filename: string) =>
  `Content-Disposition: form-data; name="${FIELD}"; filename="${filename}"`;
const CLOSING = Buffer.from(`--${BOUNDARY}--\r\n`);

describe('a resolver that throws or answers garbage: 403, never 500', () => {
  const GARBAGE: readonly (readonly [string, () => unknown, GuardDenyReason])[] = [
    [
      'throws',
      () => {
        throw new Error('resolver failure');
      },
      'resolve-failed',
    ],
    ['a relative path', () => 'uploads/x.txt', 'resolve-failed'],
    ['a number', () => 42, 'resolve-failed'],
    ['a Promise (an async resolver)', () => Promise.resolve('/x'), 'resolve-failed'],
    ['a relative path with NUL', () => 'a\0b', 'resolve-failed'],
    // DESIGN.md step 8: a returned string is normalized again, so its NUL is `nul-byte`.
    ['an absolute path with NUL', () => '/srv/a\0b', 'nul-byte'],
    ['an empty string', () => '', 'resolve-failed'],
  ];
  const REQUESTS: readonly (readonly [string, Sent, string])[] = [
    ['a query', { method: 'GET', path: '/read?path=public/a.txt' }, 'query.path'],
    ['a JSON body', json('{"from":"uploads/a","to":"uploads/b"}'), 'body.from'],
    ['a multipart filename', upload(multipart([filePartOf('ok.txt')])), FILE_LABEL],
  ];
  for (const adapter of ADAPTERS) {
    for (const [what, answer, reason] of GARBAGE) {
      for (const [where, sent, label] of REQUESTS) {
        it(`${adapter}: ${what}, on ${where} → 403 ${reason}`, async () => {
          // The root is resolved when the policy is built: it must stay itself.
          const s = await start(adapter, {
            resolve: (root) => (path) => (path === root ? root : answer()),
          });
          await expectAnswer(s, await exchange(s.port, sent), denied(reason, label));
          expect(s.calls.read + s.calls.move).toBe(0);
        });
      }
    }
  }
});

describe('a client that aborts mid-upload: no partial file, no leaked socket', () => {
  const data = Buffer.alloc(200 * 1024, 0x61);
  const body = multipart([filePartOf('ok.bin', data)]);
  const AT = [
    ['in the part header', 40, false],
    ['in the file data, once the server has opened its file', 64 * 1024, true],
  ] as const;
  for (const adapter of ADAPTERS) {
    for (const [at, bytes, opened] of AT) {
      it(`${adapter}: destroyed ${at}`, async () => {
        const s = await start(adapter);
        let seen: string[] = [];
        const answer = await abortedUpload(
          s.port,
          {
            path: '/upload',
            headers: { 'content-type': MULTIPART },
            chunks: [body.subarray(0, bytes)],
            contentLength: body.length,
          },
          async () => {
            if (!opened) return new Promise((resolve) => setTimeout(resolve, 100));
            await eventually(() => filesIn(s.root).length > 1);
            seen = filesIn(s.root);
          },
        );
        expect(answer.status).toBeUndefined();
        // Fastify's handler writes a temp sibling; Express's safe storage the target itself.
        if (opened) expect(seen).toHaveLength(2);
        await expectSettled(s);
      });
    }
  }
});

describe('a slow client, bytes trickled over seconds', () => {
  const GAP_MS = 50;
  const trickled = (filename: string, data: Buffer): Sent => ({
    path: '/upload',
    // Asks to keep the connection, so a `Connection: close` is the server's own
    // (node:http without an agent asks for the close itself).
    headers: { 'content-type': MULTIPART, connection: 'keep-alive' },
    chunks: slices(multipart([filePartOf(filename, data)]), 128),
    gapMs: GAP_MS,
  });

  it.each(ADAPTERS)(
    '%s: a denied filename gets its 403 as soon as its part header is in',
    async (adapter) => {
      const s = await start(adapter);
      const sent = trickled('../../evil.bin', randomBytes(4096));
      const total = (sent.chunks ?? []).reduce((sum, chunk) => sum + chunk.length, 0);
      const answer = await exchange(s.port, sent);
      await expectAnswer(s, answer, denied('path-not-in-allowlist', FILE_LABEL));
      expect(answer.headers?.connection).toBe('close');
      // The whole body takes ~1.7 s; the part header is in after 2 chunks (~50 ms).
      expect(answer.ms).toBeLessThan(1000);
      expect(answer.sent).toBeLessThan(total / 2);
    },
  );

  it.each(ADAPTERS)('%s: an allowed file completes intact', async (adapter) => {
    const s = await start(adapter);
    const data = randomBytes(4096);
    const answer = await exchange(s.port, trickled('slow.bin', data));
    await expectAnswer(s, answer, {
      status: 201,
      body: { stored: 1 },
      stored: ['uploads/slow.bin'],
    });
    expect(answer.ms).toBeGreaterThan(30 * GAP_MS);
    expect(readFileSync(join(s.root, 'uploads/slow.bin')).equals(data)).toBe(true);
  });
});

/** One request, one answer per adapter. */
interface Row {
  name: string;
  sent: () => Sent;
  fastify: Want;
  express: Want;
}

function runRows(rows: readonly Row[]): void {
  for (const row of rows) {
    for (const adapter of ADAPTERS) {
      const want = row[adapter];
      it(`${adapter}: ${row.name} → ${want.status}`, async () => {
        const s = await start(adapter);
        await expectAnswer(s, await exchange(s.port, row.sent()), want);
      });
    }
  }
}

describe('a body over its limit: 413, nothing written', () => {
  const pad = 'x'.repeat(JSON_LIMIT + 1024);
  const big = Buffer.alloc(UPLOAD_LIMITS.fileSize + 1024, 0x61);
  runRows([
    {
      name: 'JSON over the limit, with a content-length',
      sent: () => json(JSON.stringify({ from: 'uploads/a', to: 'uploads/b', pad })),
      fastify: { status: 413, body: { code: 'FST_ERR_CTP_BODY_TOO_LARGE' } },
      express: { status: 413, body: { message: 'request entity too large' } },
    },
    {
      name: 'JSON over the limit, chunked',
      sent: () => ({
        ...json(''),
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        chunks: [
          Buffer.from('{"from":"uploads/a","to":"uploads/b","pad":"'),
          Buffer.from(pad),
          Buffer.from('"}'),
        ],
      }),
      fastify: { status: 413, body: { code: 'FST_ERR_CTP_BODY_TOO_LARGE' } },
      express: { status: 413, body: { message: 'request entity too large' } },
    },
    {
      name: 'an allowed file over limits.fileSize',
      sent: () => upload(multipart([filePartOf('big.bin', big)])),
      fastify: { status: 413, body: { code: 'FST_REQ_FILE_TOO_LARGE' } },
      // multer's MulterError has no status: the gate's upload wrapper gives its limits a 413.
      express: { status: 413, body: { code: 'LIMIT_FILE_SIZE' } },
    },
    {
      name: 'a second file over limits.files',
      sent: () => upload(multipart([filePartOf('a.txt'), filePartOf('b.txt')])),
      fastify: { status: 413, body: { code: 'FST_FILES_LIMIT' } },
      express: { status: 413, body: { code: 'LIMIT_FILE_COUNT' } },
    },
    {
      name: 'a denied filename on a file over the limit (the name is judged first)',
      sent: () => upload(multipart([filePartOf('../big.bin', big)])),
      fastify: denied('path-not-in-allowlist', FILE_LABEL),
      express: denied('path-not-in-allowlist', FILE_LABEL),
    },
  ]);
});

describe('a malformed multipart body: a clear 4xx, nothing written', () => {
  const whole = multipart([filePartOf('ok.txt', 'y'.repeat(5000))]);
  const TERMINATED = 'Part terminated early due to unexpected end of multipart data';
  runRows([
    {
      name: 'no boundary in the content-type',
      sent: () => upload(multipart([filePartOf('ok.txt')]), 'multipart/form-data'),
      // busboy's malformed-body errors have no statusCode: the plugin's part wrappers make them a 400.
      fastify: { status: 400, body: { message: 'Multipart: Boundary not found' } },
      express: { status: 400, body: { message: 'Multipart: Boundary not found' } },
    },
    {
      name: 'an empty boundary',
      sent: () => upload(multipart([filePartOf('ok.txt')]), 'multipart/form-data; boundary='),
      fastify: denied('missing-path', FILE_LABEL),
      express: denied('missing-path', FILE_LABEL),
    },
    {
      name: 'a boundary over 256 characters',
      sent: () =>
        upload(
          multipart([filePartOf('ok.txt')]),
          `multipart/form-data; boundary=${'b'.repeat(300)}`,
        ),
      fastify: {
        status: 400,
        body: { message: 'The needle cannot have a length bigger than 256.' },
      },
      express: { status: 400, body: { message: 'Unexpected end of form' } },
    },
    {
      name: 'a truncated part (the body ends mid-part)',
      sent: () => upload(whole.subarray(0, whole.length - 3000)),
      fastify: { status: 400, body: { message: TERMINATED } },
      express: { status: 400, body: { message: 'Unexpected end of form' } },
    },
    {
      name: 'a missing final boundary',
      sent: () => upload(whole.subarray(0, whole.length - CLOSING.length)),
      fastify: { status: 400, body: { message: TERMINATED } },
      express: { status: 400, body: { message: 'Unexpected end of form' } },
    },
    {
      name: 'duplicate Content-Disposition headers, the first denied',
      sent: () =>
        upload(
          multipart([rawPart(`${disposition('../../evil.txt')}\r\n${disposition('ok.txt')}`)]),
        ),
      fastify: denied('path-not-in-allowlist', FILE_LABEL),
      express: denied('path-not-in-allowlist', FILE_LABEL),
    },
    {
      name: 'duplicate Content-Disposition headers, the first allowed: stored under the name checked',
      sent: () =>
        upload(
          multipart([rawPart(`${disposition('ok.txt')}\r\n${disposition('../../evil.txt')}`)]),
        ),
      fastify: { status: 201, body: { stored: 1 }, stored: ['uploads/ok.txt'] },
      express: { status: 201, body: { stored: 1 }, stored: ['uploads/ok.txt'] },
    },
    {
      name: 'a part header over 16 KiB (a long extra header line)',
      sent: () =>
        upload(multipart([rawPart(`${disposition('ok.txt')}\r\nX-Pad: ${'p'.repeat(17 * 1024)}`)])),
      // @fastify/busboy allows 80 KiB of part header (busboy, under multer, 16 KiB): the file is fine.
      fastify: { status: 201, body: { stored: 1 }, stored: ['uploads/ok.txt'] },
      express: { status: 400, body: { message: 'Malformed part header' } },
    },
    {
      name: 'a part header over 16 KiB (a 17 KiB filename)',
      sent: () => upload(multipart([filePartOf(`${'h'.repeat(17 * 1024)}.txt`)])),
      // Over the guard's 4,096 characters: refused before a byte is written.
      fastify: denied('path-too-long', FILE_LABEL),
      express: { status: 400, body: { message: 'Malformed part header' } },
    },
    {
      name: 'a NUL byte in the part header',
      sent: () => upload(multipart([filePartOf(Buffer.from('a\0b.txt'))])),
      fastify: denied('nul-byte', FILE_LABEL),
      express: { status: 400, body: { message: 'Malformed part header' } },
    },
    {
      name: 'a bare LF in the part header',
      sent: () => upload(multipart([rawPart(`${disposition('ok.txt')}\nX-Evil: 1`)])),
      // @fastify/busboy drops the malformed line, so the part has no name: no file came.
      fastify: denied('missing-path', FILE_LABEL),
      express: { status: 400, body: { message: 'Malformed part header' } },
    },
  ]);
});

describe('odd JSON for a body selector: 400 or 403 missing-path', () => {
  const missing = denied('missing-path', 'body.from');
  // express.json() is strict: a top level that is not an object or an array is a 400.
  const strict = { status: 400 };
  runRows([
    {
      name: 'well-formed (the route writes: the control)',
      sent: () => json('{"from":"uploads/a","to":"uploads/b"}'),
      fastify: { status: 201, body: { ok: true }, stored: ['uploads/b'] },
      express: { status: 201, body: { ok: true }, stored: ['uploads/b'] },
    },
    {
      name: 'malformed',
      sent: () => json('{"from": "uploads/a",'),
      fastify: { status: 400, body: { code: 'FST_ERR_CTP_INVALID_JSON_BODY' } },
      express: { status: 400 },
    },
    {
      name: 'empty',
      sent: () => json(''),
      fastify: { status: 400, body: { code: 'FST_ERR_CTP_EMPTY_JSON_BODY' } },
      express: missing,
    },
    { name: 'a bare string', sent: () => json('"uploads/a"'), fastify: missing, express: strict },
    { name: 'a bare number', sent: () => json('42'), fastify: missing, express: strict },
    { name: 'null', sent: () => json('null'), fastify: missing, express: strict },
    {
      name: 'an array',
      sent: () => json('["uploads/a","uploads/b"]'),
      fastify: missing,
      express: missing,
    },
  ]);
});
