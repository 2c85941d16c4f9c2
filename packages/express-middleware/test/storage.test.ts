import { execFileSync } from 'node:child_process';
import {
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import express, { type Request } from 'express';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Answer } from '../../../test/answer.js';
import { type Held, hold, makeAndHold } from '../src/folders.js';
import {
  type DiskStorageOptions,
  type Pathgate,
  pathgate,
  STORAGE_CODES,
  type StorageCode,
} from '../src/index.js';
import { remember } from '../src/stored-files.js';
import {
  BOUNDARY,
  descriptorsUnder,
  fieldPart,
  filePart,
  filesUnder,
  MULTIPART,
  multipartPost,
  type RawPart,
  serve,
  tempRoot,
  upload,
} from './helpers.js';

// gate.diskStorage() over real HTTP: each refusal the file system causes is
// an http-errors shaped 4xx that names no path and leaves the tree as it
// was; the default root '/' works; the storage's removal of stored files
// (multer's abort, pathgate's deny after multer) never hangs and reports
// nothing for a file that is already gone.

/**
 * An error handler that follows the http-errors convention the README
 * promises to fit: the message goes to the client only when `expose` is set.
 */
function httpErrorsHandler() {
  const calls: unknown[] = [];
  const handler: express.ErrorRequestHandler = (error, _req, res, _next) => {
    calls.push(error);
    const status = typeof error?.status === 'number' ? error.status : 500;
    const message = error?.expose === true ? error.message : 'Internal Server Error';
    res.status(status).json({ status, code: error?.code, message });
  };
  return { handler, calls };
}

interface Site {
  readonly root: string;
  readonly errors: unknown[];
  readonly port: number;
  send(path: string, parts: readonly RawPart[]): Promise<Answer>;
  close(): Promise<void>;
}

/** A temp root, an app whose routes `build` adds over a gate of that root, served on 127.0.0.1. */
async function openSite(
  build: (app: express.Express, gate: Pathgate, root: string) => void,
): Promise<Site> {
  const { root, remove } = tempRoot();
  const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
  const app = express();
  build(app, gate, root);
  const errors = httpErrorsHandler();
  app.use(errors.handler);
  const served = await serve(app);
  return {
    root,
    port: served.port,
    errors: errors.calls,
    send: (path, parts) => upload(served.port, path, parts),
    close: async () => {
      await served.close();
      remove();
    },
  };
}

const stored: express.RequestHandler = (req, res) => {
  res.json({ file: req.file ?? null, files: req.files ?? null });
};

/** Every entry below `dir` (directories, links with their target, files with their content). */
function tree(dir: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const name of (readdirSync(dir, { recursive: true }) as string[]).sort()) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) entries[name] = `-> ${readlinkSync(path)}`;
    else if (stat.isDirectory()) entries[name] = 'dir';
    else if (stat.isFIFO())
      entries[name] = 'fifo'; // reading one would block
    else entries[name] = readFileSync(path, 'utf8');
  }
  return entries;
}

/**
 * A relative name of short folders, then a file name of `last` bytes, that
 * makes `${dir}/${name}` exactly `total` bytes long. The file name's length is
 * set, not left to the temp dir's: the temporary name beside it counts too.
 */
function pathOfBytes(dir: string, total: number, last = 100): string {
  const folders: string[] = [];
  // Each folder takes its bytes and a slash; 1 byte left over would be a slash without a name.
  for (let room = total - Buffer.byteLength(`${dir}/`) - last; room > 0; ) {
    const size = room === 202 ? 199 : Math.min(200, room - 1);
    folders.push('p'.repeat(size));
    room -= size + 1;
  }
  return [...folders, 'q'.repeat(last)].join('/');
}

/** `.pathgate-<uuid>.part`, the file written beside the target until it is whole. */
const TEMP_NAME = 51;

describe('the safe disk storage refuses with an http-errors shaped 4xx, names no path, changes nothing', () => {
  let site: Site;
  let outside: ReturnType<typeof tempRoot>;
  let uploads: string;

  beforeAll(async () => {
    outside = tempRoot();
    writeFileSync(join(outside.root, 'victim.txt'), 'safe');
    site = await openSite((app, gate) => {
      const spec = gate.write({ file: 'f', under: 'uploads' });
      app.post('/keep', spec, gate.multer().single('f'), stored);
      const replacing = gate.multer({ storage: gate.diskStorage({ overwrite: true }) });
      app.post('/replace', spec, replacing.single('f'), stored);
      // Built while Object.prototype carries overwrite: true, as after a prototype pollution.
      const proto = Object.prototype as { overwrite?: boolean };
      proto.overwrite = true;
      try {
        app.post(
          '/polluted',
          spec,
          gate.multer({ storage: gate.diskStorage({}) }).single('f'),
          stored,
        );
      } finally {
        delete proto.overwrite;
      }
    });
    uploads = join(site.root, 'uploads');
    mkdirSync(uploads);
  });

  afterAll(async () => {
    await site.close();
    outside.remove();
  });

  const refusals: {
    readonly what: string;
    readonly route: '/keep' | '/replace' | '/polluted';
    readonly filename: string | (() => string);
    readonly plant?: (uploads: string, outside: string) => void;
    readonly status: number;
    readonly code: StorageCode;
    readonly message: string;
  }[] = [
    {
      what: 'an existing file (overwrite off)',
      route: '/keep',
      filename: 'taken.txt',
      plant: (dir) => writeFileSync(join(dir, 'taken.txt'), 'before'),
      status: 409,
      code: STORAGE_CODES.EXISTS,
      message: 'the target exists',
    },
    {
      what: 'an existing file (an inherited overwrite is not an option)',
      route: '/polluted',
      filename: 'taken-too.txt',
      plant: (dir) => writeFileSync(join(dir, 'taken-too.txt'), 'before'),
      status: 409,
      code: STORAGE_CODES.EXISTS,
      message: 'the target exists',
    },
    {
      what: 'an existing directory (overwrite on: EISDIR)',
      route: '/replace',
      filename: 'folder',
      plant: (dir) => mkdirSync(join(dir, 'folder')),
      status: 409,
      code: STORAGE_CODES.EXISTS,
      message: 'the target exists',
    },
    {
      what: 'a symlink at the target (overwrite on)',
      route: '/replace',
      filename: 'link.txt',
      plant: (dir, out) => symlinkSync(join(out, 'victim.txt'), join(dir, 'link.txt')),
      status: 403,
      code: STORAGE_CODES.SYMLINK,
      message: 'target is a symlink',
    },
    {
      // Opening it for writing would wait for a reader, holding a thread of libuv's pool.
      what: 'a FIFO at the target (overwrite on)',
      route: '/replace',
      filename: 'pipe',
      plant: (dir) => execFileSync('mkfifo', [join(dir, 'pipe')]),
      status: 403,
      code: STORAGE_CODES.NOT_A_FILE,
      message: 'target is not a regular file of its own',
    },
    {
      // Writing through it would replace a file outside the upload tree.
      what: 'a hard link to a file outside the root (overwrite on)',
      route: '/replace',
      filename: 'hard.txt',
      plant: (dir, out) => linkSync(join(out, 'victim.txt'), join(dir, 'hard.txt')),
      status: 403,
      code: STORAGE_CODES.NOT_A_FILE,
      message: 'target is not a regular file of its own',
    },
    {
      what: 'a regular file where a directory must be',
      route: '/keep',
      filename: 'plain/inner.txt',
      plant: (dir) => writeFileSync(join(dir, 'plain'), 'a file'),
      status: 403,
      code: STORAGE_CODES.NOT_A_DIRECTORY,
      message: 'path component is not a directory',
    },
    {
      what: 'a name of 256 bytes',
      route: '/keep',
      filename: `sub/${'é'.repeat(128)}`,
      status: 400,
      code: STORAGE_CODES.NAME_TOO_LONG,
      message: 'file name too long',
    },
    {
      // Linux's PATH_MAX counts the terminating NUL: 4096 bytes is one too many.
      what: 'a path of 4096 bytes, every name short',
      route: '/keep',
      filename: () => pathOfBytes(uploads, 4096),
      status: 400,
      code: STORAGE_CODES.NAME_TOO_LONG,
      message: 'file name too long',
    },
    {
      // Its temporary name beside it, longer than its own, makes a path of 4096 bytes.
      what: 'a path of 4055 bytes whose file name (10 bytes) is shorter than the temporary one',
      route: '/keep',
      filename: () => pathOfBytes(uploads, 4095 - TEMP_NAME + 10 + 1, 10),
      status: 400,
      code: STORAGE_CODES.NAME_TOO_LONG,
      message: 'file name too long',
    },
  ];

  for (const refusal of refusals) {
    it(`${refusal.what} → ${refusal.status} ${refusal.code}`, async () => {
      refusal.plant?.(uploads, outside.root);
      const before = tree(site.root);
      site.errors.length = 0;
      const { filename } = refusal;
      const name = typeof filename === 'string' ? filename : filename();
      const res = await site.send(refusal.route, [filePart('f', name, 'PWNED')]);
      const { status, code, message } = refusal;
      expect(res.json).toEqual({ status, code, message });
      expect(res.status).toBe(status);
      expect(res.text).not.toContain(site.root);
      // What an app's error handler gets: the http-errors shape, named for `err.name` checks.
      expect(site.errors).toHaveLength(1);
      expect(site.errors[0]).toMatchObject({
        name: 'PathgateStorageError',
        status,
        statusCode: status,
        expose: true,
        code,
      });
      // Nothing written, no directory made for it, nothing planted touched.
      expect(tree(site.root)).toEqual(before);
      expect(tree(outside.root)).toEqual({ 'victim.txt': 'safe' });
    });
  }

  it('a name of exactly 255 bytes, a path of exactly 4095 bytes, and one whose temporary path is, are stored', async () => {
    const longest = `${'é'.repeat(125)}.txt!`;
    expect(Buffer.byteLength(longest)).toBe(255);
    const name = await site.send('/keep', [filePart('f', longest, 'fits')]);
    expect(name.status).toBe(200);
    expect(readFileSync(join(uploads, longest), 'utf8')).toBe('fits');
    const path = pathOfBytes(uploads, 4095);
    const res = await site.send('/keep', [filePart('f', path, 'fits too')]);
    expect(res.status).toBe(200);
    expect(Buffer.byteLength(join(uploads, path))).toBe(4095);
    expect(readFileSync(join(uploads, path), 'utf8')).toBe('fits too');
    // A short file name: its temporary name makes a path of exactly 4095 bytes.
    const short = pathOfBytes(uploads, 4095 - TEMP_NAME + 10, 10);
    const beside = await site.send('/keep', [filePart('f', short, 'fits beside')]);
    expect(beside.status).toBe(200);
    expect(Buffer.byteLength(join(uploads, short))).toBe(4054);
    expect(readFileSync(join(uploads, short), 'utf8')).toBe('fits beside');
  });

  it('a root that is no longer a directory: 403 PATHGATE_NOT_A_DIRECTORY, not a raw fs error', async () => {
    const gone = await openSite((app, gate) => {
      app.post('/up', gate.write({ file: 'f', under: 'uploads' }), gate.multer().any(), stored);
    });
    try {
      rmSync(gone.root, { recursive: true });
      writeFileSync(gone.root, 'a file now');
      const res = await gone.send('/up', [filePart('f', 'a.txt')]);
      expect(res.json).toEqual({
        status: 403,
        code: STORAGE_CODES.NOT_A_DIRECTORY,
        message: 'path component is not a directory',
      });
      expect(res.text).not.toContain(gone.root);
      expect(readFileSync(gone.root, 'utf8')).toBe('a file now');
    } finally {
      await gone.close();
    }
  });
});

describe('the default root /', () => {
  it('stores below it, creating the missing directories', async () => {
    const dir = tempRoot();
    // No `root`: the policy root is '/', and the rule names the temp folder absolutely.
    const gate = pathgate({ fs: [`rw:${dir.root}/uploads/**`], log: () => {} });
    const app = express();
    app.post(
      '/up',
      gate.write({ file: 'f', under: `${dir.root}/uploads` }),
      gate.multer().single('f'),
      stored,
    );
    const served = await serve(app);
    try {
      const res = await upload(served.port, '/up', [filePart('f', 'new/deeper/a.txt', 'hello')]);
      expect(res.status).toBe(200);
      const path = join(dir.root, 'uploads', 'new', 'deeper', 'a.txt');
      expect(res.json).toMatchObject({ file: { path, size: 5 } });
      expect(readFileSync(path, 'utf8')).toBe('hello');
      expect(filesUnder(dir.root)).toEqual(['uploads/new/deeper/a.txt']);
    } finally {
      await served.close();
      dir.remove();
    }
  });
});

describe('gate.diskStorage(options)', () => {
  it('refuses options that are not an object, naming the call', () => {
    const gate = pathgate({ root: '/srv', fs: ['rw:uploads/**'] });
    for (const options of [null, 'yes', 42, true]) {
      expect(() => gate.diskStorage(options as never)).toThrow(
        new TypeError('pathgate: gate.diskStorage(): options must be an object'),
      );
    }
  });

  it('replaces an existing file only with overwrite: true', async () => {
    const choices: Record<string, DiskStorageOptions | undefined> = {
      none: undefined,
      empty: {},
      unset: { overwrite: undefined },
      off: { overwrite: false },
      on: { overwrite: true },
    };
    const site = await openSite((app, gate) => {
      for (const [name, options] of Object.entries(choices)) {
        const up = gate.multer({ storage: gate.diskStorage(options) });
        app.post(`/${name}`, gate.write({ file: 'f', under: 'uploads' }), up.single('f'), stored);
      }
    });
    try {
      for (const name of Object.keys(choices)) {
        const first = await site.send(`/${name}`, [filePart('f', `${name}.txt`, 'first')]);
        expect(first.status).toBe(200);
        const second = await site.send(`/${name}`, [filePart('f', `${name}.txt`, 'second')]);
        const replaced = name === 'on';
        expect([name, second.status]).toEqual([name, replaced ? 200 : 409]);
        const content = readFileSync(join(site.root, 'uploads', `${name}.txt`), 'utf8');
        expect([name, content]).toEqual([name, replaced ? 'second' : 'first']);
      }
    } finally {
      await site.close();
    }
  });
});

describe('one request of many tiny files', () => {
  const PARTS = 20;
  it('holds at most one open file at a time, and stores them all', async () => {
    const site = await openSite((app, gate) => {
      app.post('/many', gate.write({ file: 'f', under: 'uploads' }), gate.multer().any(), stored);
    });
    // Counts this process's descriptors under the root on every turn of the event loop.
    // Each sample reads /proc/self/fd, and each file is a dozen file-system calls in turn:
    // 300 parts took 4 to 10 s on a loaded 2-core machine. 20 parts, which arrive in one
    // chunk and all open at once without the turns, take 0.4 to 2.5 s there; the timeout
    // is for that real work, which has no event to wait on.
    let most = 0;
    let sampling = true;
    const sample = () => {
      most = Math.max(most, descriptorsUnder(site.root).length);
      if (sampling) setImmediate(sample);
    };
    try {
      sample();
      const parts = Array.from({ length: PARTS }, (_, i) => filePart('f', `t${i}.txt`, 'x'));
      const res = await site.send('/many', parts);
      expect(res.status).toBe(200);
      expect(filesUnder(site.root)).toHaveLength(PARTS);
      expect(most).toBe(1);
    } finally {
      sampling = false;
      await site.close();
    }
  }, 15_000);
});

describe('overwrite: true replaces a file only with a complete new one', () => {
  let site: Site;
  const target = () => join(site.root, 'uploads', 'report.txt');

  beforeAll(async () => {
    site = await openSite((app, gate) => {
      const replacing = gate.multer({
        storage: gate.diskStorage({ overwrite: true }),
        limits: { fileSize: 64 * 1024 },
      });
      app.post('/replace', gate.write({ file: 'f', under: 'uploads' }), replacing.any(), stored);
    });
    mkdirSync(join(site.root, 'uploads'));
  });
  afterAll(() => site.close());

  it('a new version over the size limit: 413, and the old file is as it was', async () => {
    writeFileSync(target(), 'version 1');
    const res = await site.send('/replace', [filePart('f', 'report.txt', 'x'.repeat(128 * 1024))]);
    expect(res.status).toBe(413);
    expect(readFileSync(target(), 'utf8')).toBe('version 1');
    expect(readdirSync(join(site.root, 'uploads'))).toEqual(['report.txt']);
  });

  it('a client that leaves mid-file: the old file is as it was, no temporary file stays', async () => {
    writeFileSync(target(), 'version 1');
    site.errors.length = 0;
    const req = beginUpload(site.port, '/replace', 'report.txt', 32 * 1024);
    // The new version is being written beside the old one.
    await vi.waitFor(() => expect(readdirSync(join(site.root, 'uploads'))).toHaveLength(2));
    req.destroy();
    await vi.waitFor(() => expect(site.errors).toHaveLength(1));
    await vi.waitFor(() => expect(descriptorsUnder(site.root)).toEqual([]));
    expect(readFileSync(target(), 'utf8')).toBe('version 1');
    expect(readdirSync(join(site.root, 'uploads'))).toEqual(['report.txt']);
  });

  it('a complete new version replaces the old one, and nothing else stays', async () => {
    writeFileSync(target(), 'version 1');
    const res = await site.send('/replace', [filePart('f', 'report.txt', 'version 2')]);
    expect(res.status).toBe(200);
    expect(readFileSync(target(), 'utf8')).toBe('version 2');
    // The old version, kept until the response is over, goes once it is: the
    // client may read the answer before the server sees its response close.
    await vi.waitFor(() => expect(readdirSync(join(site.root, 'uploads'))).toEqual(['report.txt']));
  });
});

describe('removing stored files when the request fails later', () => {
  let site: Site;

  beforeAll(async () => {
    site = await openSite((app, gate, root) => {
      // Two parts with one name under overwrite: both entries point to one file,
      // so the second removal finds it gone (ENOENT).
      const replacing = gate.multer({
        storage: gate.diskStorage({ overwrite: true }),
        limits: { files: 2 },
      });
      app.post(
        '/replace',
        gate.write(
          { file: true, under: 'uploads' },
          { body: 'to', under: 'uploads', optional: true },
        ),
        replacing.any(),
        stored,
      );
      // A report-only deny: the file is read and dropped, so it has no path to remove.
      const watching = pathgate({ root, fs: ['rw:uploads/**'], reportOnly: true, log: () => {} });
      app.post(
        '/watched',
        watching.write({ file: true, under: 'uploads' }),
        watching.multer({ limits: { files: 1 } }).any(),
        stored,
      );
    });
  });

  afterAll(() => site.close());

  const twice = () => [filePart('a', 'same.txt', 'one'), filePart('b', 'same.txt', 'two')];

  it("multer's limit error after both are stored: one 413, no storage errors, nothing stays", async () => {
    site.errors.length = 0;
    const res = await site.send('/replace', [...twice(), filePart('c', 'third.txt')]);
    expect(res.status).toBe(413);
    expect(res.json).toMatchObject({ code: 'LIMIT_FILE_COUNT' });
    expect(site.errors).toHaveLength(1);
    // multer lists the files it could not remove; a file already gone is not one of them.
    expect(site.errors[0]).toMatchObject({ storageErrors: [] });
    expect(filesUnder(site.root)).toEqual([]);
  });

  it("pathgate's deny of a field after both are stored: the 403 comes, nothing stays", async () => {
    site.errors.length = 0;
    const res = await site.send('/replace', [...twice(), fieldPart('to', '../../escape')]);
    expect(res.status).toBe(403);
    expect(res.json).toMatchObject({ reason: 'path-not-in-allowlist' });
    expect(site.errors).toEqual([]);
    expect(filesUnder(site.root)).toEqual([]);
  });

  it("multer's limit error after a dropped (report-only) file: one 413, no storage errors", async () => {
    site.errors.length = 0;
    const res = await site.send('/watched', [
      filePart('a', '../dropped.txt', 'never written'),
      filePart('b', 'b.txt'),
    ]);
    expect(res.status).toBe(413);
    expect(res.json).toMatchObject({ code: 'LIMIT_FILE_COUNT' });
    expect(site.errors).toHaveLength(1);
    expect(site.errors[0]).toMatchObject({ storageErrors: [] });
    expect(filesUnder(site.root)).toEqual([]);
  });

  it('a client that disconnects mid-file: the half-written file is removed and closed, the error handler runs once', async () => {
    site.errors.length = 0;
    const req = beginUpload(site.port, '/replace', 'half.bin', 256 * 1024);
    // Under overwrite, the file is written beside its target, then renamed.
    await vi.waitFor(() => expect(filesUnder(site.root)).toHaveLength(1));
    req.destroy();
    await vi.waitFor(() => expect(site.errors).toHaveLength(1));
    expect(site.errors[0]).toMatchObject({ storageErrors: [] });
    expect(filesUnder(site.root)).toEqual([]);
    // Its descriptor too: an unlinked file left open would hold its blocks (and an fd) for good.
    await vi.waitFor(() => expect(descriptorsUnder(site.root)).toEqual([]));
  });

  it('clients that leave right after a part begins: no empty file, no descriptor stays, the names stay free', async () => {
    site.errors.length = 0;
    // Folders to make first, so the abort tends to land before the file is opened.
    const names = Array.from({ length: 10 }, (_, i) => `d${i}/e/f/gone.txt`);
    await Promise.all(names.map((name) => leaveAfterPartBegins(site.port, '/replace', name)));
    await vi.waitFor(() => expect(site.errors).toHaveLength(names.length));
    await vi.waitFor(() => expect(descriptorsUnder(site.root)).toEqual([]));
    expect(filesUnder(site.root)).toEqual([]);
    const again = await site.send('/replace', [filePart('f', names[0] as string, 'stored')]);
    expect(again.status).toBe(200);
    expect(readFileSync(join(site.root, 'uploads', names[0] as string), 'utf8')).toBe('stored');
    rmSync(join(site.root, 'uploads'), { recursive: true });
  });
});

/**
 * Starts an upload of one file in field `f`, announcing 10 MiB, and sends
 * `bytes` of it; the test hangs up with `req.destroy()`.
 */
function beginUpload(port: number, path: string, filename: string, bytes: number) {
  const req = multipartPost(port, path, 10 * 1024 * 1024);
  req.on('error', () => {}); // the hang-up the test causes
  req.write(
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="f"; filename="${filename}"\r\n\r\n`,
  );
  req.write(Buffer.alloc(bytes, 0x61));
  return req;
}

/** Sends a multipart head and the start of a file named `filename`, then hangs up at once. */
function leaveAfterPartBegins(port: number, path: string, filename: string): Promise<void> {
  return new Promise((done) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${MULTIPART}\r\n` +
          `Content-Length: 100000\r\n\r\n--${BOUNDARY}\r\n` +
          `Content-Disposition: form-data; name="f"; filename="${filename}"\r\n\r\n${'a'.repeat(1000)}`,
      );
      setImmediate(() => {
        socket.destroy();
        done();
      });
    });
    socket.on('error', () => done());
  });
}

describe('a part whose client left before the storage opened its file', () => {
  // The abort lands while the storage makes the folders: multer's cleanup
  // finds no path yet, so the storage itself must settle, remove and close.
  const handle = (file: Partial<Express.Multer.File>) =>
    new Promise<unknown>((settle) => {
      const storage = pathgate({ root, fs: ['rw:uploads/**'] }).diskStorage();
      storage._handleFile({} as express.Request, file as Express.Multer.File, (error) =>
        settle(error),
      );
    });
  // A root per test: the later upload stores the very name the aborted ones must not leave.
  let root: string;
  let remove: () => void;
  beforeEach(() => {
    ({ root, remove } = tempRoot());
  });
  afterEach(() => remove());

  it.each([
    ['destroyed', (s: PassThrough) => s.destroy()],
    ['destroyed with an error', (s: PassThrough) => s.destroy(new Error('Request aborted'))],
  ])(
    'a stream already %s: the callback gets an error; no file, no descriptor stays',
    async (_how, end) => {
      const stream = new PassThrough();
      stream.on('error', () => {}); // the abort's own error, which multer handles
      stream.write('never stored');
      end(stream);
      const file = { stream, pathgatePath: join(root, 'uploads', 'deep', 'gone.txt') };
      expect(await handle(file)).toBeInstanceOf(Error);
      expect(filesUnder(root)).toEqual([]);
      expect(descriptorsUnder(root)).toEqual([]);
    },
  );

  it('a later upload of the same name is stored, not refused as existing', async () => {
    const stream = new PassThrough();
    const target = join(root, 'uploads', 'deep', 'gone.txt');
    const stored = handle({ stream, pathgatePath: target });
    stream.end('kept');
    expect(await stored).toBeNull();
    expect(readFileSync(target, 'utf8')).toBe('kept');
  });
});

/** A request's folders, without a response (as over), for the unit rows. */
const unitHeld = (): Held => ({ folders: new Map(), over: true, busy: 0, onRelease: [] });
/** A folder below a made-up root: `makeAndHold` never touches the disk in these rows. */
const folderAt = (name: string) => ({
  path: `/srv/up/${name}`,
  real: Buffer.from(`/srv/up/${name}`),
});

describe("hold: a request's folders shared while its work runs", () => {
  it('a done called again does nothing: the folders stay shared while another hold runs', () => {
    const held = unitHeld();
    const released: string[] = [];
    held.onRelease.push(() => released.push('released'));
    const store = hold(held);
    const removal = hold(held);
    store();
    store();
    expect([held.busy, released]).toEqual([1, []]);
    removal();
    expect([held.busy, released]).toEqual([0, ['released']]);
  });

  it('50,000 folders one request made are each held once, looked up by key', async () => {
    // Searched for in a list, as before, the 50,000 took the square of their
    // number (60 s here, far past the test's timeout): one request's files
    // in thousands of new folders (about 2,000 in one name) blocked the event loop.
    const held = unitHeld();
    const done = hold(held); // a store runs: its release takes them out of the shared count
    for (let i = 0; i < 50_000; i++) await makeAndHold(held, folderAt(`d${i}`), async () => true);
    await makeAndHold(held, folderAt('d7'), async () => false);
    done();
    expect(held.folders.size).toBe(50_000);
  });

  it("a request's folders leave the shared count with it, each once: a later walk into them holds none", async () => {
    // Left counted, a folder a finished request made looks like one of an
    // upload in flight: a later upload that walks into it and fails removes it.
    const first = unitHeld();
    const done = hold(first);
    await makeAndHold(first, folderAt('a'), async () => true);
    await makeAndHold(first, folderAt('a/b'), async () => true);
    await makeAndHold(first, folderAt('a/b'), async () => false); // its second file there
    done();
    const later = unitHeld();
    const laterDone = hold(later);
    for (const name of ['a', 'a/b']) await makeAndHold(later, folderAt(name), async () => false);
    laterDone();
    expect([...later.folders.keys()]).toEqual([]);
  });

  it('folders whose real paths differ only in bytes that are not UTF-8 are held apart', async () => {
    // A link in the root may lead to such a name; read as UTF-8, both keys
    // would be U+FFFD and the second folder never held, nor removed.
    const held = unitHeld();
    const done = hold(held);
    for (const byte of [0xfe, 0xff]) {
      const real = Buffer.concat([Buffer.from('/srv/up/'), Buffer.from([byte])]);
      await makeAndHold(held, { path: '/srv/up/x', real }, async () => true);
    }
    done();
    expect(held.folders.size).toBe(2);
  });
});

describe('remember: what one request stored at one name', () => {
  it('50,000 stores of one name (overwrite) are remembered in linear time', () => {
    // Copied whole at each store, as before, the list took the square of its
    // length: 87 s here, far past the test's timeout.
    const req = {} as Request;
    const stored = { identity: 'file', real: Buffer.from('/srv/up/x'), kept: undefined };
    for (let i = 0; i < 50_000; i++) remember(req, '/srv/up/x', stored);
  });
});
