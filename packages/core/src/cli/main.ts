#!/usr/bin/env node
// `pathgate check`: test a policy in a shell or a CI job before it guards a live service.
import { type CheckResult, checkFs } from '../check-fs.js';
import { parseCheckArgs, USAGE, UsageError, wantsHelp } from './args.js';
import { buildPolicy, PolicyError } from './policy-file.js';

/** One path's decision: what was asked, then checkFs's result (`path` is the canonical path). */
type Decision = { input: string } & CheckResult;

/**
 * What JSON.stringify leaves raw but a reader of lines must not see: DEL and the C1
 * controls (CSI drives a terminal); NEL, LS and PS, which end a line for
 * Unicode-aware readers (Python's splitlines) and would forge one; and the bidi
 * controls, which make a terminal or a CI log show a path's characters in an
 * order other than the checked one (`public/\u202etxt.exe` shows as `public/exe.txt`).
 */
const UNSAFE = /[\u007f-\u009f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** What a one-line message must not hold raw: UNSAFE and the C0 controls (ESC, CR, LF). */
const UNSAFE_IN_LINE = new RegExp(`[\\u0000-\\u001f${UNSAFE.source.slice(1)}`, 'g');

const escapeChar = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** JSON text with UNSAFE escaped too: they occur only inside its strings, so it parses the same. */
function safeJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(UNSAFE, escapeChar);
}

/** A JSON string with every control character and line separator escaped. */
const quote = (text: string): string => safeJson(text);

/** The path as is, or quoted when it holds what `quote` escapes: a newline in it would forge a line. */
function printable(path: string): string {
  const quoted = quote(path);
  return quoted.slice(1, -1) === path ? path : quoted;
}

function line({ input, ...result }: Decision): string {
  const verdict = result.outcome === 'allow' ? 'allow' : `deny (${result.reason})`;
  const canonical = result.path === undefined ? '' : ` -> ${printable(result.path)}`;
  const rule = result.rule === undefined ? '' : `  [rule ${quote(result.rule)}]`;
  return `${verdict.padEnd(28)} ${quote(input)}${canonical}${rule}`;
}

/**
 * Output the answer could not take (a full disk) is an exit 2 with the
 * error: a script would read the decision's status and go on with an empty
 * report. A reader that stopped reading (EPIPE: `| head -1`, `| grep -q`)
 * took what it wanted. A stream reports its first error only, once every
 * line was written: the answer is printed in one synchronous run.
 */
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') return;
  console.error(`pathgate: cannot write the output: ${error.message}`);
  process.exitCode = 2;
});

const print = (text: string): void => {
  process.stdout.write(`${text}\n`);
};

function run(argv: readonly string[]): number {
  if (wantsHelp(argv)) {
    print(USAGE);
    return 0;
  }
  const command = parseCheckArgs(argv);
  const policy = buildPolicy(command);
  const results: Decision[] = command.paths.map((input) => ({
    input,
    ...checkFs(policy, input, command.mode),
  }));
  if (command.json) {
    print(safeJson({ root: policy.root, mode: command.mode, results }, 2));
  } else {
    for (const decision of results) print(line(decision));
  }
  return results.every((r) => r.outcome === 'allow') ? 0 : 1;
}

try {
  process.exitCode = run(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError || error instanceof PolicyError) {
    // The message may quote a rule from a policy file or a flag: it must not drive a terminal or forge a line.
    console.error(`pathgate: ${error.message.replace(UNSAFE_IN_LINE, escapeChar)}`);
    if (error instanceof UsageError) console.error(`\n${USAGE}`);
    process.exitCode = 2;
  } else {
    // A bug, not a decision: uncaught, it would exit 1, which a script reads as "denied".
    console.error(`pathgate: internal error: ${(error as Error)?.stack ?? String(error)}`);
    process.exitCode = 3;
  }
}
