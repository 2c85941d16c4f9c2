import { existsSync, readFileSync } from 'node:fs';
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

  /** The status and body of `sent`, held at the next `call` on `ending` while `others` are answered (each a success). */
  const heldWhile = async (call: Hooked, ending: string, others: Sent[], sent: Sent) => {
    beforeNext(call, ending, async () => {
      for (const other of others) expect((await send(app.port, other)).status).toBeLessThan(300);
    });
    const got = await send(app.port, sent);
    return { status: got.status, body: JSON.parse(got.text) };
  };
  const left = (name: string) => readFileSync(join(app.root, 'uploads', name), 'utf8');

  it('into a new folder whose name an upload takes as it makes it: a 409, its parent is no folder', async () => {
    // Named through the folder it is made in (/proc/self/fd/<fd>/taken).
    const upload = postFiles('/api/upload', ['file', 'taken', 'upload']);
    const got = await heldWhile('mkdir', '/taken', [upload], move('hello.txt', 'taken/hello.txt'));
    expect([got.status, got.body.message]).toEqual([409, 'a parent is not a folder']);
    expect(left('taken')).toBe('upload');
  });

  it('whose file another move takes meanwhile: a 404, as after that move', async () => {
    await send(app.port, postFiles('/api/upload', ['file', 'mine.txt', 'mine']));
    const other = move('mine.txt', 'there');
    const got = await heldWhile(
      'stat',
      '/uploads/there',
      [other],
      move('mine.txt', 'there/mine.txt'),
    );
    expect([got.status, got.body.message]).toEqual([404, 'no such file or folder']);
    expect(left('there')).toBe('mine');
  });

  it('whose file another move takes, and an upload makes a folder of its name, meanwhile: a 400, not a file', async () => {
    await send(app.port, postFiles('/api/upload', ['file', 'swapped', 'file']));
    const others = [
      move('swapped', 'elsewhere'),
      postFiles('/api/upload', ['file', 'swapped/x', 'x']),
    ];
    const got = await heldWhile('stat', '/uploads/new', others, move('swapped', 'new/swapped'));
    expect([got.status, got.body.message]).toEqual([400, 'not a file']);
    expect(left('elsewhere')).toBe('file');
  });

  it('whose file another move takes once linked, while its new name is moved on and uploaded again: the upload stays', async () => {
    await send(app.port, postFiles('/api/upload', ['file', 'held.txt', 'held']));
    const others = [
      move('held.txt', 'away.txt'),
      move('target.txt', 'on.txt'),
      postFiles('/api/upload', ['file', 'target.txt', 'new']),
    ];
    // Held between its link and the unlink of its source, which now fails.
    const got = await heldWhile('unlink', '/held.txt', others, move('held.txt', 'target.txt'));
    expect([got.status, got.body.message]).toEqual([404, 'no such file or folder']);
    expect([left('target.txt'), left('away.txt'), left('on.txt')]).toEqual(['new', 'held', 'held']);
  });

  it('whose file another move takes once linked: a 404, its own copy taken back', async () => {
    await send(app.port, postFiles('/api/upload', ['file', 'twice.txt', 'twice']));
    const got = await heldWhile(
      'unlink',
      '/twice.txt',
      [move('twice.txt', 'first.txt')],
      move('twice.txt', 'second.txt'),
    );
    expect([got.status, got.body.message]).toEqual([404, 'no such file or folder']);
    const second = existsSync(join(app.root, 'uploads', 'second.txt'));
    expect([left('first.txt'), second]).toEqual(['twice', false]);
  });

  it('of a file a listing is reading: the listing names it once, where it went', async () => {
    await send(app.port, postFiles('/api/upload', ['file', 'listed.txt', 'listed']));
    const listing = { path: '/api/list?dir=uploads' };
    const other = move('listed.txt', 'gone.txt');
    // The listing's look at the entry its folder's read named, once the move took it.
    const got = await heldWhile('lstat', '/listed.txt', [other], listing);
    const names = got.body.entries.map(({ name }: { name: string }) => name);
    expect([got.status, names.includes('gone.txt'), names.includes('listed.txt')]).toEqual([
      200,
      true,
      false,
    ]);
  });
});
