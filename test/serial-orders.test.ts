import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { failed, type Observed, SandboxModel } from './examples-model.js';
import { type Step, steps } from './examples-model-commands.js';
import { serialOrders } from './serial-orders.js';

// The concurrent test's judge (examples-concurrent.test.ts) must find a
// serial order for what the examples' READMEs allow requests sent at once
// to answer, and leave what such an order leaves.

const HELLO = 'hello from the seed';

const start = () =>
  new SandboxModel(
    { files: new Map([['uploads/hello.txt', HELLO]]), dirs: new Set(['uploads']) },
    40,
  );

/** The step the commands make of these names: a move (`to` given) or an upload of `content`. */
function step(name: string, to?: string, content = 'p'): Step {
  const pools = {
    root: fc.constant(to ?? ''),
    source: fc.constant(name),
    upload: fc.constant(name),
    content: fc.constant(content),
  };
  const [made] = fc.sample(steps(pools)[to === undefined ? 4 : 3] as fc.Arbitrary<Step>, 1);
  return made as Step;
}

const moved = (from: string, to: string): Observed => ({
  status: 200,
  type: 'application/json',
  body: { moved: from, to },
});

describe('serial orders, a move whose source another move took between its link and its unlink', () => {
  // examples-concurrent seed 4018, run 110 (Express): the second move had
  // linked its copy to a.txt, which the upload met (409), when the first
  // took hello.txt away; it answered 404 and took its copy back.
  const batch = [
    step('uploads/hello.txt', 'uploads/café.txt'),
    step('uploads/hello.txt', 'uploads/a.txt'),
    step('a.txt'),
  ];
  const answers = [
    moved('uploads/hello.txt', 'uploads/café.txt'),
    failed(404, 'no such file or folder'),
    failed(409, 'already exists'),
  ];

  it('is one order: its copy met meanwhile, then taken back', () => {
    const orders = serialOrders(start(), batch, answers);
    expect(orders).not.toEqual([]);
    for (const { model } of orders) {
      expect(model.files).toEqual(new Map([['uploads/café.txt', HELLO]]));
    }
  });

  it('an upload answered 201 instead leaves its own file there, not the copy', () => {
    const stored = {
      status: 201,
      type: 'application/json',
      body: { uploaded: 'uploads/a.txt', size: 1 },
    };
    const orders = serialOrders(start(), batch, [...answers.slice(0, 2), stored]);
    expect(orders).not.toEqual([]);
    for (const { model } of orders) expect(model.files.get('uploads/a.txt')).toBe('p');
  });
});
