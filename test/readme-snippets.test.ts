import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completeSnippets } from './readme-code.js';
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

// Inside the repository, so the packages resolve through its node_modules.
// Made before the first test, not on import: a run whose filter skips every
// test here runs no afterAll, and would leave the folder behind.
const dir = join(ROOT, `.readme-snippets-${randomUUID()}`);
beforeAll(() => mkdirSync(dir));
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

describe('README examples that serve files', () => {
  // A sandbox under a dot folder (`~/.local/share/…`, `/srv/.data/…`) is a
  // common place for one: the examples must serve it, not 404 every file.
  const root = join(dir, '.data', 'files');
  beforeAll(() => {
    mkdirSync(join(root, 'public'), { recursive: true });
    writeFileSync(join(root, 'public', 'a.txt'), 'hello');
  });
  const serving = READMES.flatMap((readme) =>
    completeSnippets(readme)
      .filter((code) => code.includes('res.sendFile('))
      .map((code, i) => ({ name: `${readme} #${i + 1}`, code })),
  );

  it('there are some', () => {
    expect(serving.length).toBeGreaterThan(1);
  });

  it.each(serving)('$name serves a file from a root under a dot folder', async ({ name, code }) => {
    const file = join(dir, `serve_${name.replace(/\W/g, '_')}.ts`);
    const app = code
      .replaceAll("'/srv/files'", JSON.stringify(root))
      .replace('app.listen(3000);', '');
    writeFileSync(file, `${app}\nexport { app };\n`);
    const server = ((await import(file)) as { app: Express }).app.listen(0, '127.0.0.1');
    try {
      await new Promise((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/files/public/a.txt`);
      expect([res.status, await res.text()]).toEqual([200, 'hello']);
    } finally {
      server.close();
    }
  });
});
