import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root: projects compiled inside it resolve the packages through its node_modules. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Compiles the TypeScript project `project` (a folder or a tsconfig) with the repository's tsc; its errors, or ''. */
export function tscErrors(project: string): string {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', project], { encoding: 'utf8' });
    return '';
  } catch (error) {
    return String((error as { stdout?: string }).stdout ?? error);
  }
}
