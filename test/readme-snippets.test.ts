import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tscErrors } from './tsc.js';

// The READMEs' complete examples (the `ts` blocks that start with an import)
// type-check under strict TypeScript, with noUncheckedIndexedAccess and
// exactOptionalPropertyTypes, against the built packages, as a user who
// pastes one gets them. Fragments (no import) are left out.

const READMES = [
  'README.md',
  'packages/core/README.md',
  'packages/fastify-plugin/README.md',
  'packages/express-middleware/README.md',
];

function completeSnippets(readme: string): string[] {
  const text = readFileSync(join(ROOT, readme), 'utf8');
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)]
    .map((match) => match[1] as string)
    .filter((code) => code.startsWith('import '));
}

// Inside the repository, so the packages resolve through its node_modules.
const dir = mkdtempSync(join(ROOT, '.readme-snippets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('README examples', () => {
  it('each README has at least one complete example, and all of them compile', () => {
    const files: string[] = [];
    for (const readme of READMES) {
      const snippets = completeSnippets(readme);
      expect(snippets.length, readme).toBeGreaterThan(0);
      snippets.forEach((code, i) => {
        const file = `${readme.replaceAll('/', '_').replace('.md', '')}_${i}.ts`;
        writeFileSync(join(dir, file), `${code}\nexport {};\n`);
        files.push(file);
      });
    }
    const config = {
      compilerOptions: {
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
      },
      files,
    };
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
    expect(tscErrors(dir)).toBe('');
  }, 60_000);
});
