import { describe, expect, it } from 'vitest';
import { type Answered, Holdings } from './cutoff-invariants.js';
import type { Request } from './cutoff-requests.js';
import type { Tree } from './examples-model.js';

// The cut-off property test (examples-cutoff.test.ts) is only as good as its
// judge: it must let through what the examples' READMEs allow, and no more.

const SEEDED = 'seeded hello';
const FAILED = '#214#ggg';

const tree = (files: Record<string, string>, dirs: string[] = []): Tree => ({
  files: new Map(Object.entries(files)),
  dirs: new Set(['uploads', ...dirs]),
});

const start = () => tree({ 'uploads/hello.txt': SEEDED });

const upload: Request = {
  operation: 'upload',
  target: 'a/b/y.txt',
  size: 1,
  second: 'allowed',
  cut: undefined,
};
const move = (from: string, to: string): Request => ({ operation: 'move', from, to });

/** An upload whose first file was stored, then failed on its second file (413), and a move in the same batch. */
const batch = (moved: Request, status = 200): Answered[] => [
  { request: upload, content: FAILED, status: 413 },
  { request: moved, content: '', status },
];

describe('the cut-off judge, a failed upload whose stored file a move took meanwhile', () => {
  // examples-cutoff seed 4002, run 21 (Fastify): the READMEs let a request
  // move an upload's stored file before its second file fails it, and the
  // failure takes back that file only where it still is.
  it('lets the file stay where a 2xx move of its name put it', () => {
    const after = tree({ 'uploads/hello.txt': SEEDED, 'uploads/a/b/x.txt': FAILED }, [
      'uploads/a',
      'uploads/a/b',
    ]);
    const judged = new Holdings(start(), true).judge(batch(move('a/b/y.txt', 'a/b/x.txt')), after);
    expect(judged).toEqual([]);
  });

  it('not at the name it was uploaded to, which the failure takes back', () => {
    const after = tree({ 'uploads/hello.txt': SEEDED, 'uploads/a/b/y.txt': FAILED }, [
      'uploads/a',
      'uploads/a/b',
    ]);
    const judged = new Holdings(start(), true).judge(batch(move('a/b/y.txt', 'a/b/x.txt')), after);
    expect(judged).toEqual([
      `uploads/a/b/y.txt holds "${FAILED}"… (8 bytes): no whole upload answered 201`,
    ]);
  });

  it('not where a move of another name put it, nor one that failed', () => {
    const after = tree({ 'uploads/hello.txt': SEEDED, 'uploads/a/b/x.txt': FAILED }, [
      'uploads/a',
      'uploads/a/b',
    ]);
    const problem = `uploads/a/b/x.txt holds "${FAILED}"… (8 bytes): no whole upload answered 201`;
    for (const answers of [
      batch(move('n.txt', 'a/b/x.txt')),
      batch(move('a/b/y.txt', 'a/b/x.txt'), 404),
    ]) {
      expect(new Holdings(start(), true).judge(answers, after)).toContain(problem);
    }
  });
});
