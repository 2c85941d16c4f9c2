import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './tsc.js';

/** A README's complete examples: its `ts` blocks that start with an import (fragments are left out). */
export function completeSnippets(readme: string): string[] {
  const text = readFileSync(join(ROOT, readme), 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((match) => match[1] as string)
    .filter((code) => code.startsWith('import '));
}
