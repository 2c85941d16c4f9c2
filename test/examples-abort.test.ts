import { readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EXAMPLES, postFiles, type Running, send, start } from './examples.js';
import { abandonDownload, descriptors, eventually } from './fault-clients.js';
import { idle } from './process-idle.js';

// A client that hangs up in the middle of an upload: the examples keep
// nothing of it, log nothing (an abort is no server error), and go on serving.

const BOUNDARY = 'pathgate-abort';

/** Sends a multipart head and part of a file, waits, then destroys the connection. */
function abandonUpload(port: number, filename: string): Promise<void> {
  return new Promise((done) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(
        `POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 100000\r\n\r\n` +
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n\r\n` +
          'a'.repeat(4096),
      );
      setTimeout(() => socket.destroy(), 100);
    });
    socket.on('close', () => done());
    socket.on('error', () => {});
  });
}

describe.each(EXAMPLES)('the $name example, when a client abandons an upload', (example) => {
  let app: Running | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await app?.stop();
  });

  it('logs nothing, keeps nothing, and stores the next upload of that name', async () => {
    app = await start(example);
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const before = readdirSync(join(app.root, 'uploads')).sort();
    await abandonUpload(app.port, 'abandoned.txt');
    // Nothing kept proves nothing before the server is done with the cut
    // request, and what it stored later would outlive the sandbox.
    await idle();
    expect(logged).not.toHaveBeenCalled();
    expect(readdirSync(join(app.root, 'uploads')).sort()).toEqual(before);
    const again = await send(app.port, postFiles('/api/upload', ['file', 'abandoned.txt', 'kept']));
    expect(again.status).toBe(201);
  });
});

describe.each(EXAMPLES)('the $name example, when clients abandon downloads', (example) => {
  let app: Running | undefined;
  afterEach(() => app?.stop());

  it('closes every file they opened, whenever they hang up', async () => {
    app = await start(example);
    writeFileSync(join(app.root, 'uploads', 'big.bin'), Buffer.alloc(4 << 20));
    const before = descriptors();
    for (let i = 0; i < 200; i++) await abandonDownload(app.port, '/files/uploads/big.bin', i % 4);
    expect(await eventually(() => descriptors() <= before)).toBe(true);
  });
});
