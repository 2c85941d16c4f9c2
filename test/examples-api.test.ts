import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { denyBody, type GuardDenyReason } from '@pathgate/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Started } from '../examples/shared/run.js';
import { createSandbox } from '../examples/shared/sandbox.js';
import { begin, EXAMPLES, type Got, postFiles, postJson, type Sent, send } from './examples.js';
import { FOLDER_DEPTH_MAX } from './examples-model.js';
import { startedForSuite } from './fixture.js';

// One session of requests, in order, against each example over real HTTP:
// both frameworks must give every request the same status and the same body.

const SECRET = 'Not in the allowlist';
const README = 'Files in public/ can be read, never written.\n';
const TOO_LARGE = Buffer.alloc(10 * 1024 * 1024 + 1, 'x');

type Expected =
  | { status: number; json: unknown }
  | { status: number; text: string; type: string }
  | { status: number; contains: string; type: string };

const PAGE: Expected = {
  status: 200,
  contains: '<title>pathgate file API</title>',
  type: 'text/html',
};
const denied = (reason: GuardDenyReason, label: string): Expected => ({
  status: 403,
  json: denyBody({ reason, label }),
});
const failed = (status: number, error: string, message: string): Expected => ({
  status,
  json: { statusCode: status, error, message },
});
const listed = (...entries: [string, 'file' | 'dir', number][]): Expected => ({
  status: 200,
  json: { entries: entries.map(([name, type, size]) => ({ name, type, size })) },
});

const STEPS: readonly (readonly [string, Sent, Expected])[] = [
  ['GET / serves the page', { path: '/' }, PAGE],
  [
    'lists public/',
    { path: '/api/list?dir=public' },
    listed(['docs', 'dir', 0], ['readme.txt', 'file', 45]),
  ],
  [
    'downloads public/readme.txt',
    { path: '/files/public/readme.txt' },
    { status: 200, text: README, type: 'text/plain' },
  ],
  [
    'uploads x.txt into uploads/',
    postFiles('/api/upload', ['file', 'x.txt', 'hello']),
    { status: 201, json: { uploaded: 'uploads/x.txt', size: 5 } },
  ],
  [
    'lists the upload',
    { path: '/api/list?dir=uploads' },
    listed(['hello.txt', 'file', 34], ['link', 'file', 13], ['x.txt', 'file', 5]),
  ],
  [
    'downloads the upload',
    { path: '/files/uploads/x.txt' },
    { status: 200, text: 'hello', type: 'text/plain' },
  ],
  [
    'uploads into a new folder',
    postFiles('/api/upload', ['file', 'notes/a.bin', 'abc']),
    { status: 201, json: { uploaded: 'uploads/notes/a.bin', size: 3 } },
  ],
  [
    'downloads a binary as octet-stream',
    { path: '/files/uploads/notes/a.bin' },
    { status: 200, text: 'abc', type: 'application/octet-stream' },
  ],
  [
    'refuses to replace an upload',
    postFiles('/api/upload', ['file', 'x.txt', 'other']),
    failed(409, 'Conflict', 'already exists'),
  ],
  [
    'refuses an upload below a file',
    postFiles('/api/upload', ['file', 'hello.txt/x.txt', 'x']),
    failed(409, 'Conflict', 'a parent is not a folder'),
  ],
  [
    // A name too long is refused before the walk, as the Express storage does,
    // not met as a parent that is a file on the way.
    'refuses a name too long below a file',
    postFiles('/api/upload', ['file', `hello.txt/${'n'.repeat(256)}`, 'x']),
    failed(400, 'Bad Request', 'name too long'),
  ],
  [
    'refuses an upload named ../../pathgate-escape.txt',
    postFiles('/api/upload', ['file', '../../pathgate-escape.txt', 'evil']),
    denied('path-not-in-allowlist', 'file file'),
  ],
  [
    'refuses an upload into public/',
    postFiles('/api/upload', ['file', '../public/x.txt', 'evil']),
    denied('mode-not-permitted', 'file file'),
  ],
  [
    'refuses an upload over the size limit',
    postFiles('/api/upload', ['file', 'big.bin', TOO_LARGE]),
    failed(413, 'Payload Too Large', 'file too large'),
  ],
  [
    'refuses a second file, keeping neither',
    postFiles('/api/upload', ['file', 'one.txt', '1'], ['file', 'two.txt', '2']),
    failed(413, 'Payload Too Large', 'one file per upload'),
  ],
  [
    'refuses a file in another field',
    postFiles('/api/upload', ['avatar', 'a.txt', 'a']),
    denied('unexpected-file', 'file'),
  ],
  [
    'refuses an upload without a file',
    { method: 'POST', path: '/api/upload' },
    denied('missing-path', 'file file'),
  ],
  [
    'moves uploads/x.txt to uploads/sub/y.txt',
    postJson('/api/move', '{"from":"uploads/x.txt","to":"uploads/sub/y.txt"}'),
    { status: 200, json: { moved: 'uploads/x.txt', to: 'uploads/sub/y.txt' } },
  ],
  [
    'refuses a move out of public/',
    postJson('/api/move', '{"from":"public/readme.txt","to":"uploads/r.txt"}'),
    denied('mode-not-permitted', 'body.from'),
  ],
  [
    'refuses a move into public/',
    postJson('/api/move', '{"from":"uploads/sub/y.txt","to":"public/y.txt"}'),
    denied('mode-not-permitted', 'body.to'),
  ],
  [
    'refuses a move onto an existing file',
    postJson('/api/move', '{"from":"uploads/sub/y.txt","to":"uploads/hello.txt"}'),
    failed(409, 'Conflict', 'already exists'),
  ],
  [
    'refuses a move below a file',
    postJson('/api/move', '{"from":"uploads/sub/y.txt","to":"uploads/hello.txt/y.txt"}'),
    failed(409, 'Conflict', 'a parent is not a folder'),
  ],
  [
    'refuses a move of secret.txt',
    postJson('/api/move', '{"from":"secret.txt","to":"uploads/s.txt"}'),
    denied('path-not-in-allowlist', 'body.from'),
  ],
  [
    'deletes uploads/sub/y.txt',
    { method: 'DELETE', path: '/files/uploads/sub/y.txt' },
    { status: 200, json: { deleted: 'uploads/sub/y.txt' } },
  ],
  [
    'a deleted file is gone',
    { method: 'DELETE', path: '/files/uploads/sub/y.txt' },
    failed(404, 'Not Found', 'no such file or folder'),
  ],
  [
    'refuses a delete in public/',
    { method: 'DELETE', path: '/files/public/readme.txt' },
    denied('mode-not-permitted', 'params.*'),
  ],
  [
    'refuses a traversal download',
    { path: '/files/..%2F..%2Fsecret.txt' },
    denied('path-not-in-allowlist', 'params.*'),
  ],
  [
    'refuses secret.txt by name',
    { path: '/files/secret.txt' },
    denied('path-not-in-allowlist', 'params.*'),
  ],
  [
    'refuses secret.txt from inside uploads/',
    { path: '/files/uploads/..%2Fsecret.txt' },
    denied('path-not-in-allowlist', 'params.*'),
  ],
  [
    'refuses encoded dots',
    { path: '/files/%2e%2e/secret.txt' },
    denied('path-not-in-allowlist', 'params.*'),
  ],
  [
    'refuses a link in uploads/ to secret.txt',
    { path: '/files/uploads/link' },
    denied('path-not-in-allowlist', 'params.*'),
  ],
  [
    'refuses a listing of the root',
    { path: '/api/list?dir=.' },
    denied('path-not-in-allowlist', 'query.dir'),
  ],
  [
    'refuses a listing above the root',
    { path: '/api/list?dir=..%2F..' },
    denied('path-not-in-allowlist', 'query.dir'),
  ],
  ['refuses a listing without dir', { path: '/api/list' }, denied('missing-path', 'query.dir')],
  ['refuses an empty wildcard', { path: '/files/' }, denied('missing-path', 'params.*')],
  [
    'one dir at a time',
    { path: '/api/list?dir=public&dir=uploads' },
    failed(400, 'Bad Request', 'one path at a time'),
  ],
  [
    'a folder is not a download',
    { path: '/files/public/docs' },
    failed(400, 'Bad Request', 'not a file'),
  ],
  [
    // A FIFO nobody writes to: opened as it is, reading would wait forever.
    'a FIFO is not a download',
    { path: '/files/public/docs/pipe' },
    failed(400, 'Bad Request', 'not a file'),
  ],
  [
    // A socket: open() fails (ENXIO) before there is a file to look at.
    'a socket is not a download',
    { path: '/files/public/docs/socket' },
    failed(400, 'Bad Request', 'not a file'),
  ],
  [
    // Refused before the move: link() would fail on a folder (EPERM), a bare 500.
    'a folder is not moved',
    postJson('/api/move', '{"from":"uploads/notes","to":"uploads/moved"}'),
    failed(400, 'Bad Request', 'not a file'),
  ],
  [
    'a missing file',
    { path: '/files/public/nope.txt' },
    failed(404, 'Not Found', 'no such file or folder'),
  ],
  ['bad JSON', postJson('/api/move', '{"from":'), failed(400, 'Bad Request', 'bad request')],
  ['an empty JSON body', postJson('/api/move', ''), failed(400, 'Bad Request', 'bad request')],
  [
    'a JSON body that is not an object',
    postJson('/api/move', '"uploads/hello.txt"'),
    denied('missing-path', 'body.from'),
  ],
  [
    'a JSON body without a content type',
    {
      method: 'POST',
      path: '/api/move',
      body: '{"from":"uploads/hello.txt","to":"uploads/h.txt"}',
    },
    failed(415, 'Unsupported Media Type', 'unsupported media type'),
  ],
  [
    'a move without a body',
    { method: 'POST', path: '/api/move', headers: { 'content-length': '0' } },
    denied('missing-path', 'body.from'),
  ],
  [
    'a body that is not JSON',
    { method: 'POST', path: '/api/move', headers: { 'content-type': 'text/plain' }, body: 'x' },
    failed(415, 'Unsupported Media Type', 'unsupported media type'),
  ],
  [
    // Fastify parses a body on any method but GET, HEAD and TRACE once it has a
    // content type, an absent body included: an empty JSON body is a 400.
    'a JSON content type on a DELETE without a body',
    {
      method: 'DELETE',
      path: '/files/uploads/hello.txt',
      headers: { 'content-type': 'application/json' },
    },
    failed(400, 'Bad Request', 'bad request'),
  ],
  [
    'another content type on a DELETE without a body',
    {
      method: 'DELETE',
      path: '/files/uploads/hello.txt',
      headers: { 'content-type': 'text/plain' },
    },
    failed(415, 'Unsupported Media Type', 'unsupported media type'),
  ],
  [
    'bad JSON to the upload',
    postJson('/api/upload', '{"file":'),
    failed(400, 'Bad Request', 'bad request'),
  ],
  [
    'bad JSON to an unknown route',
    postJson('/nope', '{'),
    failed(400, 'Bad Request', 'bad request'),
  ],
  [
    // Fastify reads no body for a GET.
    'a GET with a body that is not JSON',
    {
      path: '/api/list?dir=public',
      headers: { 'content-type': 'text/plain', 'content-length': '1' },
      body: 'x',
    },
    listed(['docs', 'dir', 0], ['readme.txt', 'file', 45]),
  ],
  [
    // Both apps parse JSON and multipart on every route; a move's body then has no from.
    'a multipart body to the JSON move',
    postFiles('/api/move', ['from', 'uploads/hello.txt', 'x']),
    denied('missing-path', 'body.from'),
  ],
  [
    'an urlencoded body to the upload',
    {
      method: 'POST',
      path: '/api/upload',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'file=x',
    },
    failed(415, 'Unsupported Media Type', 'unsupported media type'),
  ],
  ['an unknown route', { path: '/nope' }, failed(404, 'Not Found', 'no such route')],
  [
    'uploads/ holds only what was allowed',
    { path: '/api/list?dir=uploads' },
    listed(['hello.txt', 'file', 34], ['link', 'file', 13], ['notes', 'dir', 0], ['sub', 'dir', 0]),
  ],
];

function check(got: Got, expected: Expected): void {
  expect(got.status).toBe(expected.status);
  if ('json' in expected) {
    expect(got.type).toMatch(/^application\/json/);
    expect(JSON.parse(got.text)).toEqual(expected.json);
  } else {
    expect(got.type).toContain(expected.type);
    if ('text' in expected) expect(got.text).toBe(expected.text);
    else expect(got.text).toContain(expected.contains);
  }
}

describe.each(EXAMPLES)('the $name example', (example) => {
  const app = startedForSuite(example);
  const answers: Got[] = [];
  const socket = net.createServer();

  beforeAll(async () => {
    // A link planted inside the allowlist, pointing out of it.
    symlinkSync('../secret.txt', join(app.root, 'uploads', 'link'));
    execFileSync('mkfifo', [join(app.root, 'public', 'docs', 'pipe')]);
    const path = join(app.root, 'public', 'docs', 'socket');
    await new Promise<void>((listening) => socket.listen(path, listening));
  });
  afterAll(() => {
    socket.close();
  });

  it.each(STEPS)('%s', async (_name, sent, expected) => {
    const got = await send(app.port, sent);
    answers.push(got);
    check(got, expected);
  });

  it('never sent secret.txt, nor left a file where a request was refused', () => {
    expect(answers.filter((got) => got.text.includes(SECRET))).toEqual([]);
    expect(readFileSync(join(app.root, 'secret.txt'), 'utf8')).toContain(SECRET);
    for (const name of [
      '../pathgate-escape.txt',
      'public/x.txt',
      'uploads/big.bin',
      'uploads/one.txt',
    ]) {
      expect(existsSync(join(app.root, name)), name).toBe(false);
    }
  });
});

// The root given through a link (as a temp folder may be): pathgate checks and
// hands over paths under the resolved root, and the server must take them so.
describe.each(EXAMPLES)('the $name example, its root given through a link', (example) => {
  // Made in beforeAll, not when the file is collected: a run that skips this
  // block (vitest -t) runs no afterAll to remove them.
  let real: string;
  let base: string;
  let server: Started;
  beforeAll(async () => {
    real = createSandbox();
    base = mkdtempSync(join(tmpdir(), 'pathgate-linked-root-'));
    symlinkSync(real, join(base, 'root'));
    server = await example.listen(join(base, 'root'), 0);
  });
  afterAll(async () => {
    await server?.close();
    rmSync(base, { recursive: true, force: true });
    rmSync(real, { recursive: true, force: true });
  });

  it('lists, serves, stores, moves and deletes, naming paths as the client does', async () => {
    const port = Number(new URL(server.url).port);
    const got: Got[] = [];
    for (const sent of [
      { path: '/api/list?dir=uploads' },
      { path: '/files/uploads/hello.txt' },
      postFiles('/api/upload', ['file', 'new.txt', 'data']),
      postJson('/api/move', JSON.stringify({ from: 'uploads/new.txt', to: 'uploads/moved.txt' })),
      { method: 'DELETE', path: '/files/uploads/moved.txt' },
    ]) {
      got.push(await send(port, sent));
    }
    expect(got.map(({ status, text }) => [status, text])).toEqual([
      [200, JSON.stringify({ entries: [{ name: 'hello.txt', type: 'file', size: 34 }] })],
      [200, 'uploads/ can be read and written.\n'],
      [201, JSON.stringify({ uploaded: 'uploads/new.txt', size: 4 })],
      [200, JSON.stringify({ moved: 'uploads/new.txt', to: 'uploads/moved.txt' })],
      [200, JSON.stringify({ deleted: 'uploads/moved.txt' })],
    ]);
    expect(readdirSync(join(real, 'uploads'))).toEqual(['hello.txt']);
  });

  // Counted from the root given, the way from the link to the real root
  // would count too: a target at the limit would be refused.
  it('counts how deep a target lies below the resolved root', async () => {
    const port = Number(new URL(server.url).port);
    // uploads/ and depth/ among them: FOLDER_DEPTH_MAX folders in all, or one more.
    const below = (branch: string, count: number) =>
      `uploads/depth/${branch}/${'d/'.repeat(count - 1)}f.txt`;
    const [fits, moved, over] = [
      below('a', FOLDER_DEPTH_MAX - 2),
      below('b', FOLDER_DEPTH_MAX - 2),
      below('c', FOLDER_DEPTH_MAX - 1),
    ];
    const tooDeep = [
      400,
      JSON.stringify({ statusCode: 400, error: 'Bad Request', message: 'too deep' }),
    ];
    try {
      const got: Got[] = [];
      for (const sent of [
        postFiles('/api/upload', ['file', fits.slice('uploads/'.length), 'x']),
        postFiles('/api/upload', ['file', over.slice('uploads/'.length), 'x']),
        postJson('/api/move', JSON.stringify({ from: fits, to: moved })),
        postJson('/api/move', JSON.stringify({ from: moved, to: over })),
      ]) {
        got.push(await send(port, sent));
      }
      expect(got.map(({ status, text }) => [status, text])).toEqual([
        [201, JSON.stringify({ uploaded: fits, size: 1 })],
        tooDeep,
        [200, JSON.stringify({ moved: fits, to: moved })],
        tooDeep,
      ]);
      expect(existsSync(join(real, 'uploads', 'depth', 'c'))).toBe(false);
    } finally {
      rmSync(join(real, 'uploads', 'depth'), { recursive: true, force: true });
    }
  });
});

// A drop folder: the server may create and remove names in it, not list it.
// As root (who reads any folder) the server runs as nobody for the requests.
describe.each(EXAMPLES)('the $name example, a folder it may write in but not read', (example) => {
  const app = startedForSuite(example);
  const drop = () => join(app.root, 'uploads', 'drop');
  beforeAll(() => {
    mkdirSync(drop());
    writeFileSync(join(drop(), 'old.txt'), 'old');
    chmodSync(drop(), 0o300);
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', '65534', app.root]);
  });
  // Before the sandbox is removed (hooks after run last-in first): a user
  // other than root cannot empty a folder it may not list.
  afterAll(() => chmodSync(drop(), 0o700));

  /** `send`, as nobody when root: the server runs in this process. */
  const sendUnprivileged = async (sent: Sent) => {
    const root = process.getuid?.() === 0;
    if (root) process.seteuid?.(65534);
    try {
      return await send(app.port, sent);
    } finally {
      if (root) process.seteuid?.(0);
    }
  };

  it('deletes, moves in and out, and stores in it, as by path', async () => {
    const sent: Sent[] = [
      { method: 'DELETE', path: '/files/uploads/drop/old.txt' },
      postJson(
        '/api/move',
        JSON.stringify({ from: 'uploads/hello.txt', to: 'uploads/drop/in.txt' }),
      ),
      postJson('/api/move', JSON.stringify({ from: 'uploads/drop/in.txt', to: 'uploads/out.txt' })),
      postFiles('/api/upload', ['file', 'drop/new.txt', 'data']),
    ];
    const got: number[] = [];
    for (const one of sent) got.push((await sendUnprivileged(one)).status);
    expect(got).toEqual([200, 200, 200, 201]);
  });
});

// The command-line entry points, as `npm run example` starts them: a child
// process with the default temp sandbox. The adapters come from their builds
// (the root `npm run check` builds first).

const ROOT_DIR = fileURLToPath(new URL('..', import.meta.url));
// The sandbox runs to the line's end: its path may hold spaces (TMPDIR='/tmp/my tmp').
const BANNER =
  /pathgate example \((\w+)\) listening on (http:\/\/127\.0\.0\.1:\d+) — sandbox (.+)\n/;

/**
 * Starts an example server as `npm run example` does. `fileBlocks`: run it
 * under `ulimit -f` (the kernel then refuses, with EFBIG, any write past that
 * many blocks of 512 or 1024 bytes, whichever the shell counts in). `root`:
 * the folder it serves (`--root`), else a temp sandbox of its own.
 */
function startChild(
  name: string,
  { fileBlocks, root }: { fileBlocks?: number; root?: string } = {},
): Promise<{ child: ChildProcess; url: string; root: string }> {
  const env = { ...process.env };
  delete env.PATHGATE_ROOT;
  delete env.PORT;
  const command = [
    process.execPath,
    '--import',
    'tsx',
    `examples/${name}-files/server.ts`,
    '--port',
    '0',
    ...(root === undefined ? [] : ['--root', root]),
  ];
  const [file, ...args] =
    fileBlocks === undefined
      ? command
      : ['sh', '-c', `ulimit -f ${fileBlocks} && exec "$@"`, 'sh', ...command];
  const child = spawn(file as string, args, {
    cwd: ROOT_DIR,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no banner after 15 s:\n${output}`));
    }, 15_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = BANNER.exec(output);
      if (!match?.[2] || !match[3]) return;
      clearTimeout(timer);
      expect(match[1]).toBe(name);
      resolve({ child, url: match[2], root: match[3] });
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before listening:\n${output}`));
    });
  });
}

/** Sends SIGTERM to `child`; resolves with its exit code. */
/** The child's exit code, once it exits (null when a signal killed it). */
function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise<number | null>((resolve) => child.once('exit', resolve));
}

/** Sends `signal` to the child; its exit code. */
function signalled(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  const exited = exitOf(child);
  child.kill(signal);
  return exited;
}

const terminated = (child: ChildProcess) => signalled(child, 'SIGTERM');

describe.each(EXAMPLES)('examples/$name-files/server.ts', ({ name }) => {
  it('starts on a seeded temp sandbox, guards it, and removes it on SIGTERM', async () => {
    const { child, url, root } = await startChild(name);
    try {
      const port = Number(new URL(url).port);
      expect(existsSync(join(root, 'public', 'readme.txt'))).toBe(true);
      check(await send(port, { path: '/' }), PAGE);
      check(await send(port, { path: '/files/public/readme.txt' }), {
        status: 200,
        text: README,
        type: 'text/plain',
      });
      check(
        await send(port, { path: '/files/..%2F..%2Fsecret.txt' }),
        denied('path-not-in-allowlist', 'params.*'),
      );
    } finally {
      expect(await terminated(child)).toBe(0);
    }
    expect(existsSync(root)).toBe(false);
  }, 30_000);
});

/** Whether something listens on `port` (a connection is accepted). */
function accepts(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(true)).once('error', () => resolve(false));
    socket.once('connect', () => socket.destroy());
  });
}

/** Resolves once nothing listens on `port` any more (a connection is refused). */
async function stoppedListening(port: number): Promise<void> {
  while (await accepts(port)) await sleep(10);
}

/**
 * A terminal's Ctrl-C under `npm run` and tsx: every process of the group
 * gets SIGINT, and the wrappers relay it to the server, which gets it again
 * once it has begun to stop (here: once it stopped listening).
 */
async function ctrlCTwice(child: ChildProcess, port: number): Promise<number | null> {
  const exited = exitOf(child);
  child.kill('SIGINT');
  await stoppedListening(port);
  child.kill('SIGINT');
  return exited;
}

const STOPS = [
  { how: 'SIGTERM', stop: terminated },
  { how: 'a Ctrl-C that comes twice', stop: ctrlCTwice },
  // As a terminal that closes sends it.
  {
    how: 'SIGHUP (its terminal closed)',
    stop: (child: ChildProcess) => signalled(child, 'SIGHUP'),
  },
];

describe.each(EXAMPLES)('examples/$name-files/server.ts holding a deep tree', ({ name }) => {
  // About 2,000 folders, one letter each, the most a folder's 4,043 bytes
  // hold; Node 20's rmSync overflowed the stack on them. Removing them takes
  // a while: a second signal meanwhile (a Ctrl-C relayed by npm and tsx)
  // killed the example and left its sandbox. Clients make 32 folders at
  // most: the tree is made on disk, in the example's own sandbox (one it
  // did not make, `--root`, it never removes).
  it.each(STOPS)(
    'removes its sandbox on $how, however deep the folders in it',
    async ({ stop }) => {
      const { child, url, root } = await startChild(name);
      try {
        const levels = Math.floor((4043 - Buffer.byteLength(`${root}/uploads`)) / 2);
        expect(levels).toBeGreaterThan(1990);
        const deep = join(root, 'uploads', 'a/'.repeat(levels));
        mkdirSync(deep, { recursive: true });
        writeFileSync(join(deep, 'f.txt'), 'deep');
        const port = Number(new URL(url).port);
        check(await send(port, { path: `/files/uploads/${'a/'.repeat(levels)}f.txt` }), {
          status: 200,
          text: 'deep',
          type: 'text/plain',
        });
        expect(await stop(child, port)).toBe(0);
        expect(existsSync(root)).toBe(false);
      } finally {
        child.kill('SIGKILL');
        // Not rmSync: it overflows on this tree too.
        await rm(root, { recursive: true, force: true });
      }
    },
    30_000,
  );
});

describe.each(EXAMPLES)('examples/$name-files/server.ts stopped mid-download', ({ name }) => {
  // A keep-alive client that stops reading a download holds its connection
  // busy: SIGTERM must still close it, not wait for a reader that never comes.
  it('exits promptly on SIGTERM and removes the sandbox', async () => {
    const { child, url, root } = await startChild(name);
    const agent = new http.Agent({ keepAlive: true });
    try {
      // Inside the try: should it throw, the server is still stopped.
      writeFileSync(join(root, 'public', 'big.bin'), Buffer.alloc(32 * 1024 * 1024));
      const stalled = await new Promise<http.IncomingMessage>((resolve, reject) => {
        http.get(`${url}/files/public/big.bin`, { agent }, resolve).once('error', reject);
      });
      expect(stalled.statusCode).toBe(200);
      stalled.pause();
      // Fastify's default close waits for the stalled answer as long as it stalls.
      const late = new Promise((resolve) => setTimeout(resolve, 10_000, 'still running'));
      expect(await Promise.race([terminated(child), late])).toBe(0);
      expect(existsSync(root)).toBe(false);
    } finally {
      agent.destroy();
      child.kill('SIGKILL');
      rmSync(root, { recursive: true, force: true });
    }
  }, 30_000);
});

describe.each(EXAMPLES)('examples/$name-files/server.ts stopped mid-upload', ({ name }) => {
  // The folder is the user's, kept: the upload the stop cut off must not
  // leave its temporary file or the folders it made there.
  it('exits on SIGTERM once nothing of the upload is left in the folder it serves', async () => {
    const root = mkdtempSync(join(tmpdir(), 'pathgate-given-root-'));
    mkdirSync(join(root, 'uploads'));
    const left = () => readdirSync(join(root, 'uploads'), { recursive: true });
    let child: ChildProcess | undefined;
    try {
      // Inside the try: a server that fails to start must not leave the folder.
      const started = await startChild(name, { root });
      child = started.child;
      const { url } = started;
      const port = Number(new URL(url).port);
      const boundary = 'pathgate-stop';
      begin(port, {
        method: 'POST',
        path: '/api/upload',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="new/deep/a.bin"\r\n\r\nhalf`,
      });
      for (let waited = 0; left().length < 3; waited += 10) {
        if (waited > 5000) throw new Error('the upload never opened its file');
        await sleep(10);
      }
      expect(await terminated(child)).toBe(0);
      expect(left()).toEqual([]);
    } finally {
      child?.kill('SIGKILL');
      rmSync(root, { recursive: true, force: true });
    }
  }, 30_000);
});

describe.each(EXAMPLES)('examples/$name-files/server.ts under a file-size limit', ({ name }) => {
  // 2,048 blocks: 1 or 2 MiB, well under the examples' 10 MiB upload limit.
  const OVER = randomBytes(4 * 1024 * 1024);
  const UNDER = randomBytes(64 * 1024);

  it('answers an upload the disk refuses with 413, keeps no part of it, and still stores', async () => {
    const { child, url, root } = await startChild(name, { fileBlocks: 2048 });
    try {
      const port = Number(new URL(url).port);
      const uploads = () => readdirSync(join(root, 'uploads')).sort();
      const before = uploads();
      check(
        await send(port, postFiles('/api/upload', ['file', 'over.bin', OVER])),
        failed(413, 'Payload Too Large', 'file too large'),
      );
      expect(uploads()).toEqual(before);
      check(await send(port, postFiles('/api/upload', ['file', 'under.bin', UNDER])), {
        status: 201,
        json: { uploaded: 'uploads/under.bin', size: UNDER.length },
      });
      expect(readFileSync(join(root, 'uploads', 'under.bin')).equals(UNDER)).toBe(true);
    } finally {
      expect(await terminated(child)).toBe(0);
    }
  }, 30_000);
});

describe.each(EXAMPLES)(
  'examples/$name-files/server.ts: its own sandbox, however it ends',
  ({ name }) => {
    /**
     * Runs the example on a temp sandbox of its own making, in a TMPDIR of the
     * test's, with `preload` imported first; `sandboxes` lists the ones left
     * there (tsx keeps its cache in the temp dir too, so not just any entry);
     * `stderr` what it wrote there so far. Its stdout is a pipe, read unless
     * `run` closes it. A child still running at the end (a failed test) is killed.
     */
    async function inTmp(
      port: number,
      run: (child: ChildProcess, sandboxes: () => string[], stderr: () => string) => Promise<void>,
      preload = './test/slow-listen.ts',
    ) {
      const tmp = mkdtempSync(join(tmpdir(), 'pathgate-start-stop-'));
      const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
      delete env.PATHGATE_ROOT;
      const args = [
        ...['--import', 'tsx', '--import', preload],
        ...[`examples/${name}-files/server.ts`, '--port', String(port)],
      ];
      const child = spawn(process.execPath, args, {
        cwd: ROOT_DIR,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let errors = '';
      child.stdout?.resume();
      child.stderr?.on('data', (chunk: Buffer) => {
        errors += chunk.toString('utf8');
      });
      try {
        await run(
          child,
          () => readdirSync(tmp).filter((entry) => entry.startsWith('pathgate-example-')),
          () => errors,
        );
      } finally {
        child.kill('SIGKILL');
        rmSync(tmp, { recursive: true, force: true });
      }
    }

    /**
     * Sends SIGTERM once the sandbox is made; expects exit 0 with the sandbox
     * removed, within 15 s (below the test's timeout, so a child that never
     * exits is killed), and returns how long the exit took, in ms.
     */
    async function stopOnceMade(child: ChildProcess, sandboxes: () => string[]): Promise<number> {
      const exited = Promise.race([exitOf(child), sleep(15_000, 'still running')]);
      while (sandboxes().length === 0) await sleep(1);
      const stopped = Date.now();
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(sandboxes()).toEqual([]);
      return Date.now() - stopped;
    }

    // Ctrl-C between making the temp sandbox and listening (each listen slowed,
    // test/slow-listen.ts): the sandbox goes too, and the server once it listens.
    it('removes the sandbox it made when SIGTERM comes before it listens', async () => {
      await inTmp(0, async (child, sandboxes) => {
        // Closed as soon as it listens, not left serving until the stop's grace (5 s) ends.
        expect(await stopOnceMade(child, sandboxes)).toBeLessThan(4_500);
      });
    }, 30_000);

    it('exits at the end of the grace period when something never ends, sandbox removed', async () => {
      await inTmp(
        0,
        async (child, sandboxes) => {
          expect(await stopOnceMade(child, sandboxes)).toBeGreaterThanOrEqual(4_900);
        },
        './test/never-idle.ts',
      );
    }, 30_000);

    // A full disk (or quota, or file-size limit) while seeding the sandbox it
    // just made: the half-seeded sandbox was left in the temp dir.
    it('removes the sandbox it made when seeding it fails (a full disk), and exits 1', async () => {
      await inTmp(
        0,
        async (child, sandboxes, stderr) => {
          expect(await exitOf(child)).toBe(1);
          expect(stderr()).toMatch(/^pathgate example \(\w+\): .*ENOSPC: no space left on device/);
          expect(sandboxes()).toEqual([]);
        },
        './test/full-disk.ts',
      );
    }, 30_000);

    // `npm run example | head -0`, or a log pipe whose reader is gone: the
    // banner's write met EPIPE, an 'error' nothing handled, which killed the
    // example with a stack trace and left its sandbox.
    it('serves on when nothing reads its stdout, then stops as usual, sandbox removed', async () => {
      const free = net.createServer();
      await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
      const { port } = free.address() as net.AddressInfo;
      await new Promise((resolve) => free.close(resolve));
      await inTmp(port, async (child, sandboxes, stderr) => {
        child.stdout?.destroy();
        while (child.exitCode === null && !(await accepts(port))) await sleep(10);
        check(await send(port, { path: '/' }), PAGE);
        expect(await terminated(child)).toBe(0);
        expect(stderr()).toBe('');
        expect(sandboxes()).toEqual([]);
      });
    }, 30_000);

    it('removes the sandbox it made when it cannot listen (the port taken), and exits 1', async () => {
      const taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = taken.address() as net.AddressInfo;
        await inTmp(port, async (child, sandboxes) => {
          expect(await exitOf(child)).toBe(1);
          expect(sandboxes()).toEqual([]);
        });
      } finally {
        taken.close();
      }
    }, 30_000);
  },
);
