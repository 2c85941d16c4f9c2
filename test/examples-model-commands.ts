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
export function observed(got: Got): Observed {
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

/** One request, and the answer the model gives it. */
export interface Step {
  operation: string;
  label: string;
  sent: Sent;
  modelled: (model: SandboxModel) => Observed;
  /** What it does to the model before its answer, if anything: the folders it makes ahead (a move, an upload). */
  ahead?: (model: SandboxModel) => string[];
  /** A move's `ahead` with its link to the new name made too (serial-orders.ts). */
  linked?: (model: SandboxModel) => string[];
  apart?: Apart;
}

/** One request: sent to both servers, their answers compared with each other and with the model's. */
class Call implements fc.AsyncCommand<SandboxModel, ServedPair> {
  constructor(private readonly step: Step) {}

  check(): boolean {
    return true;
  }

  async run(model: SandboxModel, pair: ServedPair): Promise<void> {
    const { operation, sent, modelled, apart } = this.step;
    const [first, ...others] = await pair.send(sent);
    if (first === undefined) throw new Error('no server');
    const exact = ({ got }: { got: Got }) => ({
      status: got.status,
      type: got.type,
      text: got.text,
    });
    for (const other of others) {
      if (other.name === apart?.example) {
        expect(observed(other.got), `${other.name}, as its README says`).toEqual(apart.answer);
      } else {
        expect(exact(other), `${other.name} answers as ${first.name}`).toEqual(exact(first));
      }
    }
    expect(observed(first.got), 'the answer').toEqual(modelled(model));
    reached.add(`${operation} ${first.got.status} ${outcome(first.got)}`.trim());
  }

  toString(): string {
    return `${this.step.operation} ${this.step.label}`;
  }
}

/** The names and upload contents the commands draw from. */
export interface Pools {
  /** A path from the sandbox root: a listing's, a download's, a delete's, a move's target. */
  root: fc.Arbitrary<string>;
  /** A move's source. */
  source: fc.Arbitrary<string>;
  /** An upload's filename. */
  upload: fc.Arbitrary<string>;
  content: fc.Arbitrary<string>;
}

/** A step on a name sent in the URL (`sent`), escaped in each way. */
const byUrl = (
  names: fc.Arbitrary<string>,
  operation: string,
  sent: (name: string, how: Escaping) => Sent,
  modelled: (model: SandboxModel, name: string) => Observed,
) =>
  fc.tuple(names, escaping).map(
    ([name, how]): Step => ({
      operation,
      label: `${shown(name)} (${how})`,
      sent: sent(name, how),
      modelled: (model) => modelled(model, name),
    }),
  );

/** One arbitrary step per API operation, drawing from `pools`. */
export const steps = (pools: Pools): fc.Arbitrary<Step>[] => [
  byUrl(
    pools.root,
    'list',
    (dir, how) => ({ path: `/api/list?dir=${inQuery(dir, how)}` }),
    (model, dir) => model.list(dir),
  ),
  byUrl(
    pools.root,
    'download',
    (path, how) => ({ path: `/files/${inPath(path, how)}` }),
    (model, path) => model.download(path),
  ),
  byUrl(
    pools.root,
    'delete',
    (path, how) => ({ method: 'DELETE', path: `/files/${inPath(path, how)}` }),
    (model, path) => model.remove(path),
  ),
  fc.tuple(pools.source, pools.root).map(
    ([from, to]): Step => ({
      operation: 'move',
      label: `${shown(from)} to ${shown(to)}`,
      sent: postJson('/api/move', JSON.stringify({ from, to })),
      modelled: (model) => model.move(from, to),
      ahead: (model) => model.moveAhead(from, to),
      linked: (model) => model.moveLinked(from, to),
    }),
  ),
  fc.tuple(pools.upload, pools.content).map(
    ([name, content]): Step => ({
      operation: 'upload',
      label: `${shown(name)} holding ${shown(content)}`,
      sent: postFiles('/api/upload', ['file', name, content]),
      modelled: (model) => model.upload(name, content),
      ahead: (model) => model.uploadAhead(name),
      ...(name.includes('\0') ? { apart: NUL_IN_FILENAME } : {}),
    }),
  ),
];

export const COMMANDS = steps({
  root: rootName,
  source: sourceName,
  upload: uploadName,
  content: fc.string({ maxLength: 12 }),
}).map((step) => step.map((made) => new Call(made)));
