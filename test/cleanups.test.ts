import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { afterTest, sandbox } from '../packages/fastify-plugin/test/helpers.js';
import { runAll } from './cleanups.js';

// The test helpers' clean-up lists: a close that throws once left the
// sandboxes registered after it in /tmp (seen on the CI machine).

const failing = (message: string) => () => {
  throw new Error(message);
};

describe('runAll', () => {
  it('runs the clean-ups after one that throws, in order, then throws its error', async () => {
    const ran: string[] = [];
    const run = runAll([
      () => ran.push('close'),
      failing('close failed'),
      async () => ran.push('remove'),
    ]);
    await expect(run).rejects.toThrow('close failed');
    expect(ran).toEqual(['close', 'remove']);
  });

  it('waits for each before the next', async () => {
    const ran: string[] = [];
    const later = () => new Promise((done) => setImmediate(done)).then(() => ran.push('first'));
    await runAll([later, () => ran.push('second')]);
    expect(ran).toEqual(['first', 'second']);
  });

  it('several that throw or reject: every one of their errors, as an AggregateError', async () => {
    const rejecting = () => Promise.reject(new Error('rm failed'));
    const run = runAll([failing('close failed'), rejecting]);
    const error = await run.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AggregateError);
    expect((error as AggregateError).errors.map((e: Error) => e.message)).toEqual([
      'close failed',
      'rm failed',
    ]);
  });

  it('one that hangs: given up on after the limit, the next run all the same', async () => {
    const ran: string[] = [];
    const hanging = () => new Promise(() => {});
    const run = runAll([hanging, () => ran.push('remove')], 50);
    await expect(run).rejects.toThrow('a clean-up still ran after 50 ms');
    expect(ran).toEqual(['remove']);
  });

  it('none that throws: resolves', async () => {
    await expect(runAll([() => {}, async () => {}])).resolves.toBeUndefined();
  });
});

// Two tests in turn: the second looks at what the first one's clean-ups left.
describe("the Fastify helpers' clean-ups after a test", () => {
  let root = '';

  // Fails by its clean-up alone: the close registered last throws first.
  it.fails('a clean-up that throws fails the test', () => {
    root = sandbox();
    afterTest(failing('close failed'));
  });

  it('the sandbox registered before it is removed all the same', () => {
    expect(root).not.toBe('');
    expect(existsSync(root)).toBe(false);
  });
});
