import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import type http from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { pathgate } from '../src/index.js';
import { appPerFile, filePart, multipart, multipartPost, type RawPart, until } from './helpers.js';

// overwrite: true, requests replacing one name in turn while each is still
// in flight, then ending (201, or 413 for a file over the limit) in a chosen
// order: the name must end with the file of the last request to store there
// that succeeded, or the file from before them all, and no hidden file stays.

/**
 * A failed request hands what it replaced to the kept file of the request
 * that replaced its own (a rename from one hidden name to another): a test
 * may hold that rename (`hold`) and let it go (`go`).
 */
const handOver = vi.hoisted(() => {
  const state = { waiting: false, gate: Promise.resolve(), go: () => {} };
  return {
    state,
    hold() {
      state.gate = new Promise((resolve) => {
        state.go = resolve;
      });
    },
  };
});
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  const rename: typeof fs.rename = async (from, to) => {
    if (String(from).endsWith('.old') && String(to).endsWith('.old')) {
      handOver.state.waiting = true;
      await handOver.state.gate;
    }
    return fs.rename(from, to);
  };
  return { ...fs, rename };
});

const served = appPerFile((root, app) => {
  const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
  const replacing = gate.multer({
    storage: gate.diskStorage({ overwrite: true }),
    limits: { fileSize: 1000 },
  });
  app.post(
    '/replace',
    gate.write({ file: 'f', under: 'uploads' }),
    replacing.any(),
    (_req, res) => {
      res.status(201).end();
    },
  );
});

const uploads = () => join(served.root, 'uploads');
const NAME = 'report.txt';
const content = (name = NAME) => readFileSync(join(uploads(), name), 'utf8');
const holds = (text: string, name = NAME) => {
  try {
    return content(name) === text;
  } catch {
    return false;
  }
};

beforeEach(() => {
  mkdirSync(uploads(), { recursive: true });
  writeFileSync(join(uploads(), NAME), 'version 1');
});
afterEach(() => rmSync(uploads(), { recursive: true, force: true }));

const TOO_LARGE = filePart('f', 'too-large.txt', 'x'.repeat(5000));

/**
 * One request whose body is sent a part at a time: `store` sends its next
 * file (all at `name`) and waits until the name holds it; `end` sends the
 * rest, a file over the limit when it is to fail.
 */
class Sender {
  private sent = 0;
  private readonly body: Buffer;
  private readonly cuts: number[];
  private readonly req: http.ClientRequest;
  readonly answer: Promise<Answer>;

  constructor(
    private readonly texts: readonly string[],
    readonly fails: boolean,
    private readonly name = NAME,
  ) {
    const parts: RawPart[] = texts.map((text) => filePart('f', name, text));
    this.body = multipart(fails ? [...parts, TOO_LARGE] : parts);
    // Each cut ends a file and the delimiter after it, so busboy hands the part on.
    this.cuts = texts.map((_, i) => multipart(parts.slice(0, i + 1)).length - '--\r\n'.length);
    this.req = multipartPost(served.port, '/replace', this.body.length);
    this.answer = new Promise<Answer>((resolve, reject) => {
      this.req.on('response', (res) => readAnswer(res).then(resolve, reject));
      this.req.on('error', reject);
    });
  }

  async store(): Promise<void> {
    const from = this.sent === 0 ? 0 : (this.cuts[this.sent - 1] as number);
    const text = this.texts[this.sent] as string;
    this.req.write(this.body.subarray(from, this.cuts[this.sent]));
    this.sent++;
    expect(await until(() => holds(text, this.name))).toBe(true);
  }

  /** Cuts the connection: the request fails with what it stored so far. */
  cut(): void {
    this.req.on('error', () => {});
    this.answer.catch(() => {});
    this.req.destroy();
  }

  async end(): Promise<void> {
    this.req.end(this.body.subarray(this.cuts[this.sent - 1]));
    expect((await this.answer).status).toBe(this.fails ? 413 : 201);
  }
}

type Step = readonly ['store' | 'end', number];

describe('overwrite, a request stores one name twice, another request between its two, both fail', () => {
  // The first request's two files (version 2, then 4) kept version 1, then version 3.
  it.each([
    ['the first to store ends first', [0, 1]],
    ['the second ends first', [1, 0]],
  ])('%s: version 1 comes back, nothing else stays', async (_label, order) => {
    const senders = [new Sender(['version 2', 'version 4'], true), new Sender(['version 3'], true)];
    const steps: Step[] = [
      ['store', 0],
      ['store', 1],
      ['store', 0],
      ...order.map((i) => ['end', i] as const),
    ];
    for (const [action, index] of steps) await (senders[index] as Sender)[action]();
    expect(await until(() => readdirSync(uploads()).join() === NAME)).toBe(true);
    expect(content()).toBe('version 1');
  });
});

describe('overwrite, a failed request hands over to one that succeeds meanwhile', () => {
  it('the kept file handed over after the other request dropped its own: dropped too', async () => {
    const [failing, succeeding] = [
      new Sender(['version 2'], true),
      new Sender(['version 3'], false),
    ];
    await failing.store();
    await succeeding.store();
    handOver.hold();
    // Version 1 is on its way to the kept name of the request that replaced version 2.
    const failed = failing.end();
    expect(await until(() => handOver.state.waiting)).toBe(true);
    // That request ends first: it drops its kept file (version 2).
    await succeeding.end();
    const kept = () => readdirSync(uploads()).filter((name) => name.endsWith('.old'));
    expect(await until(() => kept().length === 1)).toBe(true);
    handOver.state.go();
    await failed;
    expect(await until(() => readdirSync(uploads()).join() === NAME)).toBe(true);
    expect(content()).toBe('version 3');
  });
});

describe('overwrite, a request replaces a file moved from the name another request stored it at', () => {
  it('both fail: the file moved stays where it went, the name it left does not get it', async () => {
    const first = new Sender(['version 2'], true);
    await first.store();
    // The app moves the first request's file to another name, which a second request then replaces.
    renameSync(join(uploads(), NAME), join(uploads(), 'moved.txt'));
    const second = new Sender(['version 3'], true, 'moved.txt');
    await second.store();
    await first.end();
    await second.end();
    const left = () => readdirSync(uploads()).join() === 'moved.txt';
    expect(await until(left)).toBe(true);
    // Never version 1: report.txt's old file, which was never at moved.txt.
    expect(content('moved.txt')).toBe('version 2');
  });
});

describe('overwrite, requests that replaced one name in turn are all cut at once', () => {
  it('their removals overlap: version 1 comes back, nothing else stays', async () => {
    served.errors.calls.length = 0;
    const senders = ['version 2', 'version 3', 'version 4'].map((text) => new Sender([text], true));
    for (const sender of senders) await sender.store();
    for (const sender of senders) sender.cut();
    expect(await until(() => served.errors.calls.length === senders.length)).toBe(true);
    expect(await until(() => readdirSync(uploads()).join() === NAME)).toBe(true);
    expect(content()).toBe('version 1');
  });
});
