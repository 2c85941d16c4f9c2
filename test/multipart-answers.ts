// What the multipart mutation test (multipart-mutations.test.ts) accepts as
// an upload's answer: no exact model, only the shapes each server documents.
import { STATUS_CODES } from 'node:http';
import { checkFs, denyBody, isInside } from '@pathgate/core';
import { REASONS } from './answer.js';
import { policy, ROOT } from './attack-corpus.js';
import type { RawExchange, RawResponse } from './raw-http.js';

/** The messages of the examples' errors an upload can meet (examples/shared: files.ts, replies.ts). */
const UPLOAD_MESSAGES = new Set([
  'bad request',
  'no file',
  'name too long',
  'too deep',
  'not a file',
  'already exists',
  'a parent is not a folder',
  'file too large',
  'payload too large',
  'one file per upload',
  'unsupported media type',
]);

const isObject = (json: unknown): json is Record<string, unknown> =>
  typeof json === 'object' && json !== null;

/** A pathgate deny body: a known reason, and the body `denyBody` makes of it and its label. */
function documentedDeny(json: Record<string, unknown>, labels: readonly string[]): boolean {
  const reason = REASONS.find((known) => known === json.reason);
  const label = labels.find((known) => json.message === `${known}: path denied (${reason})`);
  if (reason === undefined || label === undefined) return false;
  return JSON.stringify(json) === JSON.stringify(denyBody({ reason, label }));
}

/** The one final answer `server` gave in an exchange; else an error saying what came instead. */
export function onlyAnswer(server: string, got: RawExchange): RawResponse {
  const finals = got.responses.filter((r) => r.status >= 200);
  const [answer] = finals;
  if (answer !== undefined && finals.length === 1) return answer;
  const how = `closed: ${got.closed}, error: ${got.error}, rest: ${JSON.stringify(got.rest.slice(0, 200))}`;
  throw new Error(`${server}: ${finals.length} answers (${how})`);
}

/** What an example's upload answer breaks of what it documents: none, or each problem. */
export function exampleProblems(status: number, json: unknown, text: string): string[] {
  if (text.includes('pathgate-model-')) return [`${status} names the sandbox: ${text}`];
  if (!isObject(json)) return [`${status} is not JSON: ${text.slice(0, 200)}`];
  if (status === 201) {
    const { uploaded, size } = json;
    const ok = typeof uploaded === 'string' && uploaded.startsWith('uploads/');
    return ok && Number.isInteger(size) ? [] : [`201 says ${text}`];
  }
  if (status === 403 && documentedDeny(json, ['file file', 'file'])) return [];
  const plain = status >= 400 && status < 500 && json.statusCode === status;
  const error = json.error === STATUS_CODES[status];
  const message = String(json.message);
  const known = UPLOAD_MESSAGES.has(message) || message === STATUS_CODES[status]?.toLowerCase();
  return plain && error && known && Object.keys(json).length === 3 ? [] : [`${status}: ${text}`];
}

/**
 * What an adapter's answer (test/apps.ts, route `/upload` of the attack
 * corpus) breaks: a 200 with paths inside the root the policy allows, a
 * deny body, or a framework's 4xx in JSON with its status.
 */
export function adapterProblems(status: number, json: unknown, text: string): string[] {
  if (!isObject(json)) return [`${status} is not JSON: ${text.slice(0, 200)}`];
  if (status === 200) {
    const files = isObject(json.pathgate) ? json.pathgate.files : undefined;
    const paths = Array.isArray(files) ? files.map((file) => file?.path) : [];
    const allowed = (path: unknown) =>
      typeof path === 'string' &&
      isInside(path, ROOT) &&
      checkFs(policy, path, 'write').outcome === 'allow';
    return paths.length > 0 && paths.every(allowed) ? [] : [`200 hands over ${text}`];
  }
  if (status === 403) return documentedDeny(json, ['file upload', 'file']) ? [] : [`403: ${text}`];
  return status >= 400 && status < 500 && json.statusCode === status ? [] : [`${status}: ${text}`];
}
