import { describe, expect, it } from 'vitest';
import { diskProblems, judge, rssGrowthOf, Tally } from '../bench/load-judge.mjs';

// The load check (bench/load.mjs) is only as good as its judging: each
// property must fail on the answers, memory samples and files that break it.

const DENIED = { status: 403, reason: 'path-not-in-allowlist' };
const OK = { status: 200, check: (body: string) => body === 'hello' };

describe('judging one answer', () => {
  it('accepts the expected status with the expected reason or body', () => {
    expect(judge(DENIED, 403, '{"reason":"path-not-in-allowlist"}')).toBeUndefined();
    expect(judge(OK, 200, 'hello')).toBeUndefined();
  });

  it.each([
    ['a 200 where a 403 was due', DENIED, 200, 'secret', /status 200, want 403/],
    ['a 403 with another reason', DENIED, 403, '{"reason":"nul-byte"}', /reason nul-byte/],
    ['a 403 body that is not JSON', DENIED, 403, 'Forbidden', /unreadable body/],
    ['a 500', OK, 500, 'oops', /status 500, want 200/],
    ['the right status with the wrong body', OK, 200, 'bye', /unexpected body bye/],
  ] as const)('refuses %s', (_what, expected, status, body, problem) => {
    expect(judge(expected, status, body)).toMatch(problem);
  });

  it('a tally counts wrong answers and 5xx per kind, and 201s as uploads', () => {
    const tally = new Tally();
    tally.record('read', OK, 200, 'hello');
    tally.record('read', OK, 503, 'busy');
    tally.record('upload', { status: 201, check: () => true }, 201, '{}');
    tally.record('traversal', DENIED, 200, 'root:x:0:0');
    expect([tally.total, tally.wrongCount, tally.fivexx, tally.uploaded]).toEqual([4, 2, 1, 1]);
    expect(tally.wrong).toEqual([
      'read: status 503, want 200: busy',
      'traversal: status 200, want 403: root:x:0:0',
    ]);
  });
});

describe('RSS growth after the warm-up', () => {
  const MB = 1024 * 1024;
  const flat = (mb: number, seconds: number) => Array.from({ length: seconds * 4 }, () => mb * MB);

  it('swings under the warm-up high-water mark are not growth', () => {
    const warmup = [...flat(120, 10), ...flat(136, 2), ...flat(124, 8)];
    const { highWater, growth } = rssGrowthOf(warmup, [...flat(130, 15), ...flat(125, 15)]);
    expect(highWater).toBe(136 * MB);
    expect(growth).toBeLessThan(0);
  });

  it('a steady climb reads as growth, above 10%', () => {
    const warmup = flat(120, 20);
    const run = Array.from({ length: 120 }, (_, i) => (120 + i * 0.2) * MB);
    expect(rssGrowthOf(warmup, run).growth).toBeGreaterThan(0.1);
  });

  it("the high-water mark comes from the warm-up's second half, where start-up is over", () => {
    const warmup = [...flat(200, 10), ...flat(120, 10)];
    expect(rssGrowthOf(warmup, flat(150, 30)).growth).toBeCloseTo(0.25, 5);
  });
});

describe('files left on disk', () => {
  const seeded = new Map([
    ['sandbox/public/readme.txt', 'r1'],
    ['sandbox/secret.txt', 's1'],
  ]);
  const upload = { name: /^sandbox\/uploads\/load-\d+\.txt$/, sha: 'u1' };
  const clean = new Map([...seeded, ['sandbox/uploads/load-1.txt', 'u1']]);

  it('the seed plus answered uploads is clean', () => {
    expect(diskProblems(clean, seeded, upload, [1, 3])).toEqual([]);
  });

  it.each([
    ['a denied upload written outside the sandbox', 'evil.bin', 'x', 'unexpected file evil.bin'],
    ['a partial upload left behind', 'sandbox/uploads/.upload-1.part', 'x', 'unexpected file'],
    ['an upload whose bytes changed', 'sandbox/uploads/load-2.txt', 'x', 'unexpected file'],
    ['an overwritten secret', 'sandbox/secret.txt', 'evil', 'sandbox/secret.txt changed'],
  ])('finds %s', (_what, file, sha, problem) => {
    const files = new Map([...clean, [file, sha]]);
    expect(diskProblems(files, seeded, upload, [1, 3]).join('; ')).toContain(problem);
  });

  it('finds a seeded file gone, and uploads outside the answered range', () => {
    const files = new Map(clean);
    files.delete('sandbox/public/readme.txt');
    expect(diskProblems(files, seeded, upload, [2, 3])).toEqual([
      'sandbox/public/readme.txt is gone',
      '1 uploads on disk, 2 answered 201',
    ]);
  });
});
