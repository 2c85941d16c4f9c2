import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The README's examples state their results in comments; run them and compare,
// so the package's own reference cannot drift from the code. A line
// `expr; // → value` must give `value` (deep equality); a line
// `expr; // throws TypeError: message` must throw exactly that. Only the
// complete examples (a `ts` block that starts with an import) holding such a
// line are run; test/readme-snippets.test.ts type-checks every complete one.

const README = new URL('../README.md', import.meta.url);
const RESULT = /^(.+?);\s*\/\/ → (.+)$/;
const THROWS = /^(.+?);\s*\/\/ throws (\w+): (.+)$/;

interface Example {
  line: number;
  code: string;
  checks: number;
}

function examples(): Example[] {
  const text = readFileSync(README, 'utf8');
  const found: Example[] = [];
  for (const match of text.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const body = match[1] as string;
    if (!body.startsWith('import ')) continue;
    const first = text.slice(0, match.index).split('\n').length + 1;
    let checks = 0;
    const code = body
      .split('\n')
      .map((source, i) => {
        const at = first + i;
        const thrown = THROWS.exec(source);
        if (thrown) {
          checks++;
          const [, expr, type, message] = thrown;
          return `__readme.throws(${at}, () => { ${expr}; }, ${type}, ${JSON.stringify(message)});`;
        }
        const result = RESULT.exec(source);
        if (!result) return source;
        checks++;
        return `__readme.equal(${at}, () => (${result[1]}), ${result[2]});`;
      })
      .join('\n');
    if (checks > 0) found.push({ line: first, code, checks });
  }
  return found;
}

const hooks = {
  equal(line: number, run: () => unknown, expected: unknown) {
    expect(run(), `README.md line ${line}`).toStrictEqual(expected);
  },
  throws(line: number, run: () => unknown, type: new () => Error, message: string) {
    let thrown: unknown;
    try {
      run();
    } catch (error) {
      thrown = error;
    }
    expect(thrown, `README.md line ${line}`).toBeInstanceOf(type);
    expect((thrown as Error).message, `README.md line ${line}`).toBe(message);
  },
};

const dir = mkdtempSync(join(tmpdir(), 'pathgate-core-readme-'));
let runs = 0;
afterAll(() => {
  delete (globalThis as { __readme?: unknown }).__readme;
  rmSync(dir, { recursive: true, force: true });
});

describe('packages/core/README.md examples', () => {
  const list = examples();

  it('has examples that state their results', () => {
    expect(list.reduce((sum, example) => sum + example.checks, 0)).toBeGreaterThan(20);
  });

  for (const { line, code } of list) {
    it(`the example at line ${line} gives the results its comments state`, async () => {
      (globalThis as { __readme?: unknown }).__readme = hooks;
      // A new file each run: a re-run in the same process (Stryker) must not get a cached module.
      const file = join(dir, `example-${line}-${++runs}.ts`);
      writeFileSync(file, `declare const __readme: any;\n${code}`);
      await import(pathToFileURL(file).href);
    });
  }
});
