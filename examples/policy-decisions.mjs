// The core API alone (npm run example:core): build a policy once, then ask it
// about a few paths a client might send, as a route handler would.
import { checkFs, PermissionPolicy } from '@pathgate/core';

const policy = new PermissionPolicy({
  root: '/srv/files',
  permissions: { fs: ['./public/**', 'rw:./uploads/*'] },
});

const requests = [
  ['public/docs/readme.txt', 'read'],
  ['uploads/avatar.png', 'write'],
  ['public/index.html', 'write'],
  ['../../etc/passwd', 'read'],
  ['uploads/../../etc/passwd', 'read'],
  ['%2e%2e/%2e%2e/etc/passwd', 'read'],
  ['public/.env', 'read'],
  ['uploads/a\u0000.png', 'write'],
];

console.log(`policy: root ${policy.root}, rules ${policy.rules.join(', ')}\n`);
for (const [path, mode] of requests) {
  const result = checkFs(policy, path, mode);
  const verdict = result.outcome === 'allow' ? 'allow' : `deny  (${result.reason})`;
  const where = result.path ? ` -> ${result.path}` : '';
  const rule = result.rule ? `  [rule ${result.rule}]` : '';
  console.log(`${mode.padEnd(5)} ${JSON.stringify(path).padEnd(30)} ${verdict}${where}${rule}`);
}
