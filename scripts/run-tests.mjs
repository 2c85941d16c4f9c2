// Runs vitest once and ends with a plain `N passed, N failed` line computed
// from vitest's JSON report, which CI reads (vitest's own summary is styled).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'pathgate-vitest-'));
const report = join(dir, 'results.json');
const run = spawnSync(
  'npx',
  [
    'vitest',
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile=${report}`,
    ...process.argv.slice(2),
  ],
  { stdio: 'inherit' },
);

let summary;
try {
  summary = JSON.parse(readFileSync(report, 'utf8'));
} catch {
  summary = undefined;
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (!summary) {
  console.log('0 passed, 1 failed');
  console.error('vitest wrote no report: it crashed before running the tests');
  process.exit(run.status || 1);
}
const skipped = summary.numPendingTests + summary.numTodoTests;
// A hook or an import that throws fails its file with no test failed: said
// here too, or the line would read `0 failed` under a failed run.
const outside = summary.testResults.filter(
  (file) => file.status === 'failed' && !file.assertionResults.some((t) => t.status === 'failed'),
);
for (const file of outside) {
  console.error(
    `${relative(process.cwd(), file.name)} failed outside its tests (a hook or an import)`,
  );
}
const tail =
  (skipped > 0 ? `, ${skipped} skipped` : '') +
  (outside.length > 0 ? `, ${outside.length} file(s) failed outside their tests` : '');
console.log(`${summary.numPassedTests} passed, ${summary.numFailedTests} failed${tail}`);
const failed = summary.numFailedTests > 0 || summary.numFailedTestSuites > 0 || run.status !== 0;
process.exit(failed ? run.status || 1 : 0);
