import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Express } from 'express';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { filesUnder } from '../packages/express-middleware/test/helpers.js';
import { forbidden } from './answer.js';
import { EXAMPLES, type Example, postFiles, type Sent, send, start } from './examples.js';
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
const dir = mkdtempSync(join(ROOT, '.readme-snippets-claims-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The sandbox the root README's snippets serve, in place of `/srv/files`, below a folder of its own. */
const root = join(dir, 'srv', 'files');
mkdirSync(join(root, 'public'), { recursive: true });
writeFileSync(join(root, 'public', 'a.txt'), 'hello');

/** Imports the root README's snippet that uses `adapter`, on `root`; it exports its `app`. */
async function rootSnippet<App>(adapter: string): Promise<App> {
  const code = completeSnippets('README.md').find((snippet) => snippet.includes(adapter));
  expect(code, adapter).toBeDefined();
  const file = join(dir, `${adapter.replace(/\W/g, '_')}.ts`);
  writeFileSync(
    file,
    `${code?.replaceAll("'/srv/files'", JSON.stringify(root))}\nexport { app };\n`,
  );
  return ((await import(file)) as { app: App }).app;
}

const TRAVERSAL = { path: '/files/..%2F..%2Fetc%2Fpasswd' };

describe('README.md, the Fastify 5 snippet', () => {
  it('line 10: GET /files/..%2F..%2Fetc%2Fpasswd → 403 path-not-in-allowlist; an allowed file is served', async () => {
    const app = await rootSnippet<FastifyInstance>('@pathgate/fastify');
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as AddressInfo;
      const denied = await send(port, TRAVERSAL);
      expect([denied.status, JSON.parse(denied.text)]).toEqual([
        403,
        forbidden('path-not-in-allowlist', 'params.*'),
      ]);
      const served = await send(port, { path: '/files/public/a.txt' });
      expect([served.status, served.text]).toEqual([200, 'hello']);
    } finally {
      await app.close();
    }
  });
});

describe('README.md, the Express 5 snippet', () => {
  it('lines 10-11: the traversal is a 403; filename="../../server.js" is a 403 and not one byte is written', async () => {
    const app = await rootSnippet<Express>('@pathgate/express');
    const server: Server = app.listen(0, '127.0.0.1');
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const denied = await send(port, TRAVERSAL);
      expect([denied.status, JSON.parse(denied.text)]).toEqual([
        403,
        forbidden('path-not-in-allowlist', 'params.path'),
      ]);
      const upload = (name: string) =>
        send(port, postFiles('/upload', ['avatar', name, 'x'.repeat(4096)]));
      const refused = await upload('../../server.js');
      expect([refused.status, JSON.parse(refused.text)]).toEqual([
        403,
        forbidden('path-not-in-allowlist', 'file avatar'),
      ]);
      expect(filesUnder(join(dir, 'srv'))).toEqual(['files/public/a.txt']);
      const stored = await upload('me.txt');
      expect([stored.status, stored.text]).toEqual([201, '{"size":4096}']);
      expect(readFileSync(join(root, 'uploads', 'me.txt'), 'utf8')).toBe('x'.repeat(4096));
    } finally {
      server.close();
    }
  });
});
