import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type * as fsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { appPerFile, filePart, multipart, multipartPost, until, upload } from './helpers.js';
import { NAME, replacingRoute } from './overwrite-senders.js';

// overwrite: true, one request gives the name its file: it links the file
// there to a hidden name (kept, to put back), then renames its own over it.
// Between the two the name's file has two links, which `checkReplaceable`
// refuses (a hard link the app may think unchanged). Another request
// checking the name then (before its body, or once it arrived) was refused
// a 403 for a file that is only ever the first request's own keeping.

const naming = await vi.hoisted(async () => (await import('./held-step.js')).heldStep());
vi.mock('node:fs/promises', async (importOriginal) => {
  const fs = await importOriginal<typeof fsPromises>();
  /** The first store's rename onto the name, once armed: held until `go`, its old file kept. */
  const rename: typeof fs.rename = async (from, to) => {
    if (
      String(from).endsWith('.part') &&
      String(to).endsWith(`/${NAME}`) &&
      !naming.state.waiting
    ) {
      naming.state.waiting = true;
      await naming.state.gate;
    }
    return fs.rename(from, to);
  };
  return { ...fs, rename };
});

const served = appPerFile(replacingRoute);
const uploads = () => join(served.root, 'uploads');

beforeEach(() => {
  mkdirSync(uploads(), { recursive: true });
  writeFileSync(join(uploads(), NAME), 'version 1');
});
afterEach(() => {
  naming.state.go();
  rmSync(uploads(), { recursive: true, force: true });
});

/** A request replacing NAME whose body is sent but for its last `held` bytes, then the rest on `finish`. */
function sendHeld(text: string, held: number) {
  const body = multipart([filePart('f', NAME, text)]);
  const req = multipartPost(served.port, '/replace', body.length);
  const answer = new Promise<Answer>((resolve, reject) => {
    req.on('response', (res) => readAnswer(res).then(resolve, reject));
    req.on('error', reject);
  });
  req.write(body.subarray(0, body.length - held));
  return { answer, finish: () => req.end(body.subarray(body.length - held)) };
}

describe('overwrite, another request checks the name while one keeps its old file', () => {
  it.each([
    ['before its body', false],
    ['once its body arrived', true],
  ])('%s: it waits, answers 201, and the name holds its file', async (_label, bodyFirst) => {
    // Its part begun, not ended: its name checked, its body waiting.
    const second = bodyFirst ? sendHeld('version 3', 20) : undefined;
    const writing = () => readdirSync(uploads()).some((name) => name.endsWith('.part'));
    if (second) expect(await until(writing)).toBe(true);
    naming.hold();
    const first = upload(served.port, '/replace', [filePart('f', NAME, 'version 2')]);
    expect(await until(() => naming.state.waiting)).toBe(true);
    let answered: Answer | undefined;
    const other = second ?? sendHeld('version 3', 0);
    other.finish();
    void other.answer.then((a) => {
      answered = a;
    });
    // Refused at once, or waiting for the first request's store.
    await until(() => answered !== undefined, 500);
    naming.state.go();
    expect((await first).status).toBe(201);
    expect((await other.answer).status).toBe(201);
    expect(await until(() => readdirSync(uploads()).join() === NAME)).toBe(true);
    expect(readFileSync(join(uploads(), NAME), 'utf8')).toBe('version 3');
  });
});
