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

/**
 * Names no request reaches, left out of a listing: one not NFC (pathgate
 * normalizes every path to NFC, so a request for it reaches its NFC twin,
 * or nothing), and one beginning with `.` (the rules never match it, as
 * `dot` is off: a listing would reveal what the policy hides, a `.env` and
 * its size, or an upload's temporary file as it grows).
 */
const UNREACHABLE = [
  {
    what: 'not NFC',
    dir: 'uploads/forms',
    folders: [],
    files: { 'cafe\u0301.txt': 'NFD twin', 'caf\u00e9.txt': 'NFC', 'nai\u0308ve.txt': 'NFD alone' },
    shown: { name: 'caf\u00e9.txt', type: 'file', size: 3 },
  },
  {
    what: 'beginning with a dot',
    dir: 'public/dots',
    folders: ['.git'],
    files: { '.env': 'SECRET=1', '.upload-1.part': 'half', 'shown.txt': 'shown' },
    shown: { name: 'shown.txt', type: 'file', size: 5 },
  },
];

describe.each(EXAMPLES)('the $name example, listing names no request reaches', (example) => {
  const app = startedForSuite(example);

  it.each(UNREACHABLE)('leaves out names $what', async ({ dir, folders, files, shown }) => {
    const folder = join(app.root, dir);
    mkdirSync(folder, { recursive: true });
    for (const name of folders) mkdirSync(join(folder, name));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(folder, name), text);
    const got = await send(app.port, { path: `/api/list?dir=${dir}` });
    expect(got.status).toBe(200);
    expect(JSON.parse(got.text)).toEqual({ entries: [shown] });
  });
});
