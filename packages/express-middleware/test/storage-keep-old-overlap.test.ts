import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { appPerFile, until } from './helpers.js';
import { NAME, replacingRoute, Sender } from './overwrite-senders.js';

// overwrite: true, a failed request removes its file at a name (it checks
// the file there is its own, then puts the old one back or unlinks the name)
// while another request stores its file there (keeps the old one, renames
// its own onto the name). Interleaved, the removal acted on the other
// request's file: that one answered 201, and its file was gone. A removal
// is held here between its check and its act, to make that window certain.

const removal = vi.hoisted(() => {
  const state = { waiting: false, named: false, gate: Promise.resolve(), go: () => {} };
  return {
    state,
    hold() {
      state.waiting = false;
      state.named = false;
      state.gate = new Promise((resolve) => {
        state.go = resolve;
      });
    },
  };
});
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  const atName = (path: unknown) => String(path).endsWith(`/${NAME}`);
  /** The removal's act at the name: held until `go`, once armed. */
  const held = async () => {
    if (removal.state.waiting) return;
    removal.state.waiting = true;
    await removal.state.gate;
  };
  const rename: typeof fs.rename = async (from, to) => {
    if (String(from).endsWith('.old') && atName(to)) await held();
    await fs.rename(from, to);
    if (String(from).endsWith('.part') && atName(to)) removal.state.named = true;
  };
  const unlink: typeof fs.unlink = async (path) => {
    if (atName(path)) await held();
    return fs.unlink(path);
  };
  return { ...fs, rename, unlink };
});

const served = appPerFile(replacingRoute);

const uploads = () => join(served.root, 'uploads');
const send = (texts: readonly string[], fails: boolean) =>
  new Sender({ port: served.port, folder: uploads() }, texts, fails);

beforeEach(() => mkdirSync(uploads(), { recursive: true }));
afterEach(() => {
  removal.state.go();
  rmSync(uploads(), { recursive: true, force: true });
});

describe('overwrite, a failed request removes its file while another stores at that name', () => {
  it.each([
    ['a file was there before: put back', true],
    ['none was: unlinked', false],
  ])('%s; the other answers 201 and the name holds its file', async (_label, before) => {
    if (before) writeFileSync(join(uploads(), NAME), 'version 1');
    const [failing, succeeding] = [send(['version 2'], true), send(['version 3'], false)];
    await failing.store();
    removal.hold();
    const failed = failing.end();
    // The failed request found its own file at the name, and is about to act.
    expect(await until(() => removal.state.waiting)).toBe(true);
    const stored = succeeding.store();
    // Either the other request's file takes the name meanwhile, or it waits for the removal.
    await until(() => removal.state.named, 1000);
    removal.state.go();
    await failed;
    await stored;
    await succeeding.end();
    expect(await until(() => readdirSync(uploads()).join() === NAME)).toBe(true);
    expect(readFileSync(join(uploads(), NAME), 'utf8')).toBe('version 3');
  });
});
