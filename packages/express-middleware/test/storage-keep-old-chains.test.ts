import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { appPerFile, until } from './helpers.js';
import { NAME, replacingRoute, Sender } from './overwrite-senders.js';

// overwrite: true, requests replacing one name in turn while each is still
// in flight, then ending (201, or 413 for a file over the limit) in a chosen
// order: the name must end with the file of the last request to store there
// that succeeded, or the file from before them all, and no hidden file stays.

/**
 * A failed request hands what it replaced to the kept file of the request
 * that replaced its own (a rename from one hidden name to another): a test
 * may hold that rename (`hold`) and let it go (`go`).
 */
const handOver = await vi.hoisted(async () => (await import('./held-step.js')).heldStep());
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

const served = appPerFile(replacingRoute);

const uploads = () => join(served.root, 'uploads');
const content = (name = NAME) => readFileSync(join(uploads(), name), 'utf8');
const send = (texts: readonly string[], fails: boolean, name?: string) =>
  new Sender({ port: served.port, folder: uploads() }, texts, fails, name);

beforeEach(() => {
  mkdirSync(uploads(), { recursive: true });
  writeFileSync(join(uploads(), NAME), 'version 1');
});
afterEach(() => rmSync(uploads(), { recursive: true, force: true }));

type Step = readonly ['store' | 'end', number];

describe('overwrite, a request stores one name twice, nothing between its two', () => {
  it('only the file from before it is kept, not its own first file; that one comes back', async () => {
    const sender = send(['version 2', 'version 3'], true);
    await sender.store();
    await sender.store();
    // In flight: its first file, replaced by its second, is gone, not hidden beside the name.
    const kept = readdirSync(uploads()).filter((name) => name.endsWith('.old'));
    expect(kept.map((name) => readFileSync(join(uploads(), name), 'utf8'))).toEqual(['version 1']);
    await sender.end();
    expect(await until(() => readdirSync(uploads()).join() === NAME)).toBe(true);
    expect(content()).toBe('version 1');
  });
});

describe('overwrite, a request stores one name twice, another request between its two, both fail', () => {
  // The first request's two files (version 2, then 4) kept version 1, then version 3.
  it.each([
    ['the first to store ends first', [0, 1]],
    ['the second ends first', [1, 0]],
  ])('%s: version 1 comes back, nothing else stays', async (_label, order) => {
    const senders = [send(['version 2', 'version 4'], true), send(['version 3'], true)];
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
    const [failing, succeeding] = [send(['version 2'], true), send(['version 3'], false)];
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
    const first = send(['version 2'], true);
    await first.store();
    // The app moves the first request's file to another name, which a second request then replaces.
    renameSync(join(uploads(), NAME), join(uploads(), 'moved.txt'));
    const second = send(['version 3'], true, 'moved.txt');
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
    const senders = ['version 2', 'version 3', 'version 4'].map((text) => send([text], true));
    for (const sender of senders) await sender.store();
    for (const sender of senders) sender.cut();
    expect(await until(() => served.errors.calls.length === senders.length)).toBe(true);
    expect(await until(() => readdirSync(uploads()).join() === NAME)).toBe(true);
    expect(content()).toBe('version 1');
  });
});
