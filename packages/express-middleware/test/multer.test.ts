import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { denyBody, type GuardDenyReason } from '@pathgate/core';
import express from 'express';
import multer from 'multer';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Answer } from '../../../test/answer.js';
import { type PathgateLogEntry, type PathgateOptions, pathgate } from '../src/index.js';
import {
  appPerTest,
  BOUNDARY,
  countingErrorHandler,
  fieldPart,
  filePart,
  filesUnder,
  MULTIPART,
  multipart,
  onApp,
  type RawPart,
  request,
  type Served,
  serve,
  sleep,
  tempRoot,
  until,
  upload,
} from './helpers.js';

// The multer integration over real HTTP: a denied filename is refused in
// fileFilter, before storage writes a byte, with the 403 body; an allowed
// file is written exactly at file.pathgatePath; every edge of the filename
// (UTF-8, latin1, filename*, NFD, NUL, empty) is judged as stored.

interface Handled {
  file: (Express.Multer.File & { pathgatePath?: string }) | null;
  files: unknown;
  body: Record<string, unknown>;
  pathgate: unknown;
}

let calls = 0;
const logs: PathgateLogEntry[] = [];

/** Every route of this file, on `app`, for a policy on `dir`. */
function wire(dir: string, app: express.Express, options: Partial<PathgateOptions> = {}) {
  const gate = pathgate({
    root: dir,
    fs: ['rw:uploads/**', 'docs/**'],
    log: (entry) => logs.push(entry),
    ...options,
  } as PathgateOptions);
  const up = gate.multer();
  const handler: express.RequestHandler = (req, res) => {
    calls += 1;
    res.json({
      file: req.file ?? null,
      files: req.files ?? null,
      body: req.body,
      pathgate: req.pathgate ?? null,
    });
  };
  const avatar = { file: 'avatar', under: 'uploads' } as const;
  app.post('/avatar', gate.write(avatar), up.single('avatar'), handler);
  app.post('/optional', gate.write({ ...avatar, optional: true }), up.single('avatar'), handler);
  app.post('/docs', gate.write({ file: 'docs', under: 'uploads' }), up.array('docs'), handler);
  app.post('/any', gate.write({ file: true, under: 'uploads' }), up.any(), handler);
  app.post(
    '/read-only-dir',
    gate.write({ file: 'avatar', under: 'docs' }),
    up.single('avatar'),
    handler,
  );
  app.post(
    '/with-field',
    gate.write(avatar, { body: 'target', under: 'uploads' }),
    up.single('avatar'),
    handler,
  );
  app.post('/fields', gate.write({ body: 'target', under: 'uploads' }), up.none(), handler);
  app.post(
    '/by-query',
    gate.write({ query: 'dir', under: 'uploads' }, avatar),
    up.single('avatar'),
    handler,
  );
  app.post('/orphan', up.single('avatar'), handler);
  const plain = multer({ storage: multer.memoryStorage() });
  app.post('/plain-multer', gate.write(avatar), plain.single('avatar'), handler);
  app.post(
    '/plain-optional',
    gate.write({ body: 'to', under: 'uploads', optional: true }),
    plain.none(),
    handler,
  );
  app.post(
    '/none-optional',
    gate.write({ body: 'to', under: 'uploads', optional: true }),
    up.none(),
    handler,
  );
  app.post('/fields-first', up.none(), gate.write({ body: 'target', under: 'uploads' }), handler);
  app.post('/query-only', gate.write({ query: 'dir', under: 'uploads' }), handler);
  const filtered = gate.multer({
    fileFilter: (_req, file, cb) =>
      cb(null, !file.originalname.endsWith('.exe') && file.pathgatePath !== undefined),
  });
  app.post(
    '/filtered',
    gate.write({ file: 'docs', under: 'uploads' }),
    filtered.array('docs'),
    handler,
  );
  const memory = gate.multer({ storage: multer.memoryStorage() });
  app.post('/memory', gate.write(avatar), memory.single('avatar'), (req, res) => {
    res.json({
      buffer: req.file?.buffer.toString(),
      pathgatePath: req.file?.pathgatePath,
      path: req.file?.path ?? null,
    });
  });
  // Two gates before one multer middleware: each one's deferred specs are checked.
  app.post(
    '/two-gates',
    gate.write({ body: 'folder' }),
    gate.write({ body: 'name' }),
    up.none(),
    handler,
  );
  app.post(
    '/file-then-field',
    gate.write(avatar),
    gate.write({ body: 'target', under: 'uploads' }),
    up.single('avatar'),
    handler,
  );
  app.post(
    '/two-fields',
    gate.write(avatar),
    gate.write({ file: 'doc', under: 'uploads/docs', optional: true }),
    up.any(),
    handler,
  );
  const narrower = pathgate({ root: dir, fs: ['rw:uploads/public/**'] });
  app.post(
    '/two-policies',
    narrower.write(avatar),
    gate.write(avatar),
    up.single('avatar'),
    handler,
  );
  const small = gate.multer({ limits: { fileSize: 10 } });
  app.post('/small', gate.write(avatar), small.single('avatar'), handler);
  const overwriting = gate.multer({ storage: gate.diskStorage({ overwrite: true }) });
  app.post('/overwrite', gate.write(avatar), overwriting.single('avatar'), handler);
}

// Each test gets its own app and root: what one stores, and the warnings a
// gate gives only once, never reach another.
const served = appPerTest((dir, app) => wire(dir, app));
const { errors } = served;

beforeEach(() => {
  calls = 0;
  logs.length = 0;
});

const send = (path: string, parts: readonly RawPart[]) => upload(served.port, path, parts);
const handled = (res: Answer) => res.json as Handled;
const uploads = () =>
  existsSync(join(served.root, 'uploads')) ? filesUnder(join(served.root, 'uploads')) : [];

/** A 403 with the core body; nothing reached the handler or the error handler. */
async function expectDenied(res: Answer, reason: GuardDenyReason, label: string) {
  expect(res.status).toBe(403);
  expect(res.json).toEqual(denyBody({ reason, label }));
  expect(res.text).not.toContain(served.root);
  await sleep(20);
  expect(calls).toBe(0);
  expect(errors.calls).toEqual([]);
}

describe('an allowed file is written where the check looked', () => {
  it('binary content intact at file.pathgatePath, listed on req.pathgate.files', async () => {
    const content = randomBytes(1024 * 1024);
    const res = await send('/avatar', [filePart('avatar', 'intact.bin', content)]);
    expect(res.status).toBe(200);
    const { file, pathgate } = handled(res);
    const target = join(served.root, 'uploads', 'intact.bin');
    expect(file).toMatchObject({
      originalname: 'intact.bin',
      pathgatePath: target,
      path: target,
      size: content.length,
    });
    expect(readFileSync(target).equals(content)).toBe(true);
    expect(pathgate).toMatchObject({
      mode: 'write',
      files: [{ field: 'avatar', filename: 'intact.bin', path: target }],
    });
    expect(calls).toBe(1);
  });

  it('sub-directories are created inside the root; a leading / is a name inside uploads/', async () => {
    const nested = await send('/avatar', [filePart('avatar', 'a/b/c.txt', 'nested')]);
    expect(handled(nested).file?.path).toBe(join(served.root, 'uploads', 'a', 'b', 'c.txt'));
    const absolute = await send('/avatar', [filePart('avatar', '/etc/passwd', 'not really')]);
    expect(handled(absolute).file?.path).toBe(join(served.root, 'uploads', 'etc', 'passwd'));
    expect(readFileSync(join(served.root, 'uploads', 'etc', 'passwd'), 'utf8')).toBe('not really');
  });

  it('a real client (fetch + FormData) with a UTF-8 name', async () => {
    const form = new FormData();
    form.append('avatar', new Blob(['fetched']), 'résumé-日本.txt');
    const res = await fetch(`http://127.0.0.1:${served.port}/avatar`, {
      method: 'POST',
      body: form,
    });
    expect(res.status).toBe(200);
    const { file } = (await res.json()) as Handled;
    expect(file?.originalname).toBe('résumé-日本.txt');
    expect(readFileSync(join(served.root, 'uploads', 'résumé-日本.txt'), 'utf8')).toBe('fetched');
  });

  it('several allowed files under any()', async () => {
    const res = await send('/any', [
      filePart('one', 'multi/1.txt', '1'),
      filePart('two', 'multi/2.txt', '2'),
    ]);
    expect(res.status).toBe(200);
    expect((handled(res).pathgate as { files: unknown[] }).files).toHaveLength(2);
    expect(readFileSync(join(served.root, 'uploads', 'multi', '2.txt'), 'utf8')).toBe('2');
  });

  it('any() with no file at all: the required `file: true` spec is missing', async () => {
    await expectDenied(await send('/any', [fieldPart('note', 'hi')]), 'missing-path', 'file *');
  });
});

describe('a denied filename: 403 from fileFilter, nothing written', () => {
  const DENIED: readonly (readonly [string, RawPart, GuardDenyReason])[] = [
    ['../../etc/passwd', filePart('avatar', '../../etc/passwd'), 'path-not-in-allowlist'],
    ['..', filePart('avatar', '..'), 'path-not-in-allowlist'],
    ['a/../../x', filePart('avatar', 'a/../../x'), 'path-not-in-allowlist'],
    ['.hidden (dotfile)', filePart('avatar', '.env'), 'path-not-in-allowlist'],
    ['. (the directory itself)', filePart('avatar', '.'), 'missing-path'],
    ['x/.. (the directory itself)', filePart('avatar', 'x/..'), 'missing-path'],
    [
      "filename*=UTF-8''..%2F..%2Fx",
      {
        headers: 'Content-Disposition: form-data; name="avatar"; filename*=UTF-8\'\'..%2F..%2Fx',
        body: 'x',
      },
      'path-not-in-allowlist',
    ],
    [
      "filename*=UTF-8''a%00b (decoded NUL)",
      {
        headers: 'Content-Disposition: form-data; name="avatar"; filename*=UTF-8\'\'a%00b.txt',
        body: 'x',
      },
      'nul-byte',
    ],
    [
      'filename* wins over filename',
      {
        headers:
          'Content-Disposition: form-data; name="avatar"; filename="safe.txt"; filename*=UTF-8\'\'..%2F..%2Fevil',
        body: 'x',
      },
      'path-not-in-allowlist',
    ],
    ['empty filename=""', filePart('avatar', ''), 'missing-path'],
    [
      'no filename, octet-stream',
      {
        headers:
          'Content-Disposition: form-data; name="avatar"\r\nContent-Type: application/octet-stream',
        body: 'x',
      },
      'missing-path',
    ],
    [
      'no filename, text/plain (a text field, so the file is missing)',
      {
        headers: 'Content-Disposition: form-data; name="avatar"\r\nContent-Type: text/plain',
        body: 'x',
      },
      'missing-path',
    ],
  ];
  it.each(DENIED)('%s', async (_name, part, reason) => {
    const before = uploads();
    const res = await send('/avatar', [part]);
    await expectDenied(res, reason, 'file avatar');
    expect(uploads()).toEqual(before);
  });

  it('a raw NUL byte in the part header: busboy refuses the header → 400, not 500', async () => {
    const before = uploads();
    const res = await send('/avatar', [filePart('avatar', Buffer.from('a\u0000b.txt'))]);
    expect(res.status).toBe(400);
    expect(calls).toBe(0);
    expect(uploads()).toEqual(before);
  });

  it('write into an r: directory → mode-not-permitted', async () => {
    await expectDenied(
      await send('/read-only-dir', [filePart('avatar', 'a.txt')]),
      'mode-not-permitted',
      'file avatar',
    );
    expect(existsSync(join(served.root, 'docs'))).toBe(false);
  });

  it('an empty name on a field the route does not declare → unexpected-file', async () => {
    await expectDenied(await send('/avatar', [filePart('other', '')]), 'unexpected-file', 'file');
  });

  it('mixed: an allowed 2 MB file, then a denied one → 403, and the allowed file is removed', async () => {
    const before = uploads();
    const res = await send('/docs', [
      filePart('docs', 'good.bin', randomBytes(2 * 1024 * 1024)),
      filePart('docs', 'a/../../../x'),
    ]);
    await expectDenied(res, 'path-not-in-allowlist', 'file docs');
    await sleep(100);
    expect(uploads()).toEqual(before);
  });

  it('mixed under any(): allowed, denied, allowed → nothing stays', async () => {
    const before = uploads();
    const res = await send('/any', [
      filePart('a', 'one.txt', '1'),
      filePart('b', '../two.txt', '2'),
      filePart('c', 'three.txt', '3'),
    ]);
    await expectDenied(res, 'path-not-in-allowlist', 'file *');
    await sleep(100);
    expect(uploads()).toEqual(before);
  });

  it('query is checked before the body is read', async () => {
    const res = await request(served.port, 'POST', '/by-query?dir=../..', {
      headers: { 'content-type': MULTIPART },
      body: Buffer.concat([Buffer.from('x')]),
    });
    await expectDenied(res, 'path-not-in-allowlist', 'query.dir');
  });
});

describe('names as they are decoded: UTF-8 by default, NFC, latin1', () => {
  it('NFD arrives, NFC is checked and written', async () => {
    const res = await send('/avatar', [filePart('avatar', 'cafe\u0301.txt', 'nfd')]);
    const { file } = handled(res);
    expect(file?.originalname).toBe('cafe\u0301.txt');
    expect(file?.pathgatePath).toBe(join(served.root, 'uploads', 'caf\u00e9.txt'));
    expect(uploads()).toContain('caf\u00e9.txt');
    expect(uploads()).not.toContain('cafe\u0301.txt');
  });

  it('raw UTF-8 bytes decode as UTF-8 (not latin1 mojibake)', async () => {
    const res = await send('/avatar', [filePart('avatar', Buffer.from('日本-ü.txt', 'utf8'), 'u')]);
    expect(handled(res).file?.path).toBe(join(served.root, 'uploads', '日本-ü.txt'));
  });

  it('raw latin1 bytes are not valid UTF-8: U+FFFD is checked and written, the same string', async () => {
    const res = await send('/avatar', [
      filePart('avatar', Buffer.from('r\u00e9sum\u00e9-l1.txt', 'latin1'), 'l'),
    ]);
    const { file } = handled(res);
    expect(file?.pathgatePath).toBe(join(served.root, 'uploads', 'r\ufffdsum\ufffd-l1.txt'));
    expect(file?.path).toBe(file?.pathgatePath);
    expect(readFileSync(file?.path ?? '', 'utf8')).toBe('l');
  });

  it("filename*=ISO-8859-1'' is decoded with its declared charset", async () => {
    const part = {
      headers: 'Content-Disposition: form-data; name="avatar"; filename*=ISO-8859-1\'\'na%EFve.txt',
      body: 'i',
    };
    const res = await send('/avatar', [part]);
    expect(handled(res).file?.path).toBe(join(served.root, 'uploads', 'na\u00efve.txt'));
  });
});

describe('multipart fields, required and optional files', () => {
  it('a body spec reads the multipart text field after multer', async () => {
    const res = await send('/with-field', [
      fieldPart('target', 'moved.txt'),
      filePart('avatar', 'f1.txt'),
    ]);
    expect(res.status).toBe(200);
    expect((handled(res).pathgate as { body: unknown }).body).toEqual({
      target: join(served.root, 'uploads', 'moved.txt'),
    });
  });

  it('a denied text field after a stored file → 403, and the file is removed', async () => {
    const res = await send('/with-field', [
      filePart('avatar', 'kept-not.txt'),
      fieldPart('target', '../../etc/x'),
    ]);
    await expectDenied(res, 'path-not-in-allowlist', 'body.target');
    expect(uploads()).not.toContain('kept-not.txt');
  });

  it('a missing text field → missing-path', async () => {
    await expectDenied(
      await send('/with-field', [filePart('avatar', 'f2.txt')]),
      'missing-path',
      'body.target',
    );
    expect(uploads()).not.toContain('f2.txt');
  });

  it('none(): fields only', async () => {
    const ok = await send('/fields', [fieldPart('target', 'a.txt')]);
    expect((handled(ok).pathgate as { body: unknown }).body).toEqual({
      target: join(served.root, 'uploads', 'a.txt'),
    });
    calls = 0;
    await expectDenied(
      await send('/fields', [fieldPart('target', '../../a')]),
      'path-not-in-allowlist',
      'body.target',
    );
  });

  // multer builds req.body with append-field: brackets make lists and objects, as qs does.
  it.each([
    ['an object', [['target[a]', 'a.txt']], 'not-a-string'],
    [
      'a list, one climbing',
      [
        ['target[]', 'a.txt'],
        ['target[]', '../../x'],
      ],
      'path-not-in-allowlist',
    ],
    [
      'a repeated name, one climbing',
      [
        ['target', 'a.txt'],
        ['target', '../../x'],
      ],
      'path-not-in-allowlist',
    ],
    [
      'indexes out of order',
      [
        ['target[1]', 'a.txt'],
        ['target[0]', '../../x'],
      ],
      'path-not-in-allowlist',
    ],
    [
      'a sparse list (holes)',
      [
        ['target[0]', 'a.txt'],
        ['target[5]', 'b.txt'],
      ],
      'not-a-string',
    ],
    ['a nested list', [['target[0][0]', 'a.txt']], 'not-a-string'],
    [
      'a name then a key',
      [
        ['target', 'a.txt'],
        ['target[x]', '../../x'],
      ],
      'not-a-string',
    ],
    ['__proto__[target]', [['__proto__[target]', 'a.txt']], 'missing-path'],
  ] as const)('text field shapes: %s → %s', async (_name, fields, reason) => {
    const parts = fields.map(([name, value]) => fieldPart(name, value));
    await expectDenied(await send('/fields', parts), reason, 'body.target');
  });

  // append-field makes `target[4294967294]` a list of 2³² - 1 elements, all
  // holes but the last, from 30 bytes: copying it whole blocked the process
  // for minutes and then ran it out of memory. Its first hole denies it.
  it('a sparse list of the longest length → not-a-string at once, its length never walked', async () => {
    const started = performance.now();
    const parts = [fieldPart('target[0]', 'a.txt'), fieldPart('target[4294967294]', 'b.txt')];
    await expectDenied(await send('/fields', parts), 'not-a-string', 'body.target');
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('a required file that is not sent → missing-path; optional → the handler runs without it', async () => {
    await expectDenied(
      await send('/avatar', [fieldPart('note', 'hi')]),
      'missing-path',
      'file avatar',
    );
    const optional = await send('/optional', [fieldPart('note', 'hi')]);
    expect(optional.status).toBe(200);
    expect(handled(optional).file).toBeNull();
  });

  it('not multipart at all: the required file is missing', async () => {
    const res = await request(served.port, 'POST', '/avatar', {
      headers: { 'content-type': 'application/json' },
      body: '{"avatar":"x.txt"}',
    });
    await expectDenied(res, 'missing-path', 'file avatar');
  });
});

describe('wiring', () => {
  it('gate.multer() without a gate middleware fails closed, and warns once', async () => {
    const before = uploads();
    await expectDenied(
      await send('/orphan', [filePart('avatar', 'a.txt')]),
      'unexpected-file',
      'file',
    );
    await expectDenied(
      await send('/orphan', [filePart('avatar', 'b.txt')]),
      'unexpected-file',
      'file',
    );
    expect(uploads()).toEqual(before);
    expect(logs).toEqual([
      expect.objectContaining({
        event: 'misconfigured',
        message: expect.stringContaining('gate.write({ file: ... })'),
      }),
    ]);
    const noFile = await send('/orphan', [fieldPart('note', 'hi')]);
    expect(noFile.status).toBe(200);
  });

  it('a gate with no gate.multer() after it fails closed on multipart (plain multer never runs), and warns once', async () => {
    for (let i = 0; i < 2; i += 1) {
      await expectDenied(
        await send('/plain-multer', [filePart('avatar', 'plain.txt')]),
        'missing-path',
        'file avatar',
      );
    }
    expect(logs).toEqual([
      expect.objectContaining({
        event: 'misconfigured',
        message: expect.stringContaining('no gate.multer() middleware after it'),
      }),
    ]);
  });

  it('optional specs do not let a body through that no gate.multer() will check', async () => {
    for (let i = 0; i < 2; i += 1) {
      await expectDenied(
        await send('/plain-optional', [fieldPart('to', '../../../etc/cron.d/x')]),
        'missing-path',
        'body.to',
      );
    }
    expect(logs).toEqual([
      expect.objectContaining({
        event: 'misconfigured',
        message: expect.stringContaining('no gate.multer() middleware after it'),
      }),
    ]);
    // Not multipart, and no parser read it: denied too (unparsed-body.test.ts).
    const json = await request(served.port, 'POST', '/plain-optional', {
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(json.status).toBe(403);
    // No body: nothing is left unread, and the optional value is simply absent.
    const none = await request(served.port, 'POST', '/plain-optional');
    expect(none.status).toBe(200);
  });

  it('another multipart/* type (multipart/mixed) is refused with 415 by the gate multer, not a 500', async () => {
    const before = uploads();
    for (const path of ['/optional', '/none-optional']) {
      const res = await request(served.port, 'POST', path, {
        headers: { 'content-type': `multipart/mixed; boundary=${BOUNDARY}` },
        body: multipart([filePart('avatar', 'mixed.txt'), fieldPart('to', 'x.txt')]),
      });
      expect(res.status).toBe(415);
      expect(calls).toBe(0);
    }
    expect(uploads()).toEqual(before);
  });

  it("a content-type multer's type-is accepts but busboy cannot parse is the client's 400, not a 500", async () => {
    const before = uploads();
    // A space after `=`: multer's type-is passes it on, busboy throws 'Malformed content type'.
    const res = await request(served.port, 'POST', '/optional', {
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY};charset= x` },
      body: multipart([filePart('avatar', 'malformed.txt')]),
    });
    expect([res.status, calls, uploads()]).toEqual([400, 0, before]);
  });

  it('a chunked multipart body (no content-length) is still read by multer and checked', async () => {
    const sendChunked = (path: string, parts: readonly RawPart[]) =>
      request(served.port, 'POST', path, {
        headers: { 'content-type': MULTIPART },
        body: multipart(parts),
        chunked: true,
      });
    const ok = await sendChunked('/fields', [fieldPart('target', 'chunked.txt')]);
    expect((handled(ok).pathgate as { body: unknown }).body).toEqual({
      target: join(served.root, 'uploads', 'chunked.txt'),
    });
    calls = 0;
    await expectDenied(
      await sendChunked('/fields', [fieldPart('target', '../../a')]),
      'path-not-in-allowlist',
      'body.target',
    );
    await expectDenied(
      await sendChunked('/avatar', [filePart('avatar', '../../chunked.txt')]),
      'path-not-in-allowlist',
      'file avatar',
    );
    await expectDenied(
      await sendChunked('/plain-multer', [filePart('avatar', 'plain.txt')]),
      'missing-path',
      'file avatar',
    );
  });

  it('a route without body or file specs lets a multipart body through untouched', async () => {
    const res = await send('/query-only?dir=in', [fieldPart('note', 'hi')]);
    expect(res.status).toBe(200);
    expect(logs).toEqual([]);
  });

  it('gate.multer().none() before the gate parses the fields first, like express.json()', async () => {
    const ok = await send('/fields-first', [fieldPart('target', 'first.txt')]);
    expect((handled(ok).pathgate as { body: unknown }).body).toEqual({
      target: join(served.root, 'uploads', 'first.txt'),
    });
    calls = 0;
    await expectDenied(
      await send('/fields-first', [fieldPart('target', '../../../x')]),
      'path-not-in-allowlist',
      'body.target',
    );
  });

  it("the user's fileFilter runs after pathgate's and sees file.pathgatePath", async () => {
    const res = await send('/filtered', [
      filePart('docs', 'keep.txt'),
      filePart('docs', 'skip.exe'),
    ]);
    expect(res.status).toBe(200);
    expect((handled(res).files as { originalname: string }[]).map((f) => f.originalname)).toEqual([
      'keep.txt',
    ]);
    expect((handled(res).pathgate as { files: unknown[] }).files).toHaveLength(1);
    expect(uploads()).toContain('keep.txt');
    expect(uploads()).not.toContain('skip.exe');
    calls = 0;
    await expectDenied(
      await send('/filtered', [filePart('docs', '../evil.txt')]),
      'path-not-in-allowlist',
      'file docs',
    );
  });

  it('another storage (memory) gets the checked path too', async () => {
    const res = await send('/memory', [filePart('avatar', 'mem.txt', 'in memory')]);
    expect(res.json).toEqual({
      buffer: 'in memory',
      pathgatePath: join(served.root, 'uploads', 'mem.txt'),
      path: null,
    });
    expect(uploads()).not.toContain('mem.txt');
  });

  it("multer's own errors reach the app's error handler once, nothing stays on disk", async () => {
    const unexpected = await send('/avatar', [filePart('other', 'o.txt')]);
    expect(unexpected.json).toMatchObject({ code: 'LIMIT_UNEXPECTED_FILE' });
    const tooBig = await send('/small', [filePart('avatar', 'big.txt', 'x'.repeat(100))]);
    expect(tooBig.json).toMatchObject({ code: 'LIMIT_FILE_SIZE' });
    await sleep(50);
    expect(errors.calls).toHaveLength(2);
    expect(uploads()).not.toContain('big.txt');
    expect(calls).toBe(0);
  });
});

describe('several gates before one multer middleware', () => {
  it("the first gate's body specs are checked too, not only the last one's", async () => {
    await expectDenied(
      await send('/two-gates', [
        fieldPart('folder', '../../../etc'),
        fieldPart('name', 'uploads/a'),
      ]),
      'path-not-in-allowlist',
      'body.folder',
    );
    await expectDenied(
      await send('/two-gates', [fieldPart('name', 'uploads/a')]),
      'missing-path',
      'body.folder',
    );
    await expectDenied(
      await send('/two-gates', [fieldPart('folder', 'uploads/f'), fieldPart('name', '../n')]),
      'path-not-in-allowlist',
      'body.name',
    );
    const ok = await send('/two-gates', [
      fieldPart('folder', 'uploads/f'),
      fieldPart('name', 'uploads/n'),
    ]);
    expect(ok.status).toBe(200);
    // req.pathgate gathers every gate's paths, as on a route without multipart.
    expect((handled(ok).pathgate as { body: unknown }).body).toEqual({
      folder: join(served.root, 'uploads', 'f'),
      name: join(served.root, 'uploads', 'n'),
    });
  });

  it("a later gate's denied field removes the file an earlier gate allowed", async () => {
    const before = uploads();
    await expectDenied(
      await send('/file-then-field', [
        filePart('avatar', 'kept-not.txt'),
        fieldPart('target', '../../x'),
      ]),
      'path-not-in-allowlist',
      'body.target',
    );
    expect(uploads()).toEqual(before);
    const ok = await send('/file-then-field', [
      filePart('avatar', 'both.txt'),
      fieldPart('target', 't.txt'),
    ]);
    expect(ok.status).toBe(200);
    const info = handled(ok).pathgate as { body: unknown; files: unknown };
    expect(info.body).toEqual({ target: join(served.root, 'uploads', 't.txt') });
    expect(info.files).toEqual([
      { field: 'avatar', filename: 'both.txt', path: join(served.root, 'uploads', 'both.txt') },
    ]);
  });

  it('gates declaring different file fields each decide their own field', async () => {
    const ok = await send('/two-fields', [
      filePart('avatar', 'face.png'),
      filePart('doc', 'cv.txt'),
    ]);
    expect(ok.status).toBe(200);
    expect((handled(ok).pathgate as { files: unknown }).files).toEqual([
      { field: 'avatar', filename: 'face.png', path: join(served.root, 'uploads', 'face.png') },
      { field: 'doc', filename: 'cv.txt', path: join(served.root, 'uploads', 'docs', 'cv.txt') },
    ]);
    calls = 0;
    const before = uploads();
    await expectDenied(
      await send('/two-fields', [filePart('avatar', 'a2.png'), filePart('evil', 'x.txt')]),
      'unexpected-file',
      'file',
    );
    await expectDenied(
      await send('/two-fields', [filePart('doc', 'only.txt')]),
      'missing-path',
      'file avatar',
    );
    expect(uploads()).toEqual(before);
  });

  it('a file must pass every gate that declares files, each with its own policy', async () => {
    const before = uploads();
    await expectDenied(
      await send('/two-policies', [filePart('avatar', 'wide-only.txt')]),
      'path-not-in-allowlist',
      'file avatar',
    );
    expect(uploads()).toEqual(before);
    const ok = await send('/two-policies', [filePart('avatar', 'public/both.txt')]);
    expect(ok.status).toBe(200);
    expect(handled(ok).file?.path).toBe(join(served.root, 'uploads', 'public', 'both.txt'));
  });
});

describe('which gate.multer() follows a gate', () => {
  it("one for another method, or a gate that is not on the request's route, never counts", async () => {
    const dir = tempRoot();
    const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: () => {} });
    const plain = multer({ storage: multer.memoryStorage() });
    let reached = 0;
    const answer: express.RequestHandler = (_req, res) => {
      reached += 1;
      res.json({ ok: true });
    };
    const app = express();
    app
      .route('/a')
      .all(gate.write({ file: 'f', under: 'uploads' }, { body: 'target', under: 'uploads' }))
      .put(gate.multer().any(), answer)
      .post(plain.any(), answer);
    const pass: express.RequestHandler = (_req, _res, next) => next();
    app.route('/v').all(pass).put(gate.multer().any(), answer);
    // Not route-level: req.route is still the /v route above, whose stack it is not in.
    app.use('/v', gate.write({ file: 'f', under: 'uploads' }));
    app.post('/v', plain.any(), answer);
    const s = await serve(app);
    try {
      const a = await upload(s.port, '/a', [
        filePart('f', '../../evil'),
        fieldPart('target', '../../../etc/x'),
      ]);
      expect(a.json).toEqual(denyBody({ reason: 'missing-path', label: 'body.target' }));
      const v = await upload(s.port, '/v', [filePart('f', 'evil')]);
      expect(v.json).toEqual(denyBody({ reason: 'missing-path', label: 'file f' }));
      expect(reached).toBe(0);
    } finally {
      await s.close();
      dir.remove();
    }
  });
});

describe('a gate.multer() storage and a gate of another root', () => {
  /** A folder beside `root` whose name starts with root's own: its paths start with root's text. */
  const sibling = (root: string) => {
    const other = `${root}-sibling`;
    mkdirSync(other);
    return { root: other, remove: () => rmSync(other, { recursive: true, force: true }) };
  };

  it.each([
    ['an unrelated root', () => tempRoot()],
    ["a sibling whose name starts with this gate's root", sibling],
  ])(
    '%s: refuses to store a file checked there (500), and writes nothing',
    async (_name, other) => {
      const one = tempRoot();
      const two = other(one.root);
      const errors = countingErrorHandler();
      const first = pathgate({ root: one.root, fs: ['rw:uploads/**'], log: () => {} });
      const second = pathgate({ root: two.root, fs: ['rw:uploads/**'], log: () => {} });
      const app = express();
      app.post(
        '/up',
        second.write({ file: 'f', under: 'uploads' }),
        first.multer().any(),
        (_q, res) => {
          res.json({ ok: true });
        },
      );
      app.use(errors.handler);
      const s = await serve(app);
      // Its folder there in the other root too: the storage refuses it, not the file system.
      mkdirSync(join(two.root, 'uploads'));
      try {
        const res = await upload(s.port, '/up', [filePart('f', 'a.txt')]);
        expect(res.status).toBe(500);
        expect(errors.calls).toHaveLength(1);
        // The message says what to fix, as for every setup mistake the storage meets.
        expect(errors.calls[0]).toMatchObject({
          code: 'PATHGATE_STORAGE_FAILED',
          message: expect.stringMatching(/another root/),
        });
        expect(res.text).not.toContain(two.root);
        expect(res.text).not.toContain(one.root);
        expect(filesUnder(one.root)).toEqual([]);
        expect(filesUnder(two.root)).toEqual([]);
      } finally {
        await s.close();
        one.remove();
        two.remove();
      }
    },
  );
});

describe('a gate.multer() storage and a gate.read() file spec', () => {
  // docs/ is read-only to the policy: a file there was checked for reading, never for writing.
  const build = (root: string, app: express.Express) => {
    const gate = pathgate({ root, fs: ['rw:uploads/**', 'docs/**'], log: (e) => logs.push(e) });
    const up = gate.multer();
    const answer: express.RequestHandler = (req, res) => {
      res.json({ path: req.file?.pathgatePath, files: req.pathgate?.files });
    };
    const avatar = { file: 'avatar', under: 'uploads' } as const;
    const docs = { file: 'avatar', under: 'docs' } as const;
    app.post('/read', gate.read(docs), up.single('avatar'), answer);
    app.post('/write-read', gate.write(avatar), gate.read(docs), up.single('avatar'), answer);
    const rollout = pathgate({ root, fs: ['docs/**'], reportOnly: true, log: (e) => logs.push(e) });
    app.post('/report-read', rollout.read(docs), rollout.multer().single('avatar'), answer);
  };

  it.each([
    ['enforcing', '/read'],
    ['report-only', '/report-read'],
  ])(
    'alone (%s): the storage refuses to write a path checked for reading (500), nothing written',
    async (_mode, path) => {
      await onApp(build, async (port, root, errors) => {
        const res = await upload(port, path, [filePart('avatar', 'a.txt')]);
        expect(res.status).toBe(500);
        expect(errors).toHaveLength(1);
        expect(errors[0]).toMatchObject({
          code: 'PATHGATE_STORAGE_FAILED',
          message: expect.stringMatching(/gate\.read\(\)/),
        });
        expect(res.text).not.toContain(root);
        expect(filesUnder(root)).toEqual([]);
        // Logged as a wiring mistake, as a file no gate.multer() decided is.
        expect(logs).toContainEqual(
          expect.objectContaining({
            event: 'misconfigured',
            message: expect.stringMatching(/gate\.read\(\)/),
          }),
        );
      });
    },
  );

  it('after a gate.write(): stored at the path that gate checked, not the later read one', async () => {
    await onApp(build, async (port, root) => {
      const res = await upload(port, '/write-read', [filePart('avatar', 'a.txt')]);
      const path = join(root, 'uploads', 'a.txt');
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ path, files: [{ field: 'avatar', filename: 'a.txt', path }] });
      expect(filesUnder(root)).toEqual(['uploads/a.txt']);
    });
  });
});

describe('a report-only onDeny that answers after multer', () => {
  it('leaves no stored file behind', async () => {
    const dir = tempRoot();
    const enforcing = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: () => {} });
    const watching = pathgate({
      root: dir.root,
      fs: ['rw:uploads/**'],
      reportOnly: true,
      log: () => {},
      onDeny: (_denial, _req, res) => {
        res.status(451).json({ error: 'unavailable' });
      },
    });
    const app = express();
    app.post(
      '/up',
      enforcing.write({ file: 'f', under: 'uploads' }),
      watching.write({ body: 't' }),
      enforcing.multer().any(),
      (_req, res) => {
        res.json({ ok: true });
      },
    );
    const s = await serve(app);
    try {
      const res = await upload(s.port, '/up', [
        filePart('f', 'kept.txt'),
        fieldPart('t', '../../etc/x'),
      ]);
      expect(res.status).toBe(451);
      // The app's onDeny answered first: the stored file goes after that answer.
      expect(await until(() => filesUnder(dir.root).length === 0)).toBe(true);
    } finally {
      await s.close();
      dir.remove();
    }
  });
});

describe("a gate's deferred checks belong to its own route", () => {
  it("after next('route'), a later route's gate.multer() does not take them", async () => {
    const dir = tempRoot();
    const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: () => {} });
    const up = gate.multer();
    const app = express();
    const answer: express.RequestHandler = (req, res) => {
      res.json({ route: req.route?.path, file: req.file?.path ?? null });
    };
    const skip: express.RequestHandler = (_req, _res, next) => next('route');
    app.post('/x', gate.write({ file: 'doc', under: 'uploads' }), skip, up.single('doc'), answer);
    app.post('/x', up.single('doc'), answer);
    const s = await serve(app);
    try {
      const res = await upload(s.port, '/x', [filePart('doc', 'a.txt')]);
      expect(res.json).toEqual(denyBody({ reason: 'unexpected-file', label: 'file' }));
      expect(filesUnder(dir.root)).toEqual([]);
    } finally {
      await s.close();
      dir.remove();
    }
  });
});

describe('a report-only gate beside an enforcing one on an upload route', () => {
  it('reports its denies, and never decides a file part the enforcing gate decides', async () => {
    const dir = tempRoot();
    const seen: PathgateLogEntry[] = [];
    const ro = pathgate({
      root: dir.root,
      fs: ['rw:other/**'],
      reportOnly: true,
      log: (entry) => seen.push(entry),
    });
    const enf = pathgate({ root: dir.root, fs: ['rw:uploads/**'], log: () => {} });
    const memory = enf.multer({ storage: multer.memoryStorage() });
    let handled = 0;
    const app = express();
    const answer: express.RequestHandler = (req, res) => {
      handled += 1;
      res.json({ path: req.file?.path ?? null, pathgatePath: req.file?.pathgatePath ?? null });
    };
    const roFile = ro.write({ file: 'doc', under: 'other' });
    app.post(
      '/a',
      roFile,
      enf.write({ file: 'doc', under: 'uploads', optional: true }),
      memory.single('doc'),
      answer,
    );
    app.post(
      '/a2',
      roFile,
      enf.write({ body: 'folder', optional: true }),
      memory.single('doc'),
      answer,
    );
    app.post(
      '/b',
      enf.write({ file: 'doc', under: 'uploads' }),
      ro.write({ file: 'doc', under: 'nope' }),
      enf.multer().single('doc'),
      answer,
    );
    const s = await serve(app);
    try {
      const a = await upload(s.port, '/a', [filePart('doc', '../../etc/evil')]);
      expect(a.status).toBe(403);
      expect(a.json).toEqual(denyBody({ reason: 'path-not-in-allowlist', label: 'file doc' }));
      const a2 = await upload(s.port, '/a2', [filePart('doc', '../../etc/cron.d/evil')]);
      expect(a2.json).toEqual(denyBody({ reason: 'unexpected-file', label: 'file' }));
      expect(handled).toBe(0);
      const b = await upload(s.port, '/b', [filePart('doc', 'ok.txt')]);
      expect(b.status).toBe(200);
      expect(b.json).toEqual({
        path: join(dir.root, 'uploads', 'ok.txt'),
        pathgatePath: join(dir.root, 'uploads', 'ok.txt'),
      });
      expect(filesUnder(dir.root)).toEqual(['uploads/ok.txt']);
      expect(seen.map((e) => [e.event, e.label, e.reason])).toEqual([
        ['report-only', 'file doc', 'path-not-in-allowlist'],
        ['report-only', 'file doc', 'path-not-in-allowlist'],
        ['report-only', 'file doc', 'path-not-in-allowlist'],
      ]);
    } finally {
      await s.close();
      dir.remove();
    }
  });
});

describe("the app's hooks fail inside busboy's and multer's callbacks", () => {
  /** A gate whose onDeny is `onDeny`, on a file route and a field route; the error handler counts. */
  async function withHook(
    onDeny: PathgateOptions['onDeny'],
    run: (s: Served, dir: string, errors: ReturnType<typeof countingErrorHandler>) => Promise<void>,
  ) {
    const dir = tempRoot();
    const errors = countingErrorHandler();
    const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], onDeny, log: () => {} });
    const up = gate.multer();
    const app = express();
    const ok: express.RequestHandler = (_req, res) => {
      res.json({ ok: true });
    };
    app.post('/file', gate.write({ file: 'avatar', under: 'uploads' }), up.single('avatar'), ok);
    app.post('/field', gate.write({ body: 'to', under: 'uploads' }), up.none(), ok);
    app.use(errors.handler);
    const s = await serve(app);
    try {
      await run(s, dir.root, errors);
    } finally {
      await s.close();
      dir.remove();
    }
  }

  it('a throwing onDeny: the default 403, no error handler, nothing written, the server lives', async () => {
    await withHook(
      () => {
        throw new Error('audit sink down');
      },
      async (s, dir, errors) => {
        for (const [path, parts] of [
          ['/file', [filePart('avatar', '../../etc/x', randomBytes(256 * 1024))]],
          ['/field', [fieldPart('to', '../../etc/cron.d/x')]],
        ] as const) {
          errors.calls.length = 0;
          const res = await upload(s.port, path, parts);
          expect(res.status).toBe(403);
          expect(res.json).toMatchObject({
            code: 'PATHGATE_DENIED',
            reason: 'path-not-in-allowlist',
          });
          await sleep(50);
          expect(errors.calls).toHaveLength(0);
        }
        expect(filesUnder(dir)).toEqual([]);
        const alive = await upload(s.port, '/field', [fieldPart('to', 'fine.txt')]);
        expect(alive.status).toBe(200);
      },
    );
  });

  it('an async onDeny that rejects: the default 403, nothing unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await withHook(
        async () => {
          throw new Error('late');
        },
        async (s, _dir, errors) => {
          const file = await upload(s.port, '/file', [filePart('avatar', '../x')]);
          expect(file.status).toBe(403);
          expect(file.json).toEqual(
            denyBody({ reason: 'path-not-in-allowlist', label: 'file avatar' }),
          );
          const field = await upload(s.port, '/field', [fieldPart('to', '../x')]);
          expect(field.json).toEqual(
            denyBody({ reason: 'path-not-in-allowlist', label: 'body.to' }),
          );
          await sleep(20);
          expect(errors.calls).toEqual([]);
        },
      );
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});

describe('the safe disk storage: no symlinks, no overwrite, no 500 on bad names', () => {
  it('an existing file → 409 PATHGATE_EXISTS (unless overwrite), content untouched', async () => {
    await send('/avatar', [filePart('avatar', 'once.txt', 'first')]);
    const again = await send('/avatar', [filePart('avatar', 'once.txt', 'second')]);
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ code: 'PATHGATE_EXISTS' });
    expect(readFileSync(join(served.root, 'uploads', 'once.txt'), 'utf8')).toBe('first');
    const replaced = await send('/overwrite', [filePart('avatar', 'once.txt', 'third')]);
    expect(replaced.status).toBe(200);
    expect(readFileSync(join(served.root, 'uploads', 'once.txt'), 'utf8')).toBe('third');
  });

  it('a planted file symlink → 403 PATHGATE_SYMLINK, the target outside untouched', async () => {
    const outside = tempRoot();
    try {
      writeFileSync(join(outside.root, 'victim.txt'), 'safe');
      mkdirSync(join(served.root, 'uploads'), { recursive: true });
      symlinkSync(join(outside.root, 'victim.txt'), join(served.root, 'uploads', 'link.txt'));
      // Exclusive create refuses any existing name, a link included; overwrite refuses to follow it.
      const exclusive = await send('/avatar', [filePart('avatar', 'link.txt', 'PWNED')]);
      expect([exclusive.status, exclusive.json]).toMatchObject([409, { code: 'PATHGATE_EXISTS' }]);
      const overwrite = await send('/overwrite', [filePart('avatar', 'link.txt', 'PWNED')]);
      expect([overwrite.status, overwrite.json]).toMatchObject([403, { code: 'PATHGATE_SYMLINK' }]);
      expect(readFileSync(join(outside.root, 'victim.txt'), 'utf8')).toBe('safe');
    } finally {
      outside.remove();
    }
  });

  it('a planted directory symlink → 403 PATHGATE_NOT_A_DIRECTORY, nothing created outside', async () => {
    const outside = tempRoot();
    try {
      mkdirSync(join(served.root, 'uploads'), { recursive: true });
      symlinkSync(outside.root, join(served.root, 'uploads', 'dirlink'));
      const res = await send('/avatar', [filePart('avatar', 'dirlink/escape.txt', 'PWNED')]);
      expect(res.status).toBe(403);
      expect(res.json).toMatchObject({ code: 'PATHGATE_NOT_A_DIRECTORY' });
      expect(filesUnder(outside.root)).toEqual([]);
    } finally {
      outside.remove();
    }
  });

  it('a name longer than the file system allows → 400 PATHGATE_NAME_TOO_LONG', async () => {
    const res = await send('/avatar', [filePart('avatar', `${'n'.repeat(300)}.txt`)]);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'PATHGATE_NAME_TOO_LONG' });
    // Refused before any directory is made for it: no empty folders are left behind.
    const deep = await send('/avatar', [filePart('avatar', `made1/made2/${'n'.repeat(256)}`)]);
    expect(deep.json).toMatchObject({ code: 'PATHGATE_NAME_TOO_LONG' });
    expect(existsSync(join(served.root, 'uploads', 'made1'))).toBe(false);
    // 255 bytes is a name Linux file systems take (here in 2-byte UTF-8 characters).
    const longest = `${'é'.repeat(125)}.txt`;
    const fits = await send('/avatar', [filePart('avatar', longest)]);
    expect(fits.status).toBe(200);
    expect(existsSync(join(served.root, 'uploads', longest))).toBe(true);
  });

  it("a part header over busboy's limit → 400, not 500", async () => {
    const res = await send('/avatar', [filePart('avatar', `${'h'.repeat(20 * 1024)}.txt`)]);
    expect(res.status).toBe(400);
    expect(errors.calls).toHaveLength(1);
  });
});

describe('modes of the gate', () => {
  it("errors: 'next' → the error handler runs once, with the deny", async () => {
    const dir = tempRoot();
    const handler = countingErrorHandler();
    const app = express();
    const gate = pathgate({ root: dir.root, fs: ['rw:uploads/**'], errors: 'next' });
    app.post(
      '/up',
      gate.write({ file: 'avatar', under: 'uploads' }),
      gate.multer().single('avatar'),
      (_req, res) => {
        res.json({ ok: true });
      },
    );
    app.use(handler.handler);
    const s = await serve(app);
    try {
      const res = await upload(s.port, '/up', [
        filePart('avatar', '../x'),
        filePart('avatar', 'y.txt'),
      ]);
      expect(res.status).toBe(403);
      expect(res.json).toEqual({
        status: 403,
        code: 'PATHGATE_DENIED',
        message: 'file avatar: path denied (path-not-in-allowlist)',
      });
      await sleep(100);
      expect(handler.calls).toHaveLength(1);
      expect(filesUnder(dir.root)).toEqual([]);
    } finally {
      await s.close();
      dir.remove();
    }
  });

  /** This file's routes on a fresh root, with a report-only policy whose log goes to `seen`. */
  const reportOnly = <T>(
    seen: PathgateLogEntry[],
    run: (port: number, root: string) => Promise<T>,
  ): Promise<T> =>
    onApp(
      (dir, app) => wire(dir, app, { reportOnly: true, log: (entry) => seen.push(entry) }),
      run,
    );

  it('reportOnly: every gate reports every field it would deny, after multer', async () => {
    const seen: PathgateLogEntry[] = [];
    await reportOnly(seen, async (port) => {
      const res = await upload(port, '/two-gates', [
        fieldPart('folder', '../../../etc'),
        fieldPart('name', 'docs/read-only'),
      ]);
      expect(res.status).toBe(200);
      expect(seen.map((e) => [e.label, e.reason])).toEqual([
        ['body.folder', 'path-not-in-allowlist'],
        ['body.name', 'mode-not-permitted'],
      ]);
    });
  });

  it('reportOnly: a denied file is logged and goes on unwritten; allowed files are stored', async () => {
    const seen: PathgateLogEntry[] = [];
    await reportOnly(seen, async (port, root) => {
      const res = await upload(port, '/docs', [
        filePart('docs', '../escape.txt', 'e'),
        filePart('docs', 'fine.txt', 'f'),
      ]);
      expect(res.status).toBe(200);
      const files = handled(res).files as { originalname: string; path?: string; size: number }[];
      expect(files.map((f) => [f.originalname, f.path ?? null, f.size])).toEqual([
        ['../escape.txt', null, 1],
        ['fine.txt', join(root, 'uploads', 'fine.txt'), 1],
      ]);
      expect(filesUnder(root)).toEqual(['uploads/fine.txt']);
      expect(seen).toEqual([
        expect.objectContaining({
          event: 'report-only',
          label: 'file docs',
          reason: 'path-not-in-allowlist',
          path: join(root, 'escape.txt'),
        }),
      ]);
    });
  });
});
