import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PermissionPolicy, resolveSymlinks } from '@pathgate/core';
import { afterAll, describe, expect, it } from 'vitest';
import { FRAMEWORKS, forbidden, type Route, send, watchApps } from './apps.js';

// Both adapters with `resolve: resolveSymlinks`, over HTTP, on a real tree: a
// link inside the root is judged, and handed to the handler, as its target.
// So a link out of the root is denied, and a handler that deletes or renames
// the path it was given acts on the target, never on the link.

const base = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-links-')));
const root = join(base, 'root');
mkdirSync(join(root, 'public'), { recursive: true });
mkdirSync(join(root, 'uploads'));
mkdirSync(join(base, 'secret'));
writeFileSync(join(root, 'public', 'a.txt'), 'a');
writeFileSync(join(root, 'uploads', 'b.txt'), 'b');
writeFileSync(join(base, 'secret', 'passwd'), 'x');
symlinkSync('../../secret/passwd', join(root, 'public', 'out.txt'));
symlinkSync(join(base, 'secret'), join(root, 'uploads', 'outdir'));
symlinkSync(join(base, 'secret', 'new'), join(root, 'uploads', 'dangling'));
symlinkSync('a.txt', join(root, 'public', 'in.txt'));
symlinkSync('b.txt', join(root, 'uploads', 'in.txt'));
symlinkSync('loop', join(base, 'secret', 'loop'));
mkdirSync(join(root, 'private'));
// Beyond `uploads/outdir`: a link back in, one whose `..` follows a file, a
// folder, a target not UTF-8; and links up to an ancestor of the root.
symlinkSync(join(root, 'uploads'), join(base, 'secret', 'in'));
symlinkSync('passwd/../dir', join(base, 'secret', 'file-up'));
mkdirSync(join(base, 'secret', 'dir'));
symlinkSync(Buffer.from([0x66, 0xff]), join(base, 'secret', 'not-utf8'));
symlinkSync('../..', join(root, 'uploads', 'up'));
symlinkSync('../../secret/../root/uploads', join(root, 'uploads', 'sibling'));
// The root as a deploy gives it, through a link (`current`), and a link inside named through it.
symlinkSync('root', join(base, 'current'));
symlinkSync(join(base, 'current', 'public'), join(root, 'uploads', 'latest'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const policy = new PermissionPolicy({
  root,
  permissions: { fs: ['./public/**', 'rw:./uploads/**'] },
  resolve: resolveSymlinks,
});
const ROUTES: readonly Route[] = [
  { method: 'GET', url: '/files/*', mode: 'read', paths: [{ params: '*' }] },
  { method: 'POST', url: '/move', mode: 'write', paths: [{ body: 'from' }, { body: 'to' }] },
];
const watched = watchApps(policy, ROUTES);

describe.each(FRAMEWORKS)('%s with resolveSymlinks', (framework) => {
  const port = () => watched.apps[framework].port;

  it.each([
    ['a link out of the root', '/files/public/out.txt'],
    ['a path through a folder link out of the root', '/files/uploads/outdir/passwd'],
  ])('%s is denied', async (_name, path) => {
    const answer = await send(port(), { path });
    expect(answer).toEqual({
      status: 403,
      body: forbidden('path-not-in-allowlist', 'params.*'),
    });
  });

  it('a write through a dangling link out of the root is denied', async () => {
    const json = JSON.stringify({ from: 'uploads/b.txt', to: 'uploads/dangling' });
    const answer = await send(port(), { method: 'POST', path: '/move', json });
    expect(answer).toEqual({ status: 403, body: forbidden('path-not-in-allowlist', 'body.to') });
  });

  // What exists where the rules grant nothing must not show in the answer.
  const LONG = 'n'.repeat(300);
  it.each([
    [
      'outside the root',
      'path-not-in-allowlist',
      ['../secret/loop', '../secret/none', `../secret/${LONG}`, `../none/${LONG}`],
    ],
    ['inside the root, not granted', 'path-not-in-allowlist', [`private/${LONG}`, `none/${LONG}`]],
  ])('a value %s is denied alike whatever is on disk there', async (_where, reason, values) => {
    const answers = [];
    for (const from of values) {
      const json = JSON.stringify({ from, to: 'uploads/x' });
      answers.push(await send(port(), { method: 'POST', path: '/move', json }));
    }
    const denied = { status: 403, body: forbidden(reason, 'body.from') };
    expect(answers).toEqual(values.map(() => denied));
  });

  it('a value through a link inside the root that points out is denied alike whatever lies beyond', async () => {
    const beyond = ['loop/x', 'none/x', 'passwd/x', 'file-up/x', 'not-utf8/x', 'in/b.txt'];
    const values = [...beyond, `dir/${LONG}`, `none/${LONG}`].map((v) => `uploads/outdir/${v}`);
    const answers = [];
    for (const from of values) {
      const json = JSON.stringify({ from, to: 'uploads/x' });
      answers.push(await send(port(), { method: 'POST', path: '/move', json }));
    }
    const denied = { status: 403, body: forbidden('path-not-in-allowlist', 'body.from') };
    expect(answers).toEqual(values.map(() => denied));
  });

  it('a link whose target leaves the root and climbs back in is resolve-failed', async () => {
    const answer = await send(port(), { path: '/files/uploads/sibling/b.txt' });
    expect(answer).toEqual({ status: 403, body: forbidden('resolve-failed', 'params.*') });
  });

  it('a link up to an ancestor of the root and back down is followed', async () => {
    const answer = await send(port(), { path: '/files/uploads/up/root/uploads/b.txt' });
    expect(answer.body).toMatchObject({ pathgate: { params: { '*': `${root}/uploads/b.txt` } } });
  });

  it('a link inside the root is handed to the handler as its target', async () => {
    const read = await send(port(), { path: '/files/public/in.txt' });
    expect(read.body).toMatchObject({ pathgate: { params: { '*': `${root}/public/a.txt` } } });
    const json = JSON.stringify({ from: 'uploads/in.txt', to: 'uploads/c.txt' });
    const moved = await send(port(), { method: 'POST', path: '/move', json });
    expect(moved.body).toMatchObject({
      pathgate: { body: { from: `${root}/uploads/b.txt`, to: `${root}/uploads/c.txt` } },
    });
  });
});

const throughCurrent = watchApps(
  new PermissionPolicy({
    root: join(base, 'current'),
    permissions: { fs: ['./public/**', 'rw:./uploads/**'] },
    resolve: resolveSymlinks,
  }),
  ROUTES.slice(0, 1),
);

describe.each(FRAMEWORKS)(
  '%s with resolveSymlinks and a root given through a link',
  (framework) => {
    it('a link inside that names a folder through the root as given is followed', async () => {
      const answer = await send(throughCurrent.apps[framework].port, {
        path: '/files/uploads/latest/a.txt',
      });
      expect(answer.body).toMatchObject({ pathgate: { params: { '*': `${root}/public/a.txt` } } });
    });
  },
);
