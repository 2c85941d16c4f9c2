import { readdirSync, watch } from 'node:fs';
import { basename, join } from 'node:path';
import { setImmediate as turn } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { begin, cutUpload as cut, EXAMPLES, postFiles, postJson, send } from './examples.js';
import { startedForSuite } from './fixture.js';

type Begun = ReturnType<typeof begin>;

import { afterNext, aroundNext, beforeNext, disarm } from './fs-hooks.js';

// Two requests (uploads, or a move and an upload) into the same new
// folders, both failing, one walking in while the other is still at work:
// held at a known fs call (`beforeNext`), no timing. Whichever fails last
// takes back every folder either made; found by the cut-off property test
// (examples-cutoff.test.ts). The Fastify example's uploads
// (examples/shared/files.ts): the Express one's storage makes and holds
// each folder in its turn, so there a second upload waits at the folder
// the first is making; it knows nothing of the example's moves.
vi.mock('node:fs/promises', async (importOriginal) =>
  (await import('./fs-hooks.js')).withHooks(importOriginal),
);

/** Resolves once `dir` holds `count` entries (the uploads' temporary files), told by the file system. */
async function holding(dir: string, count: number): Promise<void> {
  const watcher = watch(dir);
  try {
    const filled = new Promise<void>((resolve) => {
      const look = () => readdirSync(dir).length >= count && resolve();
      watcher.on('change', look);
      look();
    });
    await filled;
  } finally {
    watcher.close();
  }
}

/** A promise and what resolves it. */
function signal(): { reached: Promise<void>; reach: () => void } {
  let reach = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  return { reached, reach };
}

const FASTIFY = EXAMPLES.filter(({ name }) => name === 'fastify');

/** An upload begun, to be cut (`cut`), once its walk reached its file's name and the file is open in `folder`. */
async function openIn(port: number, name: string, folder: string): Promise<Begun> {
  const walked = signal();
  beforeNext('lstat', `/${basename(name)}`, async () => walked.reach());
  const upload = begin(port, cut(name));
  await walked.reached;
  await holding(folder, 1);
  return upload;
}

/** Cuts `upload` once `stored` and its file is open in `folder`: it fails, and uploads/ is as it was. */
async function failsLeavingNothing(
  root: string,
  upload: Begun,
  stored: Promise<void>,
  folder: string,
): Promise<void> {
  await stored;
  await holding(folder, 1);
  expect((await upload.end()).status).toBe(400);
  expect(readdirSync(join(root, 'uploads'))).toEqual(['hello.txt']);
}

describe.each(FASTIFY)('the $name example, two failing uploads into new folders', (example) => {
  const app = startedForSuite(example);
  afterEach(disarm);

  it('the second walking in once the first made the outer folder, before it made the inner one: neither is left', async () => {
    const inner = join(app.root, 'uploads', 'race', 'in');
    const second = signal();
    let later: { end(): Promise<{ status: number }> } | undefined;
    // The first, having made race/, about to make race/in: the second walks
    // in then, finds race/ there, makes race/in, and reaches its target.
    beforeNext('mkdir', '/in', async () => {
      beforeNext('lstat', '/y.bin', async () => second.reach());
      later = begin(app.port, cut('race/in/y.bin'));
      await second.reached;
    });
    const first = begin(app.port, cut('race/in/x.bin'));
    await second.reached;
    await holding(inner, 2);
    expect((await first.end()).status).toBe(400);
    expect((await later?.end())?.status).toBe(400);
    expect(readdirSync(join(app.root, 'uploads'))).toEqual(['hello.txt']);
  });

  it("the second walking deeper through the first one's folder, the first failing mid-walk: neither is left", async () => {
    const outer = join(app.root, 'uploads', 'through');
    const first = await openIn(app.port, 'through/x.bin', outer);
    const stored = signal();
    // The second found through/ there and made through/in/: the first fails
    // then, through/ not empty, before the second's walk is over.
    beforeNext('mkdir', '/deep', async () => {
      expect((await first.end()).status).toBe(400);
      expect(readdirSync(outer)).toEqual(['in']);
      beforeNext('lstat', '/y.bin', async () => stored.reach());
    });
    const second = begin(app.port, cut('through/in/deep/y.bin'));
    await failsLeavingNothing(app.root, second, stored.reached, join(outer, 'in', 'deep'));
  });

  it('the second finding the folder the first made before the first is told it made it: neither is left', async () => {
    const outer = join(app.root, 'uploads', 'told');
    const looked = signal();
    let second: Begun | undefined;
    // The first's mkdir of told/ is done, but its answer reaches it only a
    // turn after the second's stat found told/ there: the thread pool's
    // answers may arrive in another order than the calls ran.
    afterNext('mkdir', '/told', async () => {
      afterNext('stat', '/told', async () => looked.reach());
      second = begin(app.port, cut('told/in/y.bin'));
      await looked.reached;
      await turn();
    });
    const first = begin(app.port, cut('told/x.bin'));
    await looked.reached;
    await holding(outer, 2);
    await holding(join(outer, 'in'), 1);
    expect((await first.end()).status).toBe(400);
    expect(readdirSync(outer)).toEqual(['in']);
    expect((await second?.end())?.status).toBe(400);
    expect(readdirSync(join(app.root, 'uploads'))).toEqual(['hello.txt']);
  });

  it('the second told EEXIST for the folder the first made before the first is told it made it: neither is left', async () => {
    const outer = join(app.root, 'uploads', 'both');
    const firstDone = signal();
    const secondDone = signal();
    let first: Begun | undefined;
    // The second calls mkdir of both/ first but runs it after the first's,
    // which made it: the second's EEXIST reaches it a turn before the
    // first learns that it made the folder.
    aroundNext('mkdir', '/both', {
      before: async () => {
        afterNext('mkdir', '/both', async () => {
          firstDone.reach();
          await secondDone.reached;
          await turn();
        });
        first = begin(app.port, cut('both/x.bin'));
        await firstDone.reached;
      },
      after: async () => secondDone.reach(),
    });
    const second = begin(app.port, cut('both/in/y.bin'));
    await secondDone.reached;
    await holding(outer, 2);
    await holding(join(outer, 'in'), 1);
    expect((await first?.end())?.status).toBe(400);
    expect(readdirSync(outer)).toEqual(['in']);
    expect((await second.end()).status).toBe(400);
    expect(readdirSync(join(app.root, 'uploads'))).toEqual(['hello.txt']);
  });

  it('the second walking into a folder the first made after the second looked, the first failing mid-walk: neither is left', async () => {
    const outer = join(app.root, 'uploads', 'late');
    const stored = signal();
    // The second found uploads/ and is about to make late/: the first makes
    // it meanwhile and opens its file there. The second walks in, makes
    // late/in/, and the first fails then, late/ not empty.
    beforeNext('mkdir', '/late', async () => {
      const first = await openIn(app.port, 'late/x.bin', outer);
      beforeNext('mkdir', '/deep', async () => {
        expect((await first.end()).status).toBe(400);
        expect(readdirSync(outer)).toEqual(['in']);
        beforeNext('lstat', '/y.bin', async () => stored.reach());
      });
    });
    const second = begin(app.port, cut('late/in/deep/y.bin'));
    await failsLeavingNothing(app.root, second, stored.reached, join(outer, 'in', 'deep'));
  });
});

describe.each(FASTIFY)(
  'the $name example, a failing move and a failing upload into new folders',
  (example) => {
    const app = startedForSuite(example);
    afterEach(disarm);

    it('the upload walking into the folder the move made, the move failing first: neither is left', async () => {
      await send(app.port, postFiles('/api/upload', ['file', 'gone.txt', 'gone']));
      const folder = join(app.root, 'uploads', 'moved');
      let upload: { end(): Promise<{ status: number }> } | undefined;
      // The move made moved/ and is about to link its file there: an upload
      // opens its file in moved/, and a delete takes the move's file.
      beforeNext('link', '/gone.txt', async () => {
        upload = begin(app.port, cut('moved/up.bin'));
        await holding(folder, 1);
        expect(
          (await send(app.port, { method: 'DELETE', path: '/files/uploads/gone.txt' })).status,
        ).toBe(200);
      });
      const body = JSON.stringify({ from: 'uploads/gone.txt', to: 'uploads/moved/gone.txt' });
      expect((await send(app.port, postJson('/api/move', body))).status).toBe(404);
      expect((await upload?.end())?.status).toBe(400);
      expect(readdirSync(join(app.root, 'uploads'))).toEqual(['hello.txt']);
    });

    it('the move walking into the folder the upload made, the upload failing first: neither is left', async () => {
      await send(app.port, postFiles('/api/upload', ['file', 'taken.txt', 'taken']));
      const walked = signal();
      beforeNext('lstat', '/file.bin', async () => walked.reach());
      const upload = begin(app.port, cut('out/file.bin'));
      await walked.reached;
      await holding(join(app.root, 'uploads', 'out'), 1);
      // The move made out/in/ in the upload's out/ and is about to link its
      // file there: the upload fails, out/ not empty, and a delete takes the move's file.
      beforeNext('link', '/taken.txt', async () => {
        expect((await upload.end()).status).toBe(400);
        const deleted = await send(app.port, {
          method: 'DELETE',
          path: '/files/uploads/taken.txt',
        });
        expect(deleted.status).toBe(200);
      });
      const body = JSON.stringify({ from: 'uploads/taken.txt', to: 'uploads/out/in/taken.txt' });
      expect((await send(app.port, postJson('/api/move', body))).status).toBe(404);
      expect(readdirSync(join(app.root, 'uploads'))).toEqual(['hello.txt']);
    });
  },
);

// A request over gives up its folders: on a long-running server a folder
// once made in flight, left by a success, is no failure's to take back.
describe.each(FASTIFY)('the $name example, a folder a success made', (example) => {
  const app = startedForSuite(example);
  const moveJson = (from: string, to: string) =>
    postJson('/api/move', JSON.stringify({ from: `uploads/${from}`, to: `uploads/${to}` }));

  it.each([
    [
      'an upload, its file deleted since',
      'by-upload',
      [
        postFiles('/api/upload', ['file', 'by-upload/a.txt', 'a']),
        { method: 'DELETE', path: '/files/uploads/by-upload/a.txt' },
      ],
    ],
    [
      'a move, its file moved back since',
      'by-move',
      [moveJson('hello.txt', 'by-move/h.txt'), moveJson('by-move/h.txt', 'hello.txt')],
    ],
  ])('by %s, stays when an upload into it fails', async (_by, folder, sent) => {
    for (const one of sent) expect((await send(app.port, one)).status).toBeLessThan(300);
    expect(readdirSync(join(app.root, 'uploads', folder))).toEqual([]);
    expect((await begin(app.port, cut(`${folder}/b.bin`)).end()).status).toBe(400);
    expect(readdirSync(join(app.root, 'uploads'))).toContain(folder);
  });
});
