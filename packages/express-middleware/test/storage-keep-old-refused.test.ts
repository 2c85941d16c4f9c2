import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { STORAGE_CODES } from '../src/index.js';
import { appPerFile, filePart, upload } from './helpers.js';
import { replacingRoute } from './overwrite-senders.js';

// overwrite keeps the file it replaces as a hard link (`.pathgate-<uuid>.old`).
// Linux's protected_hardlinks refuses that link (EPERM) for a file of another
// user this process may not read and write, where the rename over it would
// work: such a file cannot be kept, so it is not replaced, and the client is
// told so (not a 500).
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  const refused = () =>
    Object.assign(new Error('EPERM: operation not permitted, link'), { code: 'EPERM' });
  const link: typeof fs.link = (existing, kept) =>
    String(kept).endsWith('.old') ? Promise.reject(refused()) : fs.link(existing, kept);
  return { ...fs, link };
});

const served = appPerFile(replacingRoute);

const uploads = () => join(served.root, 'uploads');

beforeEach(() => {
  mkdirSync(uploads(), { recursive: true });
  writeFileSync(join(uploads(), 'report.txt'), 'version 1');
});
afterEach(() => rmSync(uploads(), { recursive: true, force: true }));

describe('overwrite, the file to replace cannot be linked to be kept', () => {
  it('403 PATHGATE_NOT_A_FILE, naming no path; the old file stays, nothing else', async () => {
    const res = await upload(served.port, '/replace', [filePart('f', 'report.txt', 'version 2')]);
    expect([res.status, res.json]).toMatchObject([403, { code: STORAGE_CODES.NOT_A_FILE }]);
    expect(res.text).not.toContain(served.root);
    expect(readFileSync(join(uploads(), 'report.txt'), 'utf8')).toBe('version 1');
    expect(readdirSync(uploads())).toEqual(['report.txt']);
  });

  it('a new name needs no link: stored as before', async () => {
    const res = await upload(served.port, '/replace', [filePart('f', 'new.txt', 'new')]);
    expect(res.status).toBe(201);
    expect(readdirSync(uploads()).sort()).toEqual(['new.txt', 'report.txt']);
  });
});
