import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, postJson, send } from './examples.js';
import { startedForSuite } from './fixture.js';

// A move that fails once it made the target's new folders takes them back,
// as a failed upload does: only those it made, never one there before.

describe.each(EXAMPLES)('the $name example, a move that fails below new folders', (example) => {
  const app = startedForSuite(example);
  const uploads = (path: string) => join(app.root, 'uploads', path);
  const move = (from: string, to: string) =>
    send(app.port, postJson('/api/move', JSON.stringify({ from, to })));

  it('a name too long: a 400, none of the folders made on the way left, the source kept', async () => {
    writeFileSync(uploads('long-source.txt'), 'x');
    const got = await move('uploads/long-source.txt', `uploads/long/a/${'x'.repeat(300)}`);
    expect(got.status).toBe(400);
    expect(existsSync(uploads('long'))).toBe(false);
    expect(existsSync(uploads('long-source.txt'))).toBe(true);
  });

  it('a folder that was there before stays, with what it held', async () => {
    writeFileSync(uploads('kept-source.txt'), 'x');
    await move('uploads/kept-source.txt', 'uploads/was/ok.txt');
    writeFileSync(uploads('kept-source.txt'), 'y');
    const got = await move('uploads/kept-source.txt', `uploads/was/new/${'x'.repeat(300)}`);
    expect(got.status).toBe(400);
    expect(readdirSync(uploads('was'))).toEqual(['ok.txt']);
  });

  it('a move that succeeds keeps its folders', async () => {
    writeFileSync(uploads('ok-source.txt'), 'x');
    const got = await move('uploads/ok-source.txt', 'uploads/made/a/ok.txt');
    expect(got.status).toBe(200);
    expect(readdirSync(uploads('made/a'))).toEqual(['ok.txt']);
  });
});
