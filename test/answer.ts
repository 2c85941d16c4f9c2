import type http from 'node:http';
import type { GuardDenyReason } from '@pathgate/core';

// Shared by the adapters' test helpers and the cross-package tests: what a
// raw node:http client reads back, and the 403 body pathgate must send.

/** An answer read whole: status, headers, text, and the JSON when the text parses. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: unknown;
}

/** The JSON a text holds, or undefined when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function readAnswer(res: http.IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('error', reject);
    res.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: parseJson(text) });
    });
  });
}

/** The 403 body pathgate sends, written out by hand: Fastify's error shape plus the reason. */
export function forbidden(reason: string, label: string): object {
  return {
    statusCode: 403,
    code: 'PATHGATE_DENIED',
    error: 'Forbidden',
    message: `${label}: path denied (${reason})`,
    reason,
  };
}

/** Each deny reason once: tsc refuses a key GuardDenyReason lacks, and a reason left out. */
export const REASONS = Object.keys({
  'not-a-string': true,
  'nul-byte': true,
  'invalid-unicode': true,
  'relative-root': true,
  'resolve-failed': true,
  'path-not-in-allowlist': true,
  'mode-not-permitted': true,
  'missing-path': true,
  'unexpected-file': true,
  'path-too-long': true,
} satisfies Record<GuardDenyReason, true>) as GuardDenyReason[];
