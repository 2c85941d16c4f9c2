import { mkdirSync, renameSync } from 'node:fs';
import multipart from '@fastify/multipart';
import { describe, expect, it } from 'vitest';
import pathgate, { type PathgateOptions } from '../src/index.js';
import { denied, filesIn, listen, newApp, postMultipart, sandbox } from './helpers.js';
import { RULES } from './multipart-server.js';

// Files an app's hook spooled with saveRequestFiles() before pathgate's
// check, which then denies a body value: an enforced deny answers once they
// are removed, so a client that looks right after the 403 finds none; an
// onDeny that answers a report-only deny itself gets them removed just after.

/**
 * `options`: pathgate's, beside its root and rules. `tamper`: what the app
 * does to each spooled file before the deny. `errors`: what was logged at
 * error level or above.
 */
async function serve(options: Partial<PathgateOptions>, tamper?: (path: string) => void) {
  const root = sandbox();
  const spool = sandbox();
  const lines: { level: number; msg: string; err?: { code?: string } }[] = [];
  const app = newApp({
    logger: { level: 'info', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  });
  let looked = () => {};
  const clientLooked = new Promise<void>((resolve) => (looked = resolve));
  let cleaned = () => {};
  const cleanupRan = new Promise<void>((resolve) => (cleaned = resolve));
  // Before multipart's own onResponse hook, which removes the spool after any
  // answer: held until the client has looked, so only pathgate's removal counts.
  app.addHook('onResponse', async () => clientLooked);
  await app.register(pathgate, { root, fs: RULES, ...options } as PathgateOptions);
  await app.register(multipart, { preservePath: true, attachFieldsToBody: true });
  app.addHook('onResponse', async () => cleaned());
  let spooled = 0;
  let calls = 0;
  // An app hook runs before pathgate's route-level check.
  app.addHook('preHandler', async (request) => {
    const { files } = await request.saveRequestFiles({ tmpdir: spool });
    spooled += files.length;
    for (const f of files) tamper?.(f.filepath);
  });
  const paths = [{ file: true, under: 'uploads' }, { body: ['note', 'value'] }] as const;
  app.post('/up', { config: { pathgate: { mode: 'write', paths } } }, async () => {
    calls++;
    return 'ran';
  });
  const port = await listen(app);
  const parts = [
    { disposition: 'name="note"', data: '../../etc/cron.d/x' },
    { disposition: 'name="upload"; filename="a.bin"', data: 'x'.repeat(4096) },
  ];
  const res = await postMultipart(port, '/up', parts);
  const atAnswer = filesIn(spool);
  looked();
  await cleanupRan;
  const errors = lines
    .filter((line) => line.level >= 50)
    .map(({ msg, err }) => ({ msg, code: err?.code }));
  return { res, atAnswer, later: filesIn(spool), spooled, calls, errors };
}

describe('files an earlier hook spooled, then a deny of a body value', () => {
  it('enforced: the 403 goes out once they are removed', async () => {
    const s = await serve({});
    expect(s.res).toMatchObject({
      status: 403,
      json: denied('body.note.value', 'path-not-in-allowlist'),
    });
    expect([s.spooled, s.calls, s.atAnswer, s.later]).toEqual([1, 0, [], []]);
    // multipart's onResponse hook does not try (and fail) to remove them again.
    expect(s.errors).toEqual([]);
  });

  it('one the app moved away already is no error', async () => {
    const s = await serve({}, (path) => renameSync(path, `${path}.kept`));
    expect(s.res).toMatchObject({ status: 403 });
    expect([s.atAnswer.length, s.errors]).toEqual([1, []]);
  });

  it('one that cannot be removed is logged, and the 403 still goes out', async () => {
    // A directory where the file was: removing it without `recursive` fails.
    const s = await serve({}, (path) => {
      renameSync(path, `${path}.kept`);
      mkdirSync(path);
    });
    expect(s.res).toMatchObject({
      status: 403,
      json: denied('body.note.value', 'path-not-in-allowlist'),
    });
    expect(s.errors).toEqual([
      { msg: 'pathgate: could not remove a spooled file', code: 'ERR_FS_EISDIR' },
    ]);
  });

  it('report-only, onDeny answers itself: its answer, then they are removed', async () => {
    const s = await serve({
      reportOnly: true,
      onDeny: (_denial, _request, reply) => reply.code(451).send({ answered: true }),
    });
    expect(s.res).toMatchObject({ status: 451, json: { answered: true } });
    expect([s.spooled, s.calls, s.later]).toEqual([1, 0, []]);
  });
});
