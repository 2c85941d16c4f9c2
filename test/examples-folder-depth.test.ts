import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, type Got, postFiles, postJson, send, start } from './examples.js';
import { FOLDER_DEPTH_MAX } from './examples-model.js';
import { startedForSuite } from './fixture.js';

// The examples' READMEs: an upload's or a move's target at most 32 folders
// below the sandbox root (`uploads/` counted), else a 400 `too deep`, judged
// by the checked path's text before any folder is made or looked at. Files
// deeper than that (an operator's) are still read, listed, deleted and moved
// out of: the cap is on what clients make.

const TOO_DEEP = { statusCode: 400, error: 'Bad Request', message: 'too deep' };

/** `count` one-letter folders, then `file`: a path that many folders deep. */
const folders = (count: number, file = 'f.txt') => [...Array(count).fill('d'), file].join('/');

/** The answer as compared: its status and parsed JSON body. */
const answer = (got: Got) => ({ status: got.status, body: JSON.parse(got.text) });

describe.each(EXAMPLES)('the $name example, how deep a client makes folders', (example) => {
  const app = startedForSuite(example);
  const onDisk = (path: string) => existsSync(join(app.root, path));
  const upload = (filename: string) =>
    send(app.port, postFiles('/api/upload', ['file', filename, 'x']));
  const move = (from: string, to: string) =>
    send(app.port, postJson('/api/move', JSON.stringify({ from, to })));
  /** A file at `path` from the root, its folders made on disk, as an operator would. */
  const plant = (path: string, text: string) => {
    mkdirSync(join(app.root, path, '..'), { recursive: true });
    writeFileSync(join(app.root, path), text);
  };

  it('stores an upload whose folder is the deepest allowed', async () => {
    // uploads/ and its own folders below it: FOLDER_DEPTH_MAX in all.
    const name = `up-fits/${folders(FOLDER_DEPTH_MAX - 2)}`;
    expect(answer(await upload(name))).toEqual({
      status: 201,
      body: { uploaded: `uploads/${name}`, size: 1 },
    });
    expect(readFileSync(join(app.root, 'uploads', name), 'utf8')).toBe('x');
  });

  it('refuses an upload one folder deeper, making no folder', async () => {
    const got = await upload(`up-over/${folders(FOLDER_DEPTH_MAX - 1)}`);
    expect(answer(got)).toEqual({ status: 400, body: TOO_DEEP });
    expect(onDisk('uploads/up-over')).toBe(false);
  });

  it('judges the canonical path: a deep name that climbs back within the limit is stored', async () => {
    const name = `up-back/${folders(FOLDER_DEPTH_MAX, '..')}/${'../'.repeat(FOLDER_DEPTH_MAX - 1)}f.txt`;
    expect(answer(await upload(name))).toEqual({
      status: 201,
      body: { uploaded: 'uploads/up-back/f.txt', size: 1 },
    });
  });

  it('refuses a deep upload before it looks at a folder: below a file, too deep, not a 409', async () => {
    const got = await upload(`hello.txt/${folders(FOLDER_DEPTH_MAX)}`);
    expect(answer(got)).toEqual({ status: 400, body: TOO_DEEP });
  });

  it('refuses a deep upload before it judges its names: one too long, too deep, not name too long', async () => {
    const got = await upload(`up-long/${folders(FOLDER_DEPTH_MAX, 'n'.repeat(256))}`);
    expect(answer(got)).toEqual({ status: 400, body: TOO_DEEP });
    expect(onDisk('uploads/up-long')).toBe(false);
  });

  it('moves a file into the deepest folder allowed', async () => {
    plant('uploads/move-fits.txt', 'fits');
    const to = `uploads/move-fits/${folders(FOLDER_DEPTH_MAX - 2)}`;
    expect(answer(await move('uploads/move-fits.txt', to))).toEqual({
      status: 200,
      body: { moved: 'uploads/move-fits.txt', to },
    });
    expect(readFileSync(join(app.root, to), 'utf8')).toBe('fits');
  });

  it('refuses a move one folder deeper, making no folder and keeping the source', async () => {
    plant('uploads/move-over.txt', 'kept');
    const got = await move(
      'uploads/move-over.txt',
      `uploads/move-over/${folders(FOLDER_DEPTH_MAX - 1)}`,
    );
    expect(answer(got)).toEqual({ status: 400, body: TOO_DEEP });
    expect(onDisk('uploads/move-over')).toBe(false);
    expect(readFileSync(join(app.root, 'uploads/move-over.txt'), 'utf8')).toBe('kept');
  });

  it('refuses a deep move before it looks at its source: none there, too deep, not a 404', async () => {
    const got = await move('uploads/none.txt', `uploads/move-none/${folders(FOLDER_DEPTH_MAX)}`);
    expect(answer(got)).toEqual({ status: 400, body: TOO_DEEP });
  });

  describe('a file deeper than the limit, made on disk', () => {
    const deep = `uploads/op/${folders(FOLDER_DEPTH_MAX + 8)}`;
    const folder = deep.slice(0, deep.lastIndexOf('/'));

    it('is listed, downloaded and deleted', async () => {
      plant(deep, 'deep');
      const listed = await send(app.port, { path: `/api/list?dir=${folder}` });
      expect(answer(listed)).toEqual({
        status: 200,
        body: { entries: [{ name: 'f.txt', type: 'file', size: 4 }] },
      });
      const downloaded = await send(app.port, { path: `/files/${deep}` });
      expect([downloaded.status, downloaded.text]).toEqual([200, 'deep']);
      const deleted = await send(app.port, { method: 'DELETE', path: `/files/${deep}` });
      expect(answer(deleted)).toEqual({ status: 200, body: { deleted: deep } });
      expect(onDisk(deep)).toBe(false);
    });

    it('is moved out to a folder within the limit', async () => {
      plant(deep, 'out');
      expect(answer(await move(deep, 'uploads/out.txt'))).toEqual({
        status: 200,
        body: { moved: deep, to: 'uploads/out.txt' },
      });
      expect(readFileSync(join(app.root, 'uploads/out.txt'), 'utf8')).toBe('out');
    });

    it('takes no new file: its folder is too deep, though it is there', async () => {
      const beside = `${folder}/new.txt`;
      expect(answer(await upload(beside.slice('uploads/'.length)))).toEqual({
        status: 400,
        body: TOO_DEEP,
      });
      plant('uploads/in.txt', 'in');
      expect(answer(await move('uploads/in.txt', beside))).toEqual({
        status: 400,
        body: TOO_DEEP,
      });
      expect(onDisk(beside)).toBe(false);
    });
  });
});

// A broken sandbox makes a 404 or a 409 the server's fault (a 500): no name
// could have avoided it. A target too deep is the name's fault whatever the
// sandbox holds.
describe.each(EXAMPLES)('the $name example, its uploads/ a file while it runs', (example) => {
  it('answers a target too deep as such, not as the broken sandbox', async () => {
    const app = await start(example);
    try {
      rmSync(join(app.root, 'uploads'), { recursive: true });
      writeFileSync(join(app.root, 'uploads'), 'in place of uploads/');
      const deep = folders(FOLDER_DEPTH_MAX);
      const uploaded = await send(app.port, postFiles('/api/upload', ['file', deep, 'x']));
      const to = `uploads/${deep}`;
      const moved = await send(app.port, postJson('/api/move', JSON.stringify({ from: to, to })));
      expect([answer(uploaded), answer(moved)]).toEqual([
        { status: 400, body: TOO_DEEP },
        { status: 400, body: TOO_DEEP },
      ]);
    } finally {
      await app.stop();
    }
  });
});
