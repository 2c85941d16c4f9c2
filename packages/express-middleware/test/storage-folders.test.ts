import { EventEmitter } from 'node:events';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { Request } from 'express';
import { beforeEach, describe, expect, it } from 'vitest';
import { idle } from '../../../test/process-idle.js';
import { pathgate } from '../src/index.js';
import {
  appPerFile,
  BOUNDARY,
  entriesUnder,
  filePart,
  MULTIPART,
  multipart,
  multipartPost,
  sleep,
  upload,
} from './helpers.js';

// The folders a cut upload made go with it, however its response's end, its
// store's failure and other uploads walking into them interleave: a cut
// connection ends the response before the store has seen the body fail.

const served = appPerFile((root, app) => {
  const gate = pathgate({ root, fs: ['rw:uploads/**'] });
  const docs = gate.write({ file: 'docs', under: 'uploads' });
  app.post('/docs', docs, gate.multer().array('docs'), (_req, res) => {
    res.status(201).json({ stored: true });
  });
});
const { errors } = served;

beforeEach(() => {
  rmSync(join(served.root, 'uploads'), { recursive: true, force: true });
  mkdirSync(join(served.root, 'uploads/pre'), { recursive: true });
});

/** Every entry below uploads/ (folders end in `/`), sorted. */
const disk = () => entriesUnder(join(served.root, 'uploads'));

/** Reads `read()` until `done` holds or `ms` passed; returns its last value. */
async function until<T>(read: () => T, done: (value: T) => boolean, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  let value = read();
  while (!done(value) && Date.now() < deadline) {
    await sleep(5);
    value = read();
  }
  return value;
}

/** The files in flight in `folder` below uploads/. */
const inFlight = (folder: string) => {
  const dir = join(served.root, 'uploads', folder);
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.part')).length : 0;
};

/** A request as the storage sees it: its response ends when `close()` is called. */
function fakeRequest() {
  const res = Object.assign(new EventEmitter(), { closed: false });
  const close = () => {
    res.closed = true;
    res.emit('close');
  };
  return { req: { res } as unknown as Request, close };
}

/**
 * Hands a file to `name` below uploads/ to the gate's disk storage, and
 * waits until its file in flight is there. `fail()` cuts its body and
 * settles once the store has failed (its cleanup done); `end()` ends it and
 * settles once stored; `remove()` then removes it, as multer does when a
 * later gate denies the request.
 */
async function storing(req: Request, name: string) {
  const storage = pathgate({ root: served.root, fs: ['rw:uploads/**'] }).diskStorage();
  const stream = new PassThrough();
  // As multer does: fail()'s error may come before the storage reads the stream.
  stream.on('error', () => {});
  const path = join(served.root, 'uploads', name);
  const file = { pathgatePath: path, stream };
  const settled = new Promise((resolve) => {
    storage._handleFile(req, file as unknown as Express.Multer.File, resolve);
  });
  const folder = name.slice(0, name.lastIndexOf('/'));
  expect(
    await until(
      () => inFlight(folder),
      (n) => n > 0,
    ),
  ).toBe(1);
  return {
    fail: () => {
      stream.destroy(new Error('aborted'));
      return settled;
    },
    end: () => {
      stream.end();
      return settled;
    },
    remove: () =>
      new Promise((resolve) => {
        storage._removeFile(req, { path } as Express.Multer.File, resolve);
      }),
  };
}

/**
 * Whether `folder` below uploads/ (made if missing), empty, is one there
 * before for a new upload: its failure leaves it. One the uploads that are
 * over still counted as made by an upload in flight would go with it.
 */
async function thereBefore(folder: string): Promise<boolean> {
  mkdirSync(join(served.root, 'uploads', folder), { recursive: true });
  const later = fakeRequest();
  await (await storing(later.req, `${folder}/x/probe.bin`)).fail();
  later.close();
  return existsSync(join(served.root, 'uploads', folder));
}

describe('a folder made by an upload whose response ended before its store failed', () => {
  it('goes with the upload that walked into it since, when that one fails too', async () => {
    const maker = fakeRequest();
    const making = await storing(maker.req, 'new/x/one.bin');
    maker.close(); // the client cut the connection: the store has not failed yet
    const enterer = fakeRequest();
    const entering = await storing(enterer.req, 'new/y/two.bin');
    await making.fail();
    expect(disk()).toEqual([
      'new/',
      'new/y/',
      expect.stringMatching(/^new\/y\/\.pathgate-.*\.part$/),
      'pre/',
    ]);
    await entering.fail();
    expect(disk()).toEqual(['pre/']);
    enterer.close();
    expect(await thereBefore('new')).toBe(true);
  });

  it('a store that began once its response was over shares its folders too', async () => {
    const maker = fakeRequest();
    maker.close();
    const making = await storing(maker.req, 'new/x/one.bin');
    const enterer = fakeRequest();
    const entering = await storing(enterer.req, 'new/y/two.bin');
    await making.fail();
    await entering.fail();
    expect(disk()).toEqual(['pre/']);
    enterer.close();
    expect(await thereBefore('new')).toBe(true);
  });

  // As when a later gate denies it once its files are stored, its response not yet over.
  it('its file stored, then removed: goes with the upload that walked into it meanwhile', async () => {
    const maker = fakeRequest();
    const making = await storing(maker.req, 'new/x/one.bin');
    await making.end();
    const enterer = fakeRequest();
    const entering = await storing(enterer.req, 'new/y/two.bin');
    await making.remove();
    maker.close();
    await entering.fail();
    enterer.close();
    expect(disk()).toEqual(['pre/']);
  });

  // multer's abort after a cut connection removes the stored files one by one, a turn apart.
  it('its stored files removed one by one once its response is over: it goes, held by none after', async () => {
    const maker = fakeRequest();
    const stores = [];
    for (const name of ['one.bin', 'two.bin']) {
      const store = await storing(maker.req, `new/${name}`);
      await store.end();
      stores.push(store);
    }
    maker.close();
    for (const store of stores) {
      await store.remove();
      await sleep(5);
    }
    expect(disk()).toEqual(['pre/']);
    expect(await thereBefore('new')).toBe(true);
  });

  it('a folder that was there before still stays', async () => {
    const maker = fakeRequest();
    const making = await storing(maker.req, 'pre/x/one.bin');
    maker.close();
    const entering = await storing(fakeRequest().req, 'pre/y/two.bin');
    await making.fail();
    await entering.fail();
    expect(disk()).toEqual(['pre/']);
  });
});

describe('a folder made by an upload that succeeded', () => {
  // Each of its stores holds the folder again, its response open or over (a cut connection).
  it.each([false, true])(
    'is one there before for the next (response over first: %s): emptied by the app, a failed upload leaves it',
    async (over) => {
      const maker = fakeRequest();
      if (over) maker.close();
      for (const name of ['one.bin', 'two.bin'])
        await (await storing(maker.req, `done/${name}`)).end();
      if (!over) maker.close();
      for (const name of ['one.bin', 'two.bin']) rmSync(join(served.root, 'uploads', 'done', name));
      expect(await thereBefore('done')).toBe(true);
      expect(disk()).toEqual(['done/', 'pre/']);
    },
  );
});

const head = (name: string) =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="docs"; filename="${name}"\r\n\r\n`;

/** Sends the start of a file to `name` on a raw socket, then destroys it after `delay` ms. */
async function cutUpload(name: string, delay: number): Promise<void> {
  const socket = net.connect(served.port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `POST /docs HTTP/1.1\r\nhost: x\r\ncontent-type: ${MULTIPART}\r\ncontent-length: 1000000\r\n\r\n${head(name)}${'x'.repeat(20_000)}`,
  );
  await sleep(delay);
  socket.destroy();
}

const CUTS = 200;

describe('many uploads cut inside a file to new nested folders', () => {
  it('leave no folder they made and no file in flight; a successful one beside them keeps its own', async () => {
    const handled = errors.calls.length;
    const cuts: Promise<void>[] = [];
    const answers: Promise<number>[] = [];
    for (let i = 0; i < CUTS; i++) {
      // Folders shared by many uploads, and some of their own below one that was there before.
      const name = i % 3 === 0 ? `pre/n${i}/x.txt` : `a${i % 7}/b${i % 5}/c/x${i}.txt`;
      cuts.push(cutUpload(name, i % 4));
      if (i % 40 === 0) {
        // Refused: a later part is denied.
        const parts = [filePart('docs', `a${i % 7}/r/y${i}.txt`), filePart('docs', '../no')];
        answers.push(upload(served.port, '/docs', parts).then((got) => got.status));
      }
      if (i === CUTS / 2) {
        const parts = [filePart('docs', 'a1/b1/c/ok.txt')];
        answers.push(upload(served.port, '/docs', parts).then((got) => got.status));
      }
      if (i % 50 === 49) await Promise.all(cuts);
    }
    await Promise.all(cuts);
    expect(await Promise.all(answers)).toEqual([403, 403, 403, 201, 403, 403]);
    // Each cut upload's error reaches the error handler once its stores (and their cleanup) settled.
    const reached = await until(
      () => errors.calls.length - handled,
      (n) => n === CUTS,
    );
    expect(reached).toBe(CUTS);
    const kept = ['a1/', 'a1/b1/', 'a1/b1/c/', 'a1/b1/c/ok.txt', 'pre/'];
    expect(await until(disk, (now) => now.join() === kept.join(), 1000)).toEqual(kept);
  }, 15_000);
});

describe('a folder made by an upload refused once stored, its client gone before its body ended', () => {
  // Node ends no request whose answer went out: multer's abort, which waits
  // for the body's end, must not keep the refused upload's folders held.
  it('goes with it, and is one there before for the next upload', async () => {
    const handled = errors.calls.length;
    const body = multipart([
      filePart('docs', 'left/a.bin', Buffer.alloc(256 * 1024, 0x61)),
      filePart('docs', '../denied.bin', Buffer.alloc(2 * 1024 * 1024, 0x61)),
    ]);
    const client = multipartPost(served.port, '/docs', body.length);
    client.on('error', () => {});
    const answered = new Promise((resolve) => {
      client.once('response', (res) => {
        res.resume();
        resolve(res.statusCode);
      });
    });
    // The denied part's header, a little of its body, and no more.
    client.write(body.subarray(0, body.indexOf('../denied.bin') + 100));
    expect(await answered).toBe(403);
    client.destroy();
    await idle();
    expect(disk()).toEqual(['pre/']);
    expect(await thereBefore('left')).toBe(true);
    expect(errors.calls.length).toBe(handled); // multer's late error is not the app's
  });
});
