import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { UPLOAD_OPTIONS } from '../examples/express-files/app.js';
import { readMulterOptions } from '../packages/express-middleware/src/multer-options.js';
import {
  begin,
  cutUpload as cut,
  EXAMPLES,
  postFiles,
  postJson,
  type Sent,
  send,
} from './examples.js';
import { startedForSuite } from './fixture.js';

// A cut or refused upload to a deep name leaves no folder of its own behind,
// already when the answer arrives (the disk is read at once, no wait): only
// the folders it made go, never one that was there before, and a successful
// upload beside it, to the same new folder, is stored all the same. Two
// failing uploads into the same new folder leave it to neither. It takes
// back its own file only: never one another client stored at its name since.

const B = 'pathgate-failed-upload';

/** An upload of `name` with a text field `field` holding `value`: before the file (`at` 0) or after it (1). */
function withField(name: string, field: string, value: string, at: number): Sent {
  const parts = [
    `--${B}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n\r\nx\r\n`,
  ];
  parts.splice(
    at,
    0,
    `--${B}\r\nContent-Disposition: form-data; name="${field}"\r\n\r\n${value}\r\n`,
  );
  return {
    method: 'POST',
    path: '/api/upload',
    headers: { 'content-type': `multipart/form-data; boundary=${B}` },
    body: `${parts.join('')}--${B}--\r\n`,
  };
}

/** Names of 200 bytes at most that, below `base`, make a path of `length` bytes. */
function padded(base: string, length: number): string {
  const names: string[] = [];
  for (let left = length - Buffer.byteLength(base); left > 0; ) {
    // Never leave a single byte: a name needs one besides its slash.
    const size = left > 201 ? (left === 202 ? 199 : 200) : left - 1;
    names.push('p'.repeat(size));
    left -= size + 1;
  }
  return names.join('/');
}

const upload = (...names: string[]) =>
  postFiles('/api/upload', ...names.map((name): [string, string, string] => ['file', name, 'x']));

describe.each(EXAMPLES)('the $name example, an upload to a deep name that fails', (example) => {
  const app = startedForSuite(example);

  /** The entries below uploads/ that start with `prefix` (folders end in `/`), sorted. */
  const disk = (prefix: string) => {
    const dir = join(app.root, 'uploads');
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .map((entry) => {
        const path = join(entry.parentPath, entry.name).slice(dir.length + 1);
        return entry.isDirectory() ? `${path}/` : path;
      })
      .filter((path) => path.startsWith(prefix))
      .sort();
  };

  /** The answer's status, and the disk below `uploads/<prefix>` read right when it arrived. */
  const sent = async (what: Sent, prefix: string) => {
    const got = await send(app.port, what);
    return { status: got.status, disk: disk(prefix) };
  };

  it('a body cut inside the file: no folder left', async () => {
    expect(await sent(cut('cut/a/b/c/file.bin'), 'cut')).toEqual({ status: 400, disk: [] });
  });

  it('a second file after one stored in new folders: neither the file nor its folders', async () => {
    const got = await sent(upload('two/a/one.bin', 'two/b/two.bin'), 'two');
    expect(got).toEqual({ status: 413, disk: [] });
  });

  it('a file over the size limit: no folder left', async () => {
    const big = postFiles('/api/upload', ['file', 'big/a/b.bin', 'x'.repeat(11 << 20)]);
    expect(await sent(big, 'big')).toEqual({ status: 413, disk: [] });
  });

  it.each([
    ['before', 0],
    ['after', 1],
  ])('a field over 1 MiB %s the file: a 413, no file nor folder left', async (_where, at) => {
    const got = await send(
      app.port,
      withField(`field-${at}/a/f.bin`, 'note', `${'x'.repeat(1 << 20)}x`, at),
    );
    expect([got.status, JSON.parse(got.text)]).toEqual([
      413,
      { statusCode: 413, error: 'Payload Too Large', message: 'payload too large' },
    ]);
    expect(disk(`field-${at}`)).toEqual([]);
  });

  // @fastify/multipart refuses such a name (FST_PROTO_VIOLATION); multer takes it.
  it.each([
    ['__proto__', 0],
    ['constructor', 1],
    ['toString', 0],
  ])(
    'a field named %s, a key of Object.prototype: a 400, no file nor folder left',
    async (field, at) => {
      const got = await send(app.port, withField(`proto-${at}/a/f.bin`, field, 'x', at));
      expect([got.status, JSON.parse(got.text)]).toEqual([
        400,
        { statusCode: 400, error: 'Bad Request', message: 'bad request' },
      ]);
      expect(disk(`proto-${at}`)).toEqual([]);
    },
  );

  it('a name too long below new folders: a 400, none of the folders made on the way left', async () => {
    const long = upload(`long/a/${'x'.repeat(300)}/file.bin`);
    expect(await sent(long, 'long')).toEqual({ status: 400, disk: [] });
  });

  it('names of 255 bytes, in letters of two bytes, are stored; one of 256 below a file is a 400, as the Express storage answers', async () => {
    const [folder, file] = [`${'é'.repeat(127)}d`, `${'é'.repeat(125)}x.bin`];
    expect(await sent(upload(`bytes/${folder}/${file}`), 'bytes')).toEqual({
      status: 201,
      disk: ['bytes/', `bytes/${folder}/`, `bytes/${folder}/${file}`],
    });
    // Refused before the walk, which would meet the file first (409).
    const long = upload(`hello.txt/${'é'.repeat(128)}/f.bin`);
    expect((await send(app.port, long)).status).toBe(400);
  });

  it('a file over the size limit to a name already there: a 409, the name checked before the body is read', async () => {
    const big = postFiles('/api/upload', ['file', 'hello.txt', 'x'.repeat(11 << 20)]);
    expect((await send(app.port, big)).status).toBe(409);
    expect(readFileSync(join(app.root, 'uploads', 'hello.txt'), 'utf8')).toMatch(/^uploads/);
  });

  it('a folder path over 4,043 bytes: a 400, as the Express storage answers, no folder left', async () => {
    // The storage's temporary file (52 bytes with its slash) must fit in 4,095.
    const fits = padded(join(app.root, 'uploads', 'path-fits'), 4043);
    expect((await send(app.port, upload(`path-fits/${fits}/f.bin`))).status).toBe(201);
    const below = padded(join(app.root, 'uploads', 'path-max'), 4044);
    expect(await sent(upload(`path-max/${below}/f.bin`), 'path-max')).toEqual({
      status: 400,
      disk: [],
    });
  });

  it('a file already there or a parent that is a file, the path of its folder over 4,043 bytes: a 409, as the Express storage answers', async () => {
    // The storage finds the file there before it makes its temporary file.
    const below = padded(join(app.root, 'uploads', 'path-taken'), 4044);
    const move = { from: 'uploads/hello.txt', to: `uploads/path-taken/${below}/f.bin` };
    expect((await send(app.port, postJson('/api/move', JSON.stringify(move)))).status).toBe(200);
    expect((await send(app.port, upload(`path-taken/${below}/f.bin`))).status).toBe(409);
    // And its walk meets a parent that is a file first.
    expect((await send(app.port, upload(`path-taken/${below}/f.bin/g.bin`))).status).toBe(409);
  });

  it('a folder that was there before stays', async () => {
    mkdirSync(join(app.root, 'uploads', 'was'));
    expect(await sent(cut('was/new/file.bin'), 'was')).toEqual({
      status: 400,
      disk: ['was/'],
    });
  });

  it('a successful upload keeps its folders', async () => {
    expect(await sent(upload('ok/a/file.bin'), 'ok')).toEqual({
      status: 201,
      disk: ['ok/', 'ok/a/', 'ok/a/file.bin'],
    });
  });

  it('an upload beside a failing one, to the same new folder, is stored', async () => {
    for (let i = 0; i < 20; i++) {
      const [failed, stored] = await Promise.all([
        send(app.port, cut(`both-${i}/a/cut.bin`)),
        send(app.port, upload(`both-${i}/a/ok.bin`)),
      ]);
      expect([failed.status, stored.status]).toEqual([400, 201]);
      expect(disk(`both-${i}/`)).toEqual([`both-${i}/`, `both-${i}/a/`, `both-${i}/a/ok.bin`]);
    }
  });

  /** Waits until `folder` below uploads/ holds `count` entries (the uploads' open files). */
  const holding = async (folder: string, count: number) => {
    for (let waited = 0; disk(`${folder}/`).length < count + 1; waited += 10) {
      if (waited > 5000) throw new Error(`${folder} never held ${count} entries`);
      await sleep(10);
    }
  };

  it('two failing uploads into a new folder, the one that made it failing first: no folder left', async () => {
    // a makes over/in/ and opens its file there; b opens its own beside it.
    const a = begin(app.port, cut('over/in/a.bin'));
    await holding('over/in', 1);
    const b = begin(app.port, cut('over/in/b.bin'));
    await holding('over/in', 2);
    // a fails first and leaves over/in/ to b's file; then b fails.
    expect((await a.end()).status).toBe(400);
    expect((await b.end()).status).toBe(400);
    expect(disk('over')).toEqual([]);
  });

  it('a body cut after its file was stored, which another client moved away and replaced meanwhile: the replacement stays', async () => {
    // Stopped inside the second part's head: its file stored, the request not over.
    const { body, ...head } = upload('taken.txt', 'b');
    const whole = Buffer.from(body ?? '');
    const second = whole.indexOf('content-disposition', whole.indexOf('content-disposition') + 1);
    const held = begin(app.port, { ...head, body: whole.subarray(0, second) });
    // A bound on the downloads it waits through for that file, not a time.
    for (
      let looks = 0;
      (await send(app.port, { path: '/files/uploads/taken.txt' })).status !== 200;
    ) {
      if (++looks === 2000) throw new Error('the held upload never stored its file');
    }
    const move = JSON.stringify({ from: 'uploads/taken.txt', to: 'uploads/moved.txt' });
    expect((await send(app.port, postJson('/api/move', move))).status).toBe(200);
    const theirs = postFiles('/api/upload', ['file', 'taken.txt', 'theirs']);
    expect((await send(app.port, theirs)).status).toBe(201);
    expect((await held.end()).status).toBe(400);
    expect(readFileSync(join(app.root, 'uploads', 'taken.txt'), 'utf8')).toBe('theirs');
  });
});

// A dependency range only says what npm may install: on the oldest multer it
// admits, the example must start. Its package.json said ^2.2.0 after its
// upload took a streamHandler (multer 2.4), so on 2.2 or 2.3 it stopped at
// startup with gate.multer()'s TypeError.
it("the Express example's multer range starts at a release that reads its upload options", () => {
  const manifest = readFileSync(new URL('../examples/express-files/package.json', import.meta.url));
  const range: string = JSON.parse(manifest.toString()).dependencies.multer;
  expect(range).toMatch(/^\^\d+\.\d+\.\d+$/);
  expect(() => readMulterOptions(UPLOAD_OPTIONS, range.slice(1))).not.toThrow();
});
