import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EXAMPLES, postFiles, postJson, type Running, type Sent, send, start } from './examples.js';

// The sandbox's own folders broken while the server runs: the root removed
// or a file in its place, or uploads/ or public/ a file. No name a client sends causes
// that, so each route answers the server's fault, a bare 500 (logged),
// never a 404 or 409 that sends the client looking for its mistake.

const SERVER_FAULT = { statusCode: 500, error: 'Internal Server Error', message: 'internal error' };

interface Breakage {
  broken: string;
  /** The path broken, under the sandbox root. */
  at: (root: string) => string;
  /** What is there instead: a file's text, or nothing. */
  instead: string | null;
}

const BREAKAGES: Breakage[] = [
  { broken: 'the root removed', at: (root) => root, instead: null },
  { broken: 'the root a file', at: (root) => root, instead: 'in place of the sandbox' },
  {
    broken: 'uploads/ a file',
    at: (root) => join(root, 'uploads'),
    instead: 'in place of uploads/',
  },
];

/** What is at `path`: a file's text, or nothing (a folder fails the read). */
const found = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : null);

const ROUTES: [string, Sent][] = [
  ['a listing', { path: '/api/list?dir=uploads' }],
  ['a download', { path: '/files/uploads/hello.txt' }],
  ['an upload', postFiles('/api/upload', ['file', 'new/file.txt', 'new'])],
  ['a move', postJson('/api/move', '{"from":"uploads/hello.txt","to":"uploads/new/m.txt"}')],
  ['a delete', { method: 'DELETE', path: '/files/uploads/hello.txt' }],
];

/** public/ a file: the routes that read it (it takes no writes). */
const PUBLIC_BROKEN: Breakage = {
  broken: 'public/ a file',
  at: (root) => join(root, 'public'),
  instead: 'in place of public/',
};
const PUBLIC_ROUTES: [string, Sent][] = [
  ['a listing', { path: '/api/list?dir=public' }],
  ['a download', { path: '/files/public/readme.txt' }],
];

const ROWS = [
  ...BREAKAGES.flatMap((breakage) => ROUTES.map(([route, sent]) => ({ ...breakage, route, sent }))),
  ...PUBLIC_ROUTES.map(([route, sent]) => ({ ...PUBLIC_BROKEN, route, sent })),
];

describe.each(EXAMPLES)('the $name example, its sandbox broken while it runs', (example) => {
  let app: Running | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await app?.stop();
  });

  it.each(ROWS)('$broken: $route is a 500 naming no path, logged, nothing made', async (row) => {
    app = await start(example);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const broken = row.at(app.root);
    rmSync(broken, { recursive: true });
    if (row.instead !== null) writeFileSync(broken, row.instead);
    const got = await send(app.port, row.sent);
    expect([got.status, JSON.parse(got.text)]).toEqual([500, SERVER_FAULT]);
    expect(logged).toHaveBeenCalledOnce();
    // Nothing made in its place: no folder where the root or uploads/ was.
    expect(found(broken)).toBe(row.instead);
  });
});

describe.each(EXAMPLES)('the $name example, its uploads/ removed while it runs', (example) => {
  let app: Running | undefined;
  afterEach(() => app?.stop());

  // A root given with --root may have no uploads/ yet: no fault, an empty folder to be.
  it('a download is a 404, and an upload makes the folder again', async () => {
    app = await start(example);
    rmSync(join(app.root, 'uploads'), { recursive: true });
    const got = await send(app.port, { path: '/files/uploads/hello.txt' });
    expect([got.status, JSON.parse(got.text).message]).toEqual([404, 'no such file or folder']);
    const stored = await send(app.port, postFiles('/api/upload', ['file', 'again.txt', 'again']));
    expect([stored.status, found(join(app.root, 'uploads', 'again.txt'))]).toEqual([201, 'again']);
  });
});
