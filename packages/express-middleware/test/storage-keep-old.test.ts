import { mkdirSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { pathgate } from '../src/index.js';
import {
  appPerFile,
  fieldPart,
  filePart,
  multipart,
  multipartPost,
  type RawPart,
  until,
  upload,
} from './helpers.js';

// overwrite: true in a request of several files, the first replacing an
// existing file and a later one failing (over the size limit, denied by
// the policy, the connection cut): the request's files are removed, and the
// file the first one replaced must come back, not go with them.

const served = appPerFile((root, app) => {
  const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
  const replacing = gate.multer({
    storage: gate.diskStorage({ overwrite: true }),
    limits: { fileSize: 1000 },
  });
  app.post('/replace', gate.write({ file: 'f', under: 'uploads' }), replacing.any(), (req, res) => {
    res.json({ files: (req.files as unknown[]).length });
  });
  // A body field checked once multer stored the files: its deny removes them all at once.
  const withField = gate.write({ file: 'f', under: 'uploads' }, { body: 'to', under: 'uploads' });
  app.post('/replace-to', withField, replacing.any(), (_req, res) => {
    res.status(201).end();
  });
});

const uploads = () => join(served.root, 'uploads');
const target = () => join(uploads(), 'report.txt');
const content = () => readFileSync(target(), 'utf8');

beforeEach(() => {
  mkdirSync(uploads(), { recursive: true });
  writeFileSync(target(), 'version 1');
  served.errors.calls.length = 0;
});
afterEach(() => rmSync(uploads(), { recursive: true, force: true }));

/** The multipart body of `first` then `rest`, split after `first` and the boundary that ends it. */
function split(first: readonly RawPart[], rest: readonly RawPart[]): [Buffer, Buffer] {
  const body = multipart([...first, ...rest]);
  const end = multipart(first).length - '--\r\n'.length;
  return [body.subarray(0, end), body.subarray(end)];
}

const holds = (name: string, text: string) => {
  try {
    return readFileSync(join(uploads(), name), 'utf8') === text;
  } catch {
    return false;
  }
};

/**
 * Posts a file for each of `stored`'s names, with its text, and waits
 * until the storage gave each its name: the rest of the body (`restBody`)
 * is the caller's to send, or the request to cut.
 */
async function firstStored(
  stored: Readonly<Record<string, string>>,
  rest: readonly RawPart[],
): Promise<{ req: http.ClientRequest; answer: Promise<Answer>; restBody: Buffer }> {
  const first = Object.entries(stored).map(([name, text]) => filePart('f', name, text));
  const [head, restBody] = split(first, rest);
  const req = multipartPost(served.port, '/replace', head.length + restBody.length);
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => readAnswer(res).then(resolve, reject));
    req.on('error', reject);
  });
  req.write(head);
  const named = () => Object.entries(stored).every(([name, text]) => holds(name, text));
  expect(await until(named)).toBe(true);
  return { req, answer, restBody };
}

const VERSION_2 = { 'report.txt': 'version 2' };

/** Sends the rest of the body once version 2 is stored; the answer. */
async function sendInTwo(rest: readonly RawPart[]) {
  const { req, answer, restBody } = await firstStored(VERSION_2, rest);
  req.end(restBody);
  return answer;
}

const onlyTheTarget = () => readdirSync(uploads()).join() === 'report.txt';
const hidden = () => readdirSync(uploads()).filter((name) => /^\.pathgate-.*\.old$/.test(name));

describe('overwrite, a later file of the request fails: the file replaced comes back', () => {
  it('a second file over the size limit: 413, version 1 at the target, nothing else', async () => {
    const answer = await sendInTwo([filePart('f', 'other.txt', 'x'.repeat(5000))]);
    expect(answer.status).toBe(413);
    expect(content()).toBe('version 1');
    expect(await until(onlyTheTarget)).toBe(true);
  });

  it('the same name twice, the second over the limit: the original comes back', async () => {
    const answer = await sendInTwo([
      filePart('f', 'report.txt', 'version 3'),
      filePart('f', 'other.txt', 'x'.repeat(5000)),
    ]);
    expect(answer.status).toBe(413);
    expect(content()).toBe('version 1');
    expect(await until(onlyTheTarget)).toBe(true);
  });

  it('the same name twice, then a body field denied: both removed at once, the original comes back', async () => {
    const answer = await upload(served.port, '/replace-to', [
      filePart('f', 'report.txt', 'version 2'),
      filePart('f', 'report.txt', 'version 3'),
      fieldPart('to', '../outside.txt'),
    ]);
    expect(answer.status).toBe(403);
    expect(await until(onlyTheTarget)).toBe(true);
    expect(content()).toBe('version 1');
  });

  it('a second file the policy denies: 403, version 1 at the target', async () => {
    const answer = await sendInTwo([filePart('f', '../outside.txt', 'x')]);
    expect(answer.status).toBe(403);
    expect(content()).toBe('version 1');
    expect(await until(onlyTheTarget)).toBe(true);
  });

  it('the connection cut after the first file: version 1 at the target', async () => {
    const { req, answer } = await firstStored(VERSION_2, [filePart('f', 'other.txt', 'x')]);
    answer.catch(() => {});
    req.destroy();
    expect(await until(() => served.errors.calls.length === 1)).toBe(true);
    expect(await until(() => content() === 'version 1' && onlyTheTarget())).toBe(true);
  });

  it('the connection cut after two files replaced two: both old ones come back', async () => {
    writeFileSync(join(uploads(), 'other.txt'), 'other 1');
    const replaced = { 'report.txt': 'version 2', 'other.txt': 'other 2' };
    const { req, answer } = await firstStored(replaced, [filePart('f', 'third.txt', 'x')]);
    answer.catch(() => {});
    req.destroy();
    expect(await until(() => served.errors.calls.length === 1)).toBe(true);
    const restored = () => holds('report.txt', 'version 1') && holds('other.txt', 'other 1');
    expect(await until(() => restored() && readdirSync(uploads()).length === 2)).toBe(true);
  });

  it('the old file gone from its hiding place: the request still fails with its own 413', async () => {
    const { req, answer, restBody } = await firstStored(VERSION_2, [
      filePart('f', 'other.txt', 'x'.repeat(5000)),
    ]);
    expect(hidden()).toHaveLength(1);
    for (const name of hidden()) unlinkSync(join(uploads(), name));
    req.end(restBody);
    expect((await answer).status).toBe(413);
    // Nothing to put back: the request's file is removed, as any failed request's.
    expect(await until(() => readdirSync(uploads()).length === 0)).toBe(true);
  });
});

describe('overwrite, the request succeeds', () => {
  it('the old file is kept while the request may fail, and goes once it succeeded', async () => {
    const sent = await firstStored(VERSION_2, [
      filePart('f', 'report.txt', 'version 3'),
      filePart('f', 'other.txt', 'other'),
    ]);
    expect(hidden()).toHaveLength(1);
    sent.req.end(sent.restBody);
    const answer = await sent.answer;
    expect([answer.status, answer.json]).toEqual([200, { files: 3 }]);
    expect(content()).toBe('version 3');
    expect(await until(() => readdirSync(uploads()).join() === 'other.txt,report.txt')).toBe(true);
  });
});

describe('overwrite, two requests replace one name in turn and both fail', () => {
  const tooLarge = [filePart('f', 'other.txt', 'x'.repeat(5000))];

  /** The first stores `first` at `name`, the second `second` over it; the first fails, then the second. */
  async function bothFail(name: string, first: string, second: string) {
    const earlier = await firstStored({ [name]: first }, tooLarge);
    const later = await firstStored({ [name]: second }, tooLarge);
    earlier.req.end(earlier.restBody);
    expect((await earlier.answer).status).toBe(413);
    later.req.end(later.restBody);
    expect((await later.answer).status).toBe(413);
  }

  it('the first to store fails first: version 1 comes back, not its file', async () => {
    await bothFail('report.txt', 'version 2', 'version 3');
    expect(await until(onlyTheTarget)).toBe(true);
    expect(content()).toBe('version 1');
  });

  it('a name that held nothing before either: nothing there after both', async () => {
    await bothFail('new.txt', 'version 2', 'version 3');
    expect(await until(onlyTheTarget)).toBe(true);
  });

  it('three in turn, the second failing first, then the first, then the third: version 1', async () => {
    const [first, second, third] = [
      await firstStored({ 'report.txt': 'version 2' }, tooLarge),
      await firstStored({ 'report.txt': 'version 3' }, tooLarge),
      await firstStored({ 'report.txt': 'version 4' }, tooLarge),
    ];
    for (const sent of [second, first, third]) {
      sent.req.end(sent.restBody);
      expect((await sent.answer).status).toBe(413);
    }
    expect(await until(onlyTheTarget)).toBe(true);
    expect(content()).toBe('version 1');
  });
});
