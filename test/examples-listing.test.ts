import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXAMPLES, send } from './examples.js';
import { startedForSuite } from './fixture.js';

// Names a listing cannot show as they are: a name that is not UTF-8 has no
// text a request could name it by, so it is left out, never shown as the
// text it decodes to (U+FFFD), which may be another file's name. Nor has a
// name that is not NFC: pathgate normalizes every path to NFC, so a request
// for it reaches its NFC twin, or nothing.

/** `name` in `dir`, as bytes: Node would write a string name as UTF-8. */
const named = (dir: string, name: Buffer) => Buffer.concat([Buffer.from(`${dir}/`), name]);

describe.each(EXAMPLES)('the $name example, listing names that are not UTF-8', (example) => {
  const app = startedForSuite(example);

  it('leaves them out, and lists the file their decoded text names once, as it is', async () => {
    const dir = join(app.root, 'uploads', 'bytes');
    mkdirSync(dir);
    writeFileSync(named(dir, Buffer.from([0xff, 0x61])), 'not UTF-8');
    writeFileSync(named(dir, Buffer.from([0x61, 0xc3])), 'cut UTF-8');
    writeFileSync(join(dir, '\ufffda'), 'U+FFFD');
    const got = await send(app.port, { path: '/api/list?dir=uploads/bytes' });
    expect(got.status).toBe(200);
    expect(JSON.parse(got.text)).toEqual({ entries: [{ name: '\ufffda', type: 'file', size: 6 }] });
  });
});

describe.each(EXAMPLES)('the $name example, listing names that are not NFC', (example) => {
  const app = startedForSuite(example);

  it('leaves them out: a request for one would reach its NFC twin, or nothing', async () => {
    const dir = join(app.root, 'uploads', 'forms');
    mkdirSync(dir);
    writeFileSync(join(dir, 'cafe\u0301.txt'), 'NFD twin');
    writeFileSync(join(dir, 'caf\u00e9.txt'), 'NFC');
    writeFileSync(join(dir, 'nai\u0308ve.txt'), 'NFD alone');
    const got = await send(app.port, { path: '/api/list?dir=uploads/forms' });
    expect(got.status).toBe(200);
    expect(JSON.parse(got.text)).toEqual({
      entries: [{ name: 'caf\u00e9.txt', type: 'file', size: 3 }],
    });
  });
});

// pathgate's rules never match a name that begins with `.` (`dot: false`,
// the default): a listing that showed one would reveal what the policy
// hides, a `.env` and its size, or an upload's temporary file as it grows.
describe.each(EXAMPLES)('the $name example, listing names that begin with a dot', (example) => {
  const app = startedForSuite(example);

  it('leaves them out, as no request can reach them', async () => {
    const dir = join(app.root, 'public', 'dots');
    mkdirSync(join(dir, '.git'), { recursive: true });
    writeFileSync(join(dir, '.env'), 'SECRET=1');
    writeFileSync(join(dir, '.upload-1.part'), 'half');
    writeFileSync(join(dir, 'shown.txt'), 'shown');
    const got = await send(app.port, { path: '/api/list?dir=public/dots' });
    expect(got.status).toBe(200);
    expect(JSON.parse(got.text)).toEqual({
      entries: [{ name: 'shown.txt', type: 'file', size: 5 }],
    });
  });
});
