import { appendFileSync, readdirSync, truncateSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { EXAMPLES, send } from './examples.js';
import { eventually } from './fault-clients.js';
import { startedForSuite } from './fixture.js';

// A file that another process changes while it is being downloaded: the
// answer keeps to the Content-Length it was sent with. Bytes appended since
// must not follow it (on a kept-alive connection the client would read them
// as its next answer), and a file cut shorter must not leave the client
// waiting for bytes that never come.

/** A file of this name is emptied once the server has taken its size, before it reads a byte. */
const EMPTIED = 'emptied-after-stat.bin';

// Deterministic, where a truncating loop only sometimes wins: the real file
// is truncated right after the server's stat of it.
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  const open: typeof fs.open = async (path, ...rest) => {
    const handle = await fs.open(path, ...rest);
    if (!String(path).endsWith(EMPTIED)) return handle;
    const stat = handle.stat.bind(handle);
    handle.stat = (async () => {
      const info = await stat();
      truncateSync(path, 0);
      return info;
    }) as typeof handle.stat;
    return handle;
  };
  return { ...fs, open };
});

/** Bigger than the socket buffers take at once: the server is still reading when the file changes. */
const SIZE = 16 << 20;

/** The servers run in this process: their open files are among its descriptors. */
const descriptors = () => readdirSync('/proc/self/fd').length;

interface Download {
  length: number;
  body: Buffer;
  closed: boolean;
}

/**
 * GETs `path` on a kept-alive connection and stops reading after the first
 * bytes; runs `change` on the file, then reads on until the connection
 * closes, or nothing more came for `quietMs`.
 */
async function downloadChanged(port: number, path: string, change: () => void, quietMs = 1000) {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  let closed = false;
  let last = Date.now();
  socket.on('close', () => {
    closed = true;
  });
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  await new Promise<void>((first) =>
    socket.once('data', (chunk: Buffer) => {
      chunks.push(chunk);
      socket.pause();
      first();
    }),
  );
  change();
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    last = Date.now();
  });
  socket.resume();
  while (!closed && Date.now() - last < quietMs) await sleep(50);
  socket.destroy();
  const all = Buffer.concat(chunks);
  const split = all.indexOf('\r\n\r\n');
  const head = all.subarray(0, split).toString('latin1');
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1]);
  return { length, body: all.subarray(split + 4), closed } satisfies Download;
}

describe.each(EXAMPLES)('the $name example, a file changed while downloaded', (example) => {
  const app = startedForSuite(example);
  const file = (name: string) => join(app.root, 'uploads', name);

  it('that grew: exactly the bytes it had when the answer began, and the connection stays usable', async () => {
    writeFileSync(file('grows.bin'), Buffer.alloc(SIZE, 'a'));
    const before = descriptors();
    const got = await downloadChanged(app.port, '/files/uploads/grows.bin', () =>
      appendFileSync(file('grows.bin'), Buffer.alloc(1 << 20, 'b')),
    );
    expect(got.length).toBe(SIZE);
    expect(got.body.length).toBe(SIZE);
    expect(got.body.includes('b')).toBe(false);
    expect(got.closed).toBe(false);
    expect(await eventually(() => descriptors() <= before)).toBe(true);
  });

  it('that was cut shorter: the answer is cut off and the connection closed, never left waiting', async () => {
    writeFileSync(file('shrinks.bin'), Buffer.alloc(SIZE, 'a'));
    const before = descriptors();
    const got = await downloadChanged(
      app.port,
      '/files/uploads/shrinks.bin',
      () => truncateSync(file('shrinks.bin'), 1000),
      3000,
    );
    expect(got.length).toBe(SIZE);
    expect(got.body.length).toBeLessThan(SIZE);
    expect(got.closed).toBe(true);
    expect(await eventually(() => descriptors() <= before)).toBe(true);
  });
});

describe.each(EXAMPLES)('the $name example, a file emptied before a byte was sent', (example) => {
  const app = startedForSuite(example);

  it('is a 409 in JSON, as any other failure', async () => {
    writeFileSync(join(app.root, 'uploads', EMPTIED), 'gone before it was read');
    const got = await send(app.port, { path: `/files/uploads/${EMPTIED}` });
    expect(got.status).toBe(409);
    expect(got.type).toBe('application/json; charset=utf-8');
    expect(JSON.parse(got.text)).toEqual({
      statusCode: 409,
      error: 'Conflict',
      message: 'file changed while sent',
    });
  });
});
