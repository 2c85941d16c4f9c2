// The example's sandbox root: a real folder given by --root or PATHGATE_ROOT,
// or else a fresh one under the OS temp dir, seeded so the app runs with no set-up.
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** The allowlist of both examples: public/ read-only, uploads/ read-write, nothing else. */
export const RULES = ['./public/**', 'rw:./uploads/**'];

/** The folder uploads go to (the `under` of both upload routes), the one `rw:` of `RULES`. */
export const UPLOAD_FOLDER = 'uploads';

/**
 * Both examples' upload limits: a file of 10 MB at most, one file, and 1,000
 * parts in all. @fastify/multipart caps parts at 1,000 by default, multer
 * never: written out, a body of 20,000 fields is a 413 in both.
 */
export const UPLOAD_LIMITS = { fileSize: 10 * 1024 * 1024, files: 1, parts: 1000 };

const SEED: Record<string, string> = {
  'public/readme.txt': 'Files in public/ can be read, never written.\n',
  'public/docs/guide.md': '# Guide\n\nAnything below public/ is readable.\n',
  'uploads/hello.txt': 'uploads/ can be read and written.\n',
  'secret.txt': 'Not in the allowlist: pathgate never lets a request reach this file.\n',
};

/** The value of `--name value` or `--name=value`; a flag given without a value is an error. */
function option(argv: readonly string[], name: string): string | undefined {
  const flag = `--${name}`;
  for (const [i, arg] of argv.entries()) {
    if (arg.startsWith(`${flag}=`)) return arg.slice(flag.length + 1);
    if (arg !== flag) continue;
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a value`);
    return value;
  }
  return undefined;
}

/** Writes the seed files (public/, uploads/ and a secret.txt outside the allowlist) into `root`. */
export function seedSandbox(root: string): void {
  for (const [file, text] of Object.entries(SEED)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), text);
  }
}

/**
 * A fresh, seeded sandbox under the OS temp dir, as a real path (no symlink in it).
 * Should seeding it fail (a full disk), it is removed: nothing else would.
 */
export function createSandbox(): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'pathgate-example-')));
  try {
    seedSandbox(root);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`the sandbox ${root} could not be seeded: ${(error as Error).message}`);
  }
  return root;
}

/**
 * The folder named by `--root` or PATHGATE_ROOT, as a real path, or `undefined`
 * when neither is set. A name that is not an existing folder is an error.
 */
export function givenRoot(argv = process.argv, env = process.env): string | undefined {
  const fromArgv = option(argv, 'root');
  const given = fromArgv ?? (env.PATHGATE_ROOT || undefined);
  if (given === undefined) return undefined;
  const where = fromArgv === undefined ? 'PATHGATE_ROOT' : '--root';
  let real: string;
  try {
    real = realpathSync(resolve(given));
  } catch {
    throw new Error(`${where}: no such folder: ${given}`);
  }
  if (!statSync(real).isDirectory()) throw new Error(`${where}: not a folder: ${given}`);
  return real;
}

/** `--port`, or PORT, or 3000; `0` picks a free port (the tests use it). */
export function listenPort(argv = process.argv, env = process.env): number {
  const text = option(argv, 'port') ?? (env.PORT || undefined);
  if (text === undefined) return 3000;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) {
    throw new Error(`port must be an integer from 0 to 65535, not ${JSON.stringify(text)}`);
  }
  return port;
}
