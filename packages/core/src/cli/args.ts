import { parseArgs } from 'node:util';
import type { FsAccessMode } from '../check-fs.js';

/** What `pathgate check` was asked, once its flags are read. */
export interface CheckCommand {
  root: string | undefined;
  rules: string[];
  policyFile: string | undefined;
  paths: string[];
  mode: FsAccessMode;
  dot: boolean;
  resolveSymlinks: boolean;
  json: boolean;
}

export const USAGE = `Usage: pathgate check [--root DIR] [--rule RULE]... [--policy FILE] [--mode read|write]
                      [--dot] [--resolve-symlinks] [--json] PATH...

Checks each PATH against a policy, as @pathgate/core's checkFs does, and prints
the decision, the reason, the canonical path and the rule that decided.

  --root DIR            sandbox root (absolute; default "/")
  --rule RULE           an allowlist rule, "[r:|rw:]<glob>"; repeat for more
  --policy FILE         JSON file: { "root": "...", "fs": ["..."], "dot": false }
                        (at most 1 MiB; --root, --rule and --dot add to or override it)
  --mode read|write     the access to check (default read)
  --dot                 let wildcards match dotfiles
  --resolve-symlinks    resolve symlinks on the real file system (resolveSymlinks)
  --json                one JSON document instead of text

Exit status: 0 when every path is allowed, 1 when any is denied, 2 on a usage
or policy error or output that could not be written, 3 on an internal error (a
bug). A PATH that begins with "-" goes after "--".
\`pathgate --help\` prints this text.`;

/** A usage problem: printed with the usage text, exit status 2. */
export class UsageError extends Error {}

const HELP_FLAGS: readonly (string | undefined)[] = ['--help', '-h'];

/** `pathgate help`, `pathgate --help`, `pathgate check --help` (before a `--`): print the usage, exit 0. */
export function wantsHelp(argv: readonly string[]): boolean {
  const [command, ...rest] = argv;
  if (command === 'help' || HELP_FLAGS.includes(command)) return true;
  if (command !== 'check') return false;
  const end = rest.indexOf('--');
  return (end === -1 ? rest : rest.slice(0, end)).some((arg) => HELP_FLAGS.includes(arg));
}

export function parseCheckArgs(argv: readonly string[]): CheckCommand {
  const [command, ...rest] = argv;
  if (command !== 'check')
    throw new UsageError(command ? `unknown command "${command}"` : 'no command');
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rest);
  } catch (error) {
    throw new UsageError(oneLine(error as NodeJS.ErrnoException));
  }
  const { values, positionals } = parsed;
  const mode = once(values.mode, 'mode') ?? 'read';
  if (mode !== 'read' && mode !== 'write')
    throw new UsageError(`--mode must be read or write, got "${mode}"`);
  if (positionals.length === 0) throw new UsageError('no PATH to check');
  return {
    root: once(values.root, 'root'),
    rules: values.rule ?? [],
    policyFile: once(values.policy, 'policy'),
    paths: positionals,
    mode,
    dot: values.dot ?? false,
    resolveSymlinks: values['resolve-symlinks'] ?? false,
    json: values.json ?? false,
  };
}

// Parsed as lists so that a repeat is seen: the last would override the others unread.
function once(values: string[] | undefined, flag: string): string | undefined {
  if (values !== undefined && values.length > 1)
    throw new UsageError(`--${flag} given more than once`);
  return values?.[0];
}

/**
 * Node breaks the hint of a flag left without its value over lines, each of which would
 * print as \u000a. That message holds only our flag names; one that quotes what the user
 * typed (an unknown option) keeps its newlines, which the printer escapes.
 */
function oneLine({ code, message }: NodeJS.ErrnoException): string {
  return code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? message.replaceAll('\n', ' ') : message;
}

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      root: { type: 'string', multiple: true },
      rule: { type: 'string', multiple: true },
      policy: { type: 'string', multiple: true },
      mode: { type: 'string', multiple: true },
      dot: { type: 'boolean' },
      'resolve-symlinks': { type: 'boolean' },
      json: { type: 'boolean' },
    },
  });
}
