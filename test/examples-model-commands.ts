// The commands of the stateful test of the examples (examples-model.test.ts):
// one per API operation, each sent to both servers, which must answer alike,
// and as the model says.
import fc from 'fast-check';
import { expect } from 'vitest';
import { type Got, postFiles, postJson, type Sent } from './examples.js';
import { failed, type Observed, type SandboxModel } from './examples-model.js';
import type { ServedPair } from './examples-model-apps.js';
import {
  type Escaping,
  escaping,
  inPath,
  inQuery,
  rootName,
  shown,
  sourceName,
  uploadName,
} from './examples-model-names.js';

/** Each operation, status and reason or message answered so far (`upload 409 already exists`): what the runs reached. */
export const reached = new Set<string>();

/** An answer as the model gives it: the media type without its parameters, JSON parsed. */
function observed(got: Got): Observed {
  const type = got.type.split(';')[0] ?? '';
  const body = type === 'application/json' ? JSON.parse(got.text) : got.text;
  return { status: got.status, type, body };
}

/** What a JSON answer says went wrong: a deny's reason or an error's message. */
function outcome(got: Got): string {
  const { body } = observed(got);
  if (typeof body !== 'object' || body === null) return '';
  const { reason, message } = body as { reason?: unknown; message?: unknown };
  return String(reason ?? (got.status >= 400 ? message : ''));
}

/** An example's own answer where its README documents it differs from the other's. */
interface Apart {
  example: string;
  answer: Observed;
}

/**
 * A raw NUL in an upload's filename: multer's busboy refuses the part
 * header (the Express README), where Fastify's hands it to pathgate.
 */
const NUL_IN_FILENAME: Apart = { example: 'express', answer: failed(400, 'bad request') };

/** One request: sent to both servers, their answers compared with each other and with the model's. */
class Call implements fc.AsyncCommand<SandboxModel, ServedPair> {
  constructor(
    private readonly operation: string,
    private readonly label: string,
    private readonly sent: Sent,
    private readonly modelled: (model: SandboxModel) => Observed,
    private readonly apart?: Apart,
  ) {}

  check(): boolean {
    return true;
  }

  async run(model: SandboxModel, pair: ServedPair): Promise<void> {
    const [first, ...others] = await pair.send(this.sent);
    if (first === undefined) throw new Error('no server');
    const exact = ({ got }: { got: Got }) => ({
      status: got.status,
      type: got.type,
      text: got.text,
    });
    for (const other of others) {
      if (other.name === this.apart?.example) {
        expect(observed(other.got), `${other.name}, as its README says`).toEqual(this.apart.answer);
      } else {
        expect(exact(other), `${other.name} answers as ${first.name}`).toEqual(exact(first));
      }
    }
    expect(observed(first.got), 'the answer').toEqual(this.modelled(model));
    reached.add(`${this.operation} ${first.got.status} ${outcome(first.got)}`.trim());
  }

  toString(): string {
    return `${this.operation} ${this.label}`;
  }
}

const text = fc.string({ maxLength: 12 });

/** A command on a name sent in the URL (`sent`), escaped in each way. */
const byUrl = (
  operation: string,
  sent: (name: string, how: Escaping) => Sent,
  modelled: (model: SandboxModel, name: string) => Observed,
) =>
  fc
    .tuple(rootName, escaping)
    .map(
      ([name, how]) =>
        new Call(operation, `${shown(name)} (${how})`, sent(name, how), (model) =>
          modelled(model, name),
        ),
    );

export const COMMANDS = [
  byUrl(
    'list',
    (dir, how) => ({ path: `/api/list?dir=${inQuery(dir, how)}` }),
    (model, dir) => model.list(dir),
  ),
  byUrl(
    'download',
    (path, how) => ({ path: `/files/${inPath(path, how)}` }),
    (model, path) => model.download(path),
  ),
  byUrl(
    'delete',
    (path, how) => ({ method: 'DELETE', path: `/files/${inPath(path, how)}` }),
    (model, path) => model.remove(path),
  ),
  fc
    .tuple(sourceName, rootName)
    .map(
      ([from, to]) =>
        new Call(
          'move',
          `${shown(from)} to ${shown(to)}`,
          postJson('/api/move', JSON.stringify({ from, to })),
          (model) => model.move(from, to),
        ),
    ),
  fc
    .tuple(uploadName, text)
    .map(
      ([name, content]) =>
        new Call(
          'upload',
          `${shown(name)} holding ${JSON.stringify(content)}`,
          postFiles('/api/upload', ['file', name, content]),
          (model) => model.upload(name, content),
          name.includes('\0') ? NUL_IN_FILENAME : undefined,
        ),
    ),
];
