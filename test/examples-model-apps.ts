// Both example servers for the stateful test (examples-model.test.ts), each
// over a sandbox three folders deep in a temp folder of its own, so that a
// name climbing out of the sandbox lands where the test can look; each
// request sent to both, the sandboxes seeded afresh for every run.
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { Started } from '../examples/shared/run.js';
import { seedSandbox } from '../examples/shared/sandbox.js';
import { runAll } from './cleanups.js';
import { EXAMPLES, type Got, type Sent, send } from './examples.js';
import type { Tree } from './examples-model.js';

/** The sandbox's place in its temp folder: `..` up to three times stays in that folder. */
const NESTED = ['up', 'upper', 'sandbox'];

/** The length of each sandbox's path, in bytes: mkdtemp adds six characters to its prefix. */
export const SANDBOX_BYTES = Buffer.byteLength(join(tmpdir(), 'pathgate-model-XXXXXX', ...NESTED));

interface Server {
  name: string;
  outer: string;
  root: string;
  port: number;
  started: Started;
}

/**
 * The files (with their text) and folders below `dir`, by their path from
 * it; anything else (a link) as a file named `<path> (not a file)`. `skip`:
 * a folder listed, not walked into. `encoding`: how files' bytes are read
 * as text (latin1 keeps any bytes).
 */
export function scan(dir: string, skip?: string, encoding: BufferEncoding = 'utf8'): Tree {
  const tree: Tree = { files: new Map(), dirs: new Set() };
  const walk = (at: string) => {
    for (const name of readdirSync(join(dir, at))) {
      const path = at === '' ? name : `${at}/${name}`;
      const full = join(dir, path);
      const info = lstatSync(full);
      if (info.isFile()) tree.files.set(path, readFileSync(full, encoding));
      else if (!info.isDirectory()) tree.files.set(`${path} (not a file)`, '');
      else {
        tree.dirs.add(path);
        if (full !== skip) walk(path);
      }
    }
  };
  walk('');
  return tree;
}

export class ServedPair {
  private servers: Server[] = [];

  /** Starts both examples, each on its own seeded sandbox. */
  async start(): Promise<void> {
    for (const example of EXAMPLES) {
      const outer = mkdtempSync(join(tmpdir(), 'pathgate-model-'));
      const root = join(outer, ...NESTED);
      if (Buffer.byteLength(root) !== SANDBOX_BYTES)
        throw new Error(`not ${SANDBOX_BYTES} bytes: ${root}`);
      try {
        mkdirSync(root, { recursive: true });
        seedSandbox(root);
        const started = await example.listen(root, 0);
        const port = Number(new URL(started.url).port);
        this.servers.push({ name: example.name, outer, root, port, started });
      } catch (error) {
        rmSync(outer, { recursive: true, force: true });
        throw error;
      }
    }
  }

  /** Closes each server and removes its temp folder, every one even when a close throws. */
  async stop(): Promise<void> {
    await runAll(
      this.servers
        .splice(0)
        .flatMap(({ started, outer }) => [
          () => started.close(),
          () => rmSync(outer, { recursive: true, force: true }),
        ]),
    );
  }

  /** Empties both sandboxes and seeds them again; answers what they hold. */
  reseed(): Tree {
    for (const { root } of this.servers) {
      for (const name of readdirSync(root)) rmSync(join(root, name), { recursive: true });
      seedSandbox(root);
    }
    const [first] = this.servers;
    if (first === undefined) throw new Error('the servers start in beforeAll');
    return scan(first.root);
  }

  /** Each server's example name and port, for requests sent to one of them. */
  ports(): { name: string; port: number }[] {
    return this.servers.map(({ name, port }) => ({ name, port }));
  }

  /** Sends `sent` to both servers; answers theirs, by example name. */
  async send(sent: Sent): Promise<{ name: string; got: Got }[]> {
    return Promise.all(
      this.servers.map(async ({ name, port }) => ({ name, got: await send(port, sent) })),
    );
  }

  /** What each sandbox holds (its files read as `encoding`), and what its temp folder holds beside it. */
  sandboxes(encoding?: BufferEncoding): { name: string; tree: Tree; around: Tree }[] {
    return this.servers.map(({ name, outer, root }) => ({
      name,
      tree: scan(root, undefined, encoding),
      around: scan(outer, root),
    }));
  }
}

/** Both examples, started in `beforeAll` and stopped in `afterAll`, for one describe block. */
export function servedPairForSuite(): ServedPair {
  const pair = new ServedPair();
  beforeAll(() => pair.start());
  afterAll(() => pair.stop());
  return pair;
}

/** What a temp folder holds beside its sandbox: the folders down to it, nothing else. */
export const NOTHING_AROUND: Tree = {
  files: new Map(),
  dirs: new Set(NESTED.map((_, i) => NESTED.slice(0, i + 1).join('/'))),
};
