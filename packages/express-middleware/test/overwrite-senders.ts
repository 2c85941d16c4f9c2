import { readFileSync } from 'node:fs';
import type http from 'node:http';
import { join } from 'node:path';
import type { Express } from 'express';
import { expect } from 'vitest';
import { type Answer, readAnswer } from '../../../test/answer.js';
import { pathgate } from '../src/index.js';
import { filePart, multipart, multipartPost, type RawPart, until } from './helpers.js';

// Requests replacing one name (overwrite: true) while each is still in
// flight, shared by the tests of what a failed one puts back.

/** The name the requests replace, under `uploads`. */
export const NAME = 'report.txt';

/** POST /replace: files of field `f` stored under `uploads` with overwrite, 1000 bytes at most each. */
export function replacingRoute(root: string, app: Express): void {
  const gate = pathgate({ root, fs: ['rw:uploads/**'], log: () => {} });
  const replacing = gate.multer({
    storage: gate.diskStorage({ overwrite: true }),
    limits: { fileSize: 1000 },
  });
  app.post(
    '/replace',
    gate.write({ file: 'f', under: 'uploads' }),
    replacing.any(),
    (_req, res) => {
      res.status(201).end();
    },
  );
}

/** The text of `name` in `folder`; `undefined` when there is no file there. */
export function textAt(folder: string, name = NAME): string | undefined {
  try {
    return readFileSync(join(folder, name), 'utf8');
  } catch {
    return undefined;
  }
}

/** Over `replacingRoute`'s limit: a request ending with it fails (413) after its files are stored. */
const TOO_LARGE = filePart('f', 'too-large.txt', 'x'.repeat(5000));

/**
 * One request to `replacingRoute` whose body is sent a part at a time:
 * `store` sends its next file (all at `name` in `folder`) and waits until
 * the name holds it; `end` sends the rest, a file over the limit when it is
 * to fail; `cut` drops the connection instead.
 */
export class Sender {
  private sent = 0;
  private readonly body: Buffer;
  private readonly cuts: number[];
  private readonly req: http.ClientRequest;
  readonly answer: Promise<Answer>;

  constructor(
    private readonly to: { port: number; folder: string },
    private readonly texts: readonly string[],
    readonly fails: boolean,
    private readonly name = NAME,
  ) {
    const parts: RawPart[] = texts.map((text) => filePart('f', name, text));
    this.body = multipart(fails ? [...parts, TOO_LARGE] : parts);
    // Each cut ends a file and the delimiter after it, so busboy hands the part on.
    this.cuts = texts.map((_, i) => multipart(parts.slice(0, i + 1)).length - '--\r\n'.length);
    this.req = multipartPost(to.port, '/replace', this.body.length);
    this.answer = new Promise<Answer>((resolve, reject) => {
      this.req.on('response', (res) => readAnswer(res).then(resolve, reject));
      this.req.on('error', reject);
    });
  }

  async store(): Promise<void> {
    const from = this.sent === 0 ? 0 : (this.cuts[this.sent - 1] as number);
    const text = this.texts[this.sent] as string;
    this.req.write(this.body.subarray(from, this.cuts[this.sent]));
    this.sent++;
    expect(await until(() => textAt(this.to.folder, this.name) === text)).toBe(true);
  }

  /** Cuts the connection: the request fails with what it stored so far. */
  cut(): void {
    this.req.on('error', () => {});
    this.answer.catch(() => {});
    this.req.destroy();
  }

  async end(): Promise<void> {
    this.req.end(this.body.subarray(this.cuts[this.sent - 1]));
    expect((await this.answer).status).toBe(this.fails ? 413 : 201);
  }
}
