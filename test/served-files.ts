import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

// One table for both adapters' file-serving recipes (Express's
// res.sendFile, @fastify/static's reply.sendFile): the checked path names
// one file, and what the recipe sends must be that file, whatever its name
// holds, and never one below it. Both must give the same answers.

/** The rules: files directly in `public`, folders there included, nothing below. */
export const SERVED_RULES = ['./public/*'];

/** Files on disk, relative to the root, and what each holds. */
const FILES: Record<string, string> = {
  'public/a.txt': 'a',
  'public/a%41.txt': 'percent',
  'public/aA.txt': 'decoded',
  'public/x%2Fy.txt': 'encoded slash',
  'public/x/y.txt': 'below',
  'public/q?x.txt': 'question',
  'public/h#x.txt': 'hash',
  'public/a\\b.txt': 'backslash',
  // A folder `public/*` allows, whose index `public/*` does not.
  'public/dir/index.html': 'index',
};

/** Writes the table's files below `root`. */
export function writeServedFiles(root: string): void {
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
}

/** A request's path below the route (as sent, escapes and all), and the text it must get. */
export const SERVED: readonly (readonly [string, string])[] = [
  ['public/a.txt', 'a'],
  ['public/a%2541.txt', 'percent'],
  ['public/x%252Fy.txt', 'encoded slash'],
  ['public/q%3Fx.txt', 'question'],
  ['public/h%23x.txt', 'hash'],
];

/**
 * A name holding `\`: Express serves it; @fastify/static refuses every such
 * name (403 `FST_STATIC_FORBIDDEN_PATH`), as a Windows separator.
 */
export const BACKSLASH = ['public/a%5Cb.txt', 'backslash'] as const;

/** Requests naming the folder: the rules allow it, not its index.html, so a 404. */
export const FOLDER = ['public/dir', 'public/dir/'];
