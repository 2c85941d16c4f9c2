import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EXAMPLES, postFiles, postJson, type Sent, send } from './examples.js';
import { startedForSuite } from './fixture.js';
import { beforeNext, disarm, type Hooked } from './fs-hooks.js';

// A move whose target's folder another request changes while the move walks
// to it: held at a known point of its walk (`beforeNext`), the other request
// answered right then. The move must answer as it would have after it.
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('./fs-hooks.js')).withHooks(importOriginal),
);

const move = (from: string, to: string) =>
  postJson('/api/move', JSON.stringify({ from: `uploads/${from}`, to: `uploads/${to}` }));

describe.each(EXAMPLES)('the $name example, a move walking to its target', (example) => {
  const app = startedForSuite(example);
  afterEach(disarm);

  /** A move's status and message, held at the next `call` on `ending` while `other` is answered (a success). */
  const heldWhile = async (call: Hooked, ending: string, other: Sent, sent: Sent) => {
    beforeNext(call, ending, async () => {
      expect((await send(app.port, other)).status).toBeLessThan(300);
    });
    const got = await send(app.port, sent);
    return [got.status, JSON.parse(got.text).message];
  };
  const left = (name: string) => readFileSync(join(app.root, 'uploads', name), 'utf8');

  it('into a new folder whose name an upload takes as it makes it: a 409, its parent is no folder', async () => {
    // Named through the folder it is made in (/proc/self/fd/<fd>/taken).
    const upload = postFiles('/api/upload', ['file', 'taken', 'upload']);
    const got = await heldWhile('mkdir', '/taken', upload, move('hello.txt', 'taken/hello.txt'));
    expect(got).toEqual([409, 'a parent is not a folder']);
    expect(left('taken')).toBe('upload');
  });

  it('whose file another move takes meanwhile: a 404, as after that move', async () => {
    await send(app.port, postFiles('/api/upload', ['file', 'mine.txt', 'mine']));
    const other = move('mine.txt', 'there');
    const got = await heldWhile(
      'stat',
      '/uploads/there',
      other,
      move('mine.txt', 'there/mine.txt'),
    );
    expect(got).toEqual([404, 'no such file or folder']);
    expect(left('there')).toBe('mine');
  });
});
