import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Express } from 'express';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { givenRoot, listenPort } from '../examples/shared/sandbox.js';
import { filesUnder } from '../packages/express-middleware/test/helpers.js';
import { forbidden, REASONS } from './answer.js';
import {
  EXAMPLES,
  type Example,
  type Got,
  postFiles,
  postJson,
  type Sent,
  send,
  start,
} from './examples.js';
import { abandonDownload, descriptors, eventually, exchange } from './fault-clients.js';
import { completeSnippets } from './readme-code.js';
import { ROOT } from './tsc.js';

// The claims of the root README and of examples/*/README.md, run as written.

/** The 6 bytes of the `notes.txt` the curl sessions upload (`"size":6`). */
const NOTES = 'notes\n';

/** Splits a command line on spaces outside single quotes, as a POSIX shell does. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((match) => match[1] ?? (match[2] as string));
}

/** The request a session's `curl` line sends: `-X`, `-H`, `-d` (a POST) and `-F file=@notes.txt[;filename=…]`. */
function curlRequest(line: string): Sent {
  const args = words(line).slice(2);
  const sent: Sent & { headers: Record<string, string> } = { path: '', headers: {} };
  let upload: { field: string; filename: string } | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const value = args[i + 1] as string;
    if (arg === '-X') sent.method = value;
    else if (arg === '-H') {
      const [name, ...rest] = value.split(':');
      sent.headers[(name as string).toLowerCase()] = rest.join(':').trim();
    } else if (arg === '-d') {
      sent.method ??= 'POST';
      sent.body = value;
    } else if (arg === '-F') {
      const [field, file] = value.split('=@') as [string, string];
      const named = /;filename=(.*)$/.exec(file);
      upload = { field, filename: named ? (named[1] as string) : file };
    } else {
      sent.path = new URL(arg).pathname + new URL(arg).search;
      continue;
    }
    i++;
  }
  if (upload) return postFiles(sent.path, [upload.field, upload.filename, NOTES]);
  return sent;
}

interface Step {
  line: number;
  command: string;
  output: string;
}

/** The `console` block of a README: each `$ curl …` line and the output printed under it. */
function session(readme: string): Step[] {
  const text = readFileSync(join(ROOT, readme), 'utf8');
  const block = /```console\n([\s\S]*?)```/.exec(text);
  if (!block) return [];
  const first = text.slice(0, block.index).split('\n').length + 1;
  const steps: Step[] = [];
  (block[1] as string).split('\n').forEach((source, i) => {
    if (source.startsWith('$ ')) steps.push({ line: first + i, command: source, output: '' });
    else if (source !== '') (steps.at(-1) as Step).output += `${source}\n`;
  });
  return steps;
}

const SESSIONS: readonly (readonly [string, Example])[] = EXAMPLES.map((example) => [
  `examples/${example.name}-files/README.md`,
  example,
]);

describe.each(EXAMPLES)(
  'examples/fastify-files/README.md, "How it uses the plugin", on $name',
  (example) => {
    it('downloads are text/plain or application/octet-stream, never HTML, with nosniff and a sandboxing CSP', async () => {
      const running = await start(example);
      try {
        const page = '<script>alert(document.cookie)</script>';
        const stored = await send(
          running.port,
          postFiles('/api/upload', ['file', 'page.html', page]),
        );
        expect(stored.status).toBe(201);
        const safe = {
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
        };
        for (const [path, type] of [
          ['/files/uploads/page.html', 'application/octet-stream'],
          ['/files/public/readme.txt', 'text/plain; charset=utf-8'],
        ] as const) {
          const got = await exchange(running.port, { method: 'GET', path });
          expect([got.status, got.headers], path).toEqual([
            200,
            expect.objectContaining({ 'content-type': type, ...safe }),
          ]);
        }
      } finally {
        await running.stop();
      }
    });
  },
);

describe.each(SESSIONS)('%s, "A session with curl"', (readme, example) => {
  it('every command answers exactly the output shown, in order', async () => {
    const steps = session(readme);
    expect(steps.length).toBeGreaterThan(5);
    const running = await start(example);
    try {
      for (const step of steps) {
        const got = await send(running.port, curlRequest(step.command));
        const printed = got.text.endsWith('\n') ? got.text : `${got.text}\n`;
        expect(printed, `${readme} line ${step.line}: ${step.command}`).toBe(step.output);
      }
    } finally {
      await running.stop();
    }
  });
});

// Inside the repository (git-ignored), so the snippets resolve the packages.
// Made before the first test, not on import: a run whose filter skips every
// test here runs no afterAll, and would leave the folder behind.
const dir = join(ROOT, `.readme-snippets-claims-${randomUUID()}`);
/** The sandbox the README snippets serve, in place of `/srv/files`, below a folder of its own. */
const root = join(dir, 'srv', 'files');
beforeAll(() => {
  mkdirSync(join(root, 'public'), { recursive: true });
  mkdirSync(join(root, 'uploads'));
  writeFileSync(join(root, 'public', 'a.txt'), 'hello');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let loaded = 0;

/** Imports `readme`'s first complete snippet that uses `adapter`, on `root`; it exports its `app`. */
async function snippetApp<App>(readme: string, adapter: string): Promise<App> {
  const code = completeSnippets(readme).find((snippet) => snippet.includes(adapter));
  expect(code, `${readme}: ${adapter}`).toBeDefined();
  // A file of its own each time: an import of the same file would share its app.
  loaded += 1;
  const file = join(dir, `${`${readme}_${adapter}_${loaded}`.replace(/\W/g, '_')}.ts`);
  const app = code
    ?.replaceAll("'/srv/files'", JSON.stringify(root))
    .replace('app.listen(3000);', '');
  writeFileSync(file, `${app}\nexport { app };\n`);
  return ((await import(file)) as { app: App }).app;
}

/** Listens on a free port of 127.0.0.1 for `run`, then closes. */
async function listening(app: Express | FastifyInstance, run: (port: number) => Promise<void>) {
  let server: Server;
  if ('inject' in app) {
    await app.listen({ host: '127.0.0.1', port: 0 });
    server = app.server;
  } else {
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
  }
  try {
    await run((server.address() as AddressInfo).port);
  } finally {
    await ('inject' in app ? app.close() : new Promise((resolve) => server.close(resolve)));
  }
}

/** The README's traversal is its 403, naming the wildcard's spec and the reason; an allowed file is served. */
async function refusesTraversal(port: number, label: string): Promise<void> {
  const denied = await send(port, { path: '/files/..%2F..%2Fetc%2Fpasswd' });
  expect([denied.status, JSON.parse(denied.text)]).toEqual([
    403,
    forbidden('path-not-in-allowlist', label),
  ]);
  const served = await send(port, { path: '/files/public/a.txt' });
  expect([served.status, served.text]).toEqual([200, 'hello']);
}

/** A traversing upload name is a 403 and nothing is written; an allowed one is stored in uploads/. */
async function refusesUpload(
  port: number,
  name: string,
  stored: readonly [number, string],
): Promise<void> {
  const post = (filename: string) =>
    send(port, postFiles('/upload', ['avatar', filename, 'x'.repeat(4096)]));
  const refused = await post(name);
  expect([refused.status, JSON.parse(refused.text)]).toEqual([
    403,
    forbidden('path-not-in-allowlist', 'file avatar'),
  ]);
  expect(filesUnder(join(dir, 'srv'))).toEqual(['files/public/a.txt']);
  const allowed = await post('me.txt');
  expect([allowed.status, allowed.text]).toEqual(stored);
  expect(readFileSync(join(root, 'uploads', 'me.txt'), 'utf8')).toBe('x'.repeat(4096));
  rmSync(join(root, 'uploads', 'me.txt'));
}

/**
 * The handlers' own fs failures (a missing file to send or to move, an
 * upload over an existing name): 404 and 409, never the error's message or
 * stack, which names the path. An allowed name that no file can have (a
 * folder, to send or to move; below a file, too long) is a client's error
 * too: a 404, not a 500.
 * Logged, and the log kept out of the output.
 */
async function hidesFsErrors(port: number): Promise<void> {
  writeFileSync(join(root, 'uploads', 'taken.txt'), 'old');
  mkdirSync(join(root, 'uploads', 'folder'));
  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  const move = (from: string, to: string) =>
    send(port, postJson('/move', JSON.stringify({ from, to })));
  try {
    const answers = [
      [404, await send(port, { path: '/files/public/x.txt' })],
      [404, await send(port, { path: '/files/public' })],
      [404, await send(port, { path: '/files/public/a.txt/x' })],
      [404, await send(port, { path: `/files/public/${'x'.repeat(300)}` })],
      [404, await move('uploads/x', 'uploads/y')],
      [404, await move('uploads/folder', 'uploads/moved')],
      [404, await move('uploads/taken.txt', 'uploads/taken.txt/x')],
      [404, await move('uploads/taken.txt', `uploads/${'x'.repeat(300)}`)],
      [409, await send(port, postFiles('/upload', ['avatar', 'taken.txt', 'new']))],
    ] as const;
    for (const [status, answer] of answers) {
      expect(answer.status, answer.text).toBe(status);
      expect(answer.text).not.toContain(root);
    }
  } finally {
    logged.mockRestore();
    rmSync(join(root, 'uploads', 'taken.txt'));
    rmSync(join(root, 'uploads', 'folder'), { recursive: true });
  }
}

/**
 * A move onto an existing name is a 409 that leaves both files as they were
 * (the uploads beside it never replace a file either); one onto a new name
 * moves the file.
 */
async function movesWithoutReplacing(port: number): Promise<void> {
  const at = (name: string) => join(root, 'uploads', name);
  writeFileSync(at('mine.txt'), 'mine');
  writeFileSync(at('theirs.txt'), 'theirs');
  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  try {
    const move = (to: string) =>
      send(port, postJson('/move', JSON.stringify({ from: 'uploads/mine.txt', to })));
    const taken = await move('uploads/theirs.txt');
    expect([taken.status, taken.text]).toEqual([409, expect.not.stringContaining(root)]);
    expect(filesUnder(join(root, 'uploads'))).toEqual(['mine.txt', 'theirs.txt']);
    expect(readFileSync(at('theirs.txt'), 'utf8')).toBe('theirs');
    const moved = await move('uploads/new.txt');
    expect([moved.status, JSON.parse(moved.text)]).toEqual([200, { moved: true }]);
    expect(filesUnder(join(root, 'uploads'))).toEqual(['new.txt', 'theirs.txt']);
    expect(readFileSync(at('new.txt'), 'utf8')).toBe('mine');
  } finally {
    logged.mockRestore();
    for (const name of ['mine.txt', 'theirs.txt', 'new.txt']) rmSync(at(name), { force: true });
  }
}

/**
 * Two moves of one file at once leave it at one name: the move that finds
 * its file gone after linking it (the other moved it first) takes its link
 * back, else the file would stay at both names while that move answered 404.
 */
async function movesOnce(port: number): Promise<void> {
  const at = (name: string) => join(root, 'uploads', name);
  const move = (to: string) =>
    send(port, postJson('/move', JSON.stringify({ from: 'uploads/race.txt', to })));
  const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
  try {
    for (let round = 0; round < 200; round++) {
      writeFileSync(at('race.txt'), 'race');
      const answers = await Promise.all([move('uploads/one.txt'), move('uploads/two.txt')]);
      const left = filesUnder(join(root, 'uploads'));
      const statuses = answers.map((answer) => answer.status).sort();
      expect([left.length, statuses], `round ${round}: ${left}`).toEqual([1, [200, 404]]);
      for (const name of left) rmSync(at(name));
    }
  } finally {
    logged.mockRestore();
    for (const name of ['race.txt', 'one.txt', 'two.txt']) rmSync(at(name), { force: true });
  }
}

describe('packages/core/README.md, the node:http guard of "For adapter authors"', () => {
  let served = 0;

  /** The README's node:http server on `root`, listening on a free port of 127.0.0.1 for `run`. */
  async function onServer(
    run: (get: (query: string) => Promise<Got>, port: number) => Promise<void>,
  ) {
    const code = completeSnippets('packages/core/README.md').find((snippet) =>
      snippet.includes('createServer('),
    );
    // A file of its own each time: an import of the same file would share its server.
    served += 1;
    const file = join(dir, `core_node_http_${served}.ts`);
    const source = code
      ?.replaceAll("'/srv/files'", JSON.stringify(root))
      .replace('createServer(', 'export const server = createServer(')
      .replace('}).listen(3000);', "}).listen(0, '127.0.0.1');");
    writeFileSync(file, `${source}\n`);
    const { server } = (await import(file)) as { server: Server };
    if (!server.listening) await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await run((query) => send(port, { path: `/download?${query}` }), port);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }

  it('serves a checked file, and denies a repeated key whose first value escapes (each element is checked)', async () => {
    await onServer(async (get) => {
      const allowed = await get('file=public/a.txt');
      expect([allowed.status, allowed.text]).toEqual([200, 'hello']);
      const repeated = await get('file=../../etc/passwd&file=public/a.txt');
      expect([repeated.status, JSON.parse(repeated.text)]).toEqual([
        403,
        forbidden('path-not-in-allowlist', 'query.file'),
      ]);
      expect((await get('file=public/a.txt&file=public/a.txt')).status).toBe(400);
    });
  });

  // An allowed path names no file (`./public/**` matches public itself, and
  // names not made yet): the read stream's error names the path, and, with
  // no listener, ended the process.
  it.each([
    ['a missing file', 'public/missing.txt'],
    ['a folder', 'public'],
    ['a name below a file', 'public/a.txt/x'],
    ['a name too long for the file system', `public/${'x'.repeat(300)}`],
  ])('%s is a 404 naming no path, and the server goes on', async (_, name) => {
    await onServer(async (get) => {
      const missing = await get(`file=${name}`);
      expect(missing.status).toBe(404);
      expect(missing.text).not.toContain(root);
      const allowed = await get('file=public/a.txt');
      expect([allowed.status, allowed.text]).toEqual([200, 'hello']);
    });
  });
  // new URL() throws on a target with no valid host after `//`: in the
  // request listener, an uncaught exception that ended the process.
  it.each(['//[', '//a:99999/download?file=public/a.txt', '//%zz'])(
    'a request target new URL refuses (%s) is a 400, and the server goes on',
    async (target) => {
      await onServer(async (get, port) => {
        expect((await send(port, { path: target })).status).toBe(400);
        const allowed = await get('file=public/a.txt');
        expect([allowed.status, allowed.text]).toEqual([200, 'hello']);
      });
    },
  );

  // pipe() stops writing to a response that closed, but leaves its source
  // open: each hang-up kept a descriptor, until the process had none left.
  it('a client that hangs up mid-download leaves no file open', async () => {
    writeFileSync(join(root, 'public', 'big.bin'), Buffer.alloc(4 << 20));
    try {
      await onServer(async (_, port) => {
        const before = descriptors();
        for (let i = 0; i < 20; i++)
          await abandonDownload(port, '/download?file=public/big.bin', 20);
        expect(await eventually(() => descriptors() <= before)).toBe(true);
      });
    } finally {
      rmSync(join(root, 'public', 'big.bin'));
    }
  });
});

/** The Express snippets' answer to a stored upload. */
const MULTER_STORED = [201, '{"size":4096}'] as const;

describe('the README snippets, run', () => {
  it('README.md, the opening example, Fastify: the traversal is a 403 path-not-in-allowlist', async () => {
    const app = await snippetApp<FastifyInstance>('README.md', '@pathgate/fastify');
    await listening(app, (port) => refusesTraversal(port, 'params.*'));
  });

  it('README.md, after the opening example: unguarded, a missing file answers its fs error with the path, a list cast to a string is a 500, and a move replaces an existing file', async () => {
    const app = await snippetApp<FastifyInstance>('README.md', '@pathgate/fastify');
    await listening(app, async (port) => {
      const missing = await send(port, { path: '/files/public/x.txt' });
      expect([missing.status, JSON.parse(missing.text).message]).toEqual([
        500,
        expect.stringContaining(`open '${root}/public/x.txt'`),
      ]);
      const list = '{"from": ["uploads/a", "uploads/b"], "to": "uploads/c"}';
      expect((await send(port, postJson('/move', list))).status).toBe(500);
      writeFileSync(join(root, 'uploads', 'mine.txt'), 'mine');
      writeFileSync(join(root, 'uploads', 'theirs.txt'), 'theirs');
      const over = '{"from": "uploads/mine.txt", "to": "uploads/theirs.txt"}';
      expect((await send(port, postJson('/move', over))).status).toBe(200);
      expect(filesUnder(join(root, 'uploads'))).toEqual(['theirs.txt']);
      rmSync(join(root, 'uploads', 'theirs.txt'));
    });
    const text = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    expect(text).toContain('And `rename` replaces a file already at `to`');
    // Its remedy, link then unlink, says what the adapters' moves do when the unlink fails
    // (test/examples-move-races.test.ts holds such a move between the two).
    expect(text).toContain(
      'take the link back while its name still holds that file, or the file stays at both names',
    );
  });

  it('README.md, the opening example, Express: the traversal is a 403; filename="../../server.js" is a 403 with not one byte written', async () => {
    const app = await snippetApp<Express>('README.md', '@pathgate/express');
    await listening(app, async (port) => {
      await refusesTraversal(port, 'params.path');
      await refusesUpload(port, '../../server.js', MULTER_STORED);
    });
  });

  // Both adapters' "Example": the fs errors a client can cause, and a move, answered as the prose says.
  describe.each([
    { readme: 'packages/fastify-plugin/README.md', adapter: '@pathgate/fastify' },
    { readme: 'packages/express-middleware/README.md', adapter: '@pathgate/express' },
  ])('$readme, "Example"', ({ readme, adapter }) => {
    it.each([
      { claim: 'an fs error is a 404 or 409 that names no path', check: hidesFsErrors },
      {
        claim: 'a move onto an existing name is a 409, nothing replaced',
        check: movesWithoutReplacing,
      },
      { claim: 'two moves of one file at once leave it at one name', check: movesOnce },
    ])('$claim', async ({ check }) => {
      await listening(await snippetApp<Express | FastifyInstance>(readme, adapter), check);
    });
  });

  it('packages/fastify-plugin/README.md: the traversal is a 403 naming params.*; uploads are checked', async () => {
    const app = await snippetApp<FastifyInstance>(
      'packages/fastify-plugin/README.md',
      '@pathgate/fastify',
    );
    await listening(app, async (port) => {
      await refusesTraversal(port, 'params.*');
      await refusesUpload(port, '../../app.js', [200, '{"saved":true}']);
    });
  });

  it('packages/express-middleware/README.md, "Example": the traversal is a 403; ../../app.js is refused before a byte is written', async () => {
    const app = await snippetApp<Express>(
      'packages/express-middleware/README.md',
      '@pathgate/express',
    );
    await listening(app, async (port) => {
      await refusesTraversal(port, 'params.path');
      await refusesUpload(port, '../../app.js', MULTER_STORED);
    });
  });

  it('packages/express-middleware/README.md, "Example": a list in the body is a 400, not a 500', async () => {
    const app = await snippetApp<Express>(
      'packages/express-middleware/README.md',
      '@pathgate/express',
    );
    await listening(app, async (port) => {
      const list = '{"from": ["uploads/a", "uploads/b"], "to": "uploads/c"}';
      expect((await send(port, postJson('/move', list))).status).toBe(400);
    });
  });

  // Express's router refuses a parameter that does not decode with a 400
  // it does not expose; the handler's 404-or-500 made it a server error.
  it.each([
    ['"Example"', '@pathgate/express'],
    ['"errors: \'next\'"', "errors: 'next'"],
  ])(
    'packages/express-middleware/README.md, %s: a URL that does not decode is a 400, not a 500',
    async (_, needle) => {
      const app = await snippetApp<Express>('packages/express-middleware/README.md', needle);
      const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        await listening(app, async (port) => {
          // Bad escapes, an overlong UTF-8 `..`, a lone surrogate.
          for (const bad of ['%zz', '%', '%C0%AE%C0%AE', '%ed%a0%80']) {
            const answer = await send(port, { path: `/files/public/${bad}/a.txt` });
            expect([answer.status, answer.text], bad).toEqual([400, '{"error":"bad request"}']);
          }
        });
      } finally {
        logged.mockRestore();
      }
    },
  );

  it('packages/express-middleware/README.md, "errors: \'next\'": a deny is its JSON; a missing file a 404 naming no path, logged', async () => {
    const app = await snippetApp<Express>(
      'packages/express-middleware/README.md',
      "errors: 'next'",
    );
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      await listening(app, async (port) => {
        const denied = await send(port, { path: '/files/..%2F..%2Fetc%2Fpasswd' });
        expect([denied.status, JSON.parse(denied.text)]).toEqual([
          403,
          { error: 'params.path: path denied (path-not-in-allowlist)', code: 'PATHGATE_DENIED' },
        ]);
        const missing = await send(port, { path: '/files/public/x.txt' });
        expect([missing.status, missing.text]).toEqual([404, '{"error":"not found"}']);
      });
      expect(logged).toHaveBeenCalledWith(expect.objectContaining({ code: 'ENOENT' }));
    } finally {
      logged.mockRestore();
    }
  });
});

describe('examples/README.md, its opening: both servers take --port or PORT, and --root or PATHGATE_ROOT', () => {
  it('--port or PORT names the port, 0 any free one; 3000 without either', () => {
    expect(listenPort(['--port', '0'], {})).toBe(0);
    expect(listenPort(['--port=8080'], { PORT: '9000' })).toBe(8080);
    expect(listenPort([], { PORT: '8080' })).toBe(8080);
    expect(listenPort([], {})).toBe(3000);
  });

  it('--root or PATHGATE_ROOT names the folder to serve, as a real path; none without either', () => {
    const served = join(dir, 'my-files');
    mkdirSync(served);
    expect(givenRoot(['--root', served], {})).toBe(served);
    expect(givenRoot([], { PATHGATE_ROOT: served })).toBe(served);
    expect(givenRoot([], {})).toBeUndefined();
  });
});

/** The CLI example of `readme`: the `npx pathgate check` command, its output, and the line it starts on. */
function cliExample(readme: string): { line: number; args: string[]; output: string } {
  const text = readFileSync(join(ROOT, readme), 'utf8');
  const at = text.indexOf('npx pathgate check ');
  const lines = text.slice(at).split('\n');
  const end = lines.findIndex((source) => !source.endsWith('\\'));
  const command = lines.slice(0, end + 1).map((source) => source.replace(/\\$/, ''));
  // The output follows in the same block, or in the next `text` block.
  let rest = lines.slice(end + 1);
  if (rest[0] === '```') rest = rest.slice(rest.indexOf('```text') + 1);
  return {
    line: text.slice(0, at).split('\n').length,
    args: words(command.join(' ')).slice(2),
    output: rest.slice(0, rest.indexOf('```')).join('\n'),
  };
}

describe.each(['README.md', 'packages/core/README.md'])('%s, the pathgate CLI', (readme) => {
  it('the example prints exactly the output shown, and exits 1 (a path is denied)', () => {
    const { line, args, output } = cliExample(readme);
    const run = spawnSync(process.execPath, [join(ROOT, 'packages/core/dist/cli.js'), ...args], {
      encoding: 'utf8',
    });
    expect([run.status, run.stdout], `${readme} line ${line}`).toEqual([1, `${output}\n`]);
  });

  it('its sh block holds the command alone, so a paste runs no output line', () => {
    const text = readFileSync(join(ROOT, readme), 'utf8');
    const block = /```sh\n(npx pathgate check [\s\S]*?)```/.exec(text)?.[1];
    expect(block, readme).toBeDefined();
    const lines = (block as string).trimEnd().split('\n');
    expect(lines.slice(0, -1).every((source) => source.endsWith('\\'))).toBe(true);
  });
});

/** What `npm run <script>` runs, its `npm run` steps expanded, one command each. */
function scriptSteps(script: string): string[] {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  return (scripts[script] ?? '').split(' && ').flatMap((step) => {
    const run = /^npm run (\S+)$/.exec(step);
    return run ? scriptSteps(run[1] as string) : [step];
  });
}

describe.each(['README.md', 'packages/express-middleware/README.md'])(
  '%s, the install line',
  (readme) => {
    it('names multer, which gate.multer() in its examples needs (an optional peer: npm does not add it)', () => {
      const text = readFileSync(join(ROOT, readme), 'utf8');
      expect(completeSnippets(readme).some((code) => code.includes('gate.multer('))).toBe(true);
      expect(/```sh\n([\s\S]*?)```/.exec(text)?.[1]).toMatch(/^npm install .*\bmulter\b/m);
    });
  },
);

/** The reasons a README's `| reason |` table names in its first column (a row may name two). */
function reasonTable(readme: string): string[] {
  const text = readFileSync(join(ROOT, readme), 'utf8');
  const rows = /^\| reason .*\n\|[- |]+\n((?:\|.*\n)+)/m.exec(text)?.[1] ?? '';
  return rows
    .split('\n')
    .flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)])
    .map((match) => match[1] as string);
}

// A reason a table names is one an app can match on, typed; the core's table
// leaves out the adapters' three, and it and the plugin's relative-root (a
// policy's root is checked when it is built), each saying so.
describe.each([
  ['README.md', []],
  [
    'packages/core/README.md',
    ['relative-root', 'missing-path', 'unexpected-file', 'path-too-long'],
  ],
  ['packages/fastify-plugin/README.md', ['relative-root']],
])('%s, its table of deny reasons', (readme, left) => {
  it('names each reason of GuardDenyReason, save those it leaves out, once', () => {
    const named = reasonTable(readme);
    expect(named.toSorted()).toEqual(REASONS.filter((reason) => !left.includes(reason)).toSorted());
  });
});

describe('README.md, "Set up (this repository)"', () => {
  it('npm start installs, builds and runs the Fastify example; npm test installs, builds, lints, type-checks and runs every test', () => {
    const install = 'npx -y pnpm@10.34.9 install --frozen-lockfile';
    const build = 'npx -y pnpm@10.34.9 -r --filter "./packages/*" run build';
    expect(scriptSteps('start')).toEqual([install, build, 'tsx examples/fastify-files/server.ts']);
    expect(scriptSteps('test')).toEqual([
      install,
      build,
      'biome check .',
      'tsc -p tsconfig.json',
      'node scripts/run-tests.mjs',
    ]);
  });
});

describe('examples/README.md: npm run example:core', () => {
  it('shows @pathgate/core alone: a policy, and the decisions checkFs makes', () => {
    const [node, ...args] = words(scriptSteps('example:core')[0] as string);
    expect(node).toBe('node');
    const run = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(0);
    const lines = run.stdout.split('\n').filter(Boolean);
    expect(lines[0]).toBe('policy: root /srv/files, rules ./public/**, rw:./uploads/*');
    expect(lines.slice(1).map((line) => /(allow|deny {2}\([a-z-]+\))/.exec(line)?.[1])).toEqual([
      'allow',
      'allow',
      'deny  (mode-not-permitted)',
      'deny  (path-not-in-allowlist)',
      'deny  (path-not-in-allowlist)',
      'deny  (path-not-in-allowlist)',
      'deny  (path-not-in-allowlist)',
      'deny  (nul-byte)',
    ]);
  });
});
