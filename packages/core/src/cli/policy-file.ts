import { canonicalizeRoot } from '../canonicalize.js';
import { PermissionPolicy } from '../policy.js';
import { resolveSymlinks } from '../realpath.js';
import type { CheckCommand } from './args.js';
import { UsageError } from './args.js';
import { readCapped } from './read-capped.js';

interface PolicyFile {
  root?: unknown;
  fs?: unknown;
  dot?: unknown;
}

const KEYS = ['root', 'fs', 'dot'];

/** A policy PermissionPolicy refused: exit status 2, like a usage error, but without the usage. */
export class PolicyError extends Error {}

// A policy is a root and a few rules: 1 MiB is plenty. The cap keeps a device such as
// /dev/zero, or a huge file, from being read whole.
const CAP_MIB = 1;

// Fatal: a byte that is not UTF-8 would become U+FFFD inside a rule or the root.
// A leading byte order mark, as Windows editors write, is dropped.
const UTF8 = new TextDecoder('utf-8', { fatal: true });

function readPolicyText(file: string): string {
  let bytes: Buffer | undefined;
  try {
    bytes = readCapped(file, CAP_MIB * 1024 * 1024);
  } catch (error) {
    throw new UsageError(
      `cannot read --policy ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`,
    );
  }
  if (bytes === undefined) throw new UsageError(`--policy ${file} is larger than ${CAP_MIB} MiB`);
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new UsageError(`--policy ${file} is not UTF-8`);
  }
}

function readPolicyFile(file: string): PolicyFile {
  const text = readPolicyText(file);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--policy ${file} is not JSON: ${(error as Error).message}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new UsageError(`--policy ${file} must hold a JSON object { "root", "fs", "dot" }`);
  }
  // A key read nowhere would be a rule or a root silently left out of the check.
  const unknown = Object.keys(json).find((key) => !KEYS.includes(key));
  if (unknown !== undefined) {
    throw new UsageError(
      `--policy ${file}: unknown key "${unknown}" (the file holds "root", "fs" and "dot")`,
    );
  }
  return json as PolicyFile;
}

/**
 * The file's values as a policy takes them, checked even where a flag overrides
 * them (`--root`, `--dot`): the file is what a service loads, and must build there too.
 */
function checkFileValues(file: PolicyFile): void {
  if (file.fs !== undefined && !Array.isArray(file.fs))
    throw new UsageError('the policy file\'s "fs" must be an array of rules');
  if (file.root !== undefined && typeof file.root !== 'string')
    throw new UsageError('the policy file\'s "root" must be a string');
  // Lexically, as PermissionPolicy first does: a relative or empty root never builds.
  const root = file.root === undefined ? undefined : canonicalizeRoot(file.root, undefined);
  if (root?.ok === false)
    throw new UsageError(
      `the policy file's "root" must canonicalize to an absolute path (${root.reason})`,
    );
  if (file.dot !== undefined && typeof file.dot !== 'boolean')
    throw new UsageError('the policy file\'s "dot" must be a boolean');
}

/** Builds the policy from the file and the flags; a bad policy throws a PolicyError with PermissionPolicy's message. */
export function buildPolicy(command: CheckCommand): PermissionPolicy {
  // `--policy ""` (an unset variable) is a file that cannot be read, not an absent flag.
  const file = command.policyFile === undefined ? {} : readPolicyFile(command.policyFile);
  checkFileValues(file);
  // Each element is a rule PermissionPolicy checks (a non-string is its TypeError).
  const fileRules = (file.fs ?? []) as string[];
  try {
    return new PermissionPolicy({
      root: (command.root ?? file.root) as string | undefined,
      permissions: { fs: [...fileRules, ...command.rules] },
      dot: command.dot || (file.dot as boolean | undefined),
      resolve: command.resolveSymlinks ? resolveSymlinks : undefined,
    });
  } catch (error) {
    // Only here is a TypeError a verdict on the policy: anywhere else it is a bug (exit 3).
    if (error instanceof TypeError) throw new PolicyError(error.message);
    throw error;
  }
}
