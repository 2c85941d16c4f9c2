import { describe, expect, it } from 'vitest';
import { Turns } from '../src/turns.js';

// Turns runs work one turn at a time per key (nameTurns: a store and a
// removal at one name never overlap). A key's entry goes with its last
// turn only: dropped with an earlier one, a turn begun after it would not
// wait for the one still running; never dropped, the map keeps every name
// ever stored.

/** Work that runs until `finish` is called, noting when it starts. */
function held() {
  let finish = () => {};
  let started = false;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    work: () => {
      started = true;
      return done;
    },
    started: () => started,
    finish: () => finish(),
  };
}

/** Lets every queued promise callback run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** How many keys the map holds (a private field: what the map never outgrowing means). */
const keys = (turns: Turns<string>) =>
  (turns as unknown as { last: Map<string, unknown> }).last.size;

describe('Turns', () => {
  it('a turn begun once an earlier one ended waits for the one still running at that key', async () => {
    const turns = new Turns<string>();
    const first = held();
    const second = held();
    const third = held();
    const runs = [turns.run('a', first.work), turns.run('a', second.work)];
    first.finish();
    await settle();
    expect([first.started(), second.started()]).toEqual([true, true]);
    runs.push(turns.run('a', third.work));
    await settle();
    expect(third.started()).toBe(false);
    second.finish();
    await settle();
    expect(third.started()).toBe(true);
    third.finish();
    await Promise.all(runs);
  });

  it('a key goes once its last turn has settled, either way; another key is not waited for', async () => {
    const turns = new Turns<string>();
    const other = held();
    const waiting = turns.run('b', other.work);
    await turns.run('a', async () => {});
    const failing = turns.run('a', async () => {
      throw new Error('failed turn');
    });
    await expect(failing).rejects.toThrow('failed turn');
    await settle();
    expect(keys(turns)).toBe(1); // only 'b', still running
    other.finish();
    await waiting;
    await settle();
    expect(keys(turns)).toBe(0);
  });
});
