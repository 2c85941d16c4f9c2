import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EXAMPLES, postFiles, postJson, send } from './examples.js';
import { startedForSuite } from './fixture.js';
import { beforeNext, disarm } from './fs-hooks.js';

// How often a listing reads its folder again (`readAgainIfGone`), counted at
// its fs calls (`beforeNext`): again only while an entry it named is gone
// before its look, and a few times at most, however long another client
// keeps moving that entry away and back.
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('./fs-hooks.js')).withHooks(importOriginal),
);

/** The rounds the mover below may go: more than any listing should read its folder. */
const MOVER_ROUNDS = 10;

describe.each(EXAMPLES)('the $name example, a listing read again', (example) => {
  const app = startedForSuite(example);
  afterEach(disarm);

  const list = async () => {
    const got = await send(app.port, { path: '/api/list?dir=uploads' });
    const { entries } = JSON.parse(got.text) as { entries: { name: string }[] };
    return { status: got.status, names: entries.map(({ name }) => name) };
  };
  const move = async (from: string, to: string) => {
    const body = JSON.stringify({ from: `uploads/${from}`, to: `uploads/${to}` });
    expect((await send(app.port, postJson('/api/move', body))).status).toBe(200);
  };

  it('while another client moves an entry away before each look and back before each read: a few reads, then the answer', async () => {
    await send(app.port, postFiles('/api/upload', ['file', 'flicker', 'f']));
    let rounds = 0;
    // Each armed once the move before it is done: a move's own lstat is no look of the listing's.
    const beforeLook = () =>
      beforeNext('lstat', '/flicker', async () => {
        rounds += 1;
        await move('flicker', 'away');
        if (rounds < MOVER_ROUNDS) beforeNext('readdir', '/', beforeRead);
      });
    const beforeRead = async () => {
      await move('away', 'flicker');
      beforeLook();
    };
    beforeLook();
    const got = await list();
    expect(got.status).toBe(200);
    expect(got.names).toContain('hello.txt');
    // Bounded: the mover never ran out of rounds, the listing stopped first.
    expect(rounds).toBeGreaterThan(1);
    expect(rounds).toBeLessThan(MOVER_ROUNDS);
  });

  it('of a folder holding names no request reaches (a dotfile): read once', async () => {
    writeFileSync(join(app.root, 'uploads', '.hidden'), 'never listed');
    let reads = 0;
    const counting = async () => {
      reads += 1;
      beforeNext('readdir', '/', counting);
    };
    beforeNext('readdir', '/', counting);
    const got = await list();
    expect([got.status, got.names.includes('.hidden'), reads]).toEqual([200, false, 1]);
  });
});
