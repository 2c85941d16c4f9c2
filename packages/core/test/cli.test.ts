import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The real bin, as built (`npm run build` runs before the tests).
const BIN = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

/** Runs a command; a run that would not end by itself is killed, and shows as a `signal`. */
function spawnBin(command: string, args: string[]) {
  const run = spawnSync(command, args, { encoding: 'utf8', timeout: 10_000 });
  return { status: run.status, signal: run.signal, stdout: run.stdout, stderr: run.stderr };
}

function pathgate(...args: string[]) {
  return spawnBin(process.execPath, [BIN, ...args]);
}

/** The bin with `file` on its stdin through a real pipe: Node's stdio 'pipe' is a socket, which /dev/stdin cannot open. */
function pathgatePiped(file: string, ...args: string[]) {
  return spawnBin('sh', ['-c', 'cat "$0" | "$@"', file, process.execPath, BIN, ...args]);
}

const MIB = 1024 * 1024;

/** A valid policy of exactly `size` bytes: JSON padded with spaces. */
function paddedPolicy(size: number): string {
  const json = JSON.stringify({ fs: ['./a/*'] });
  return json + ' '.repeat(size - json.length);
}

const RULES = ['--root', '/srv/files', '--rule', './public/**', '--rule', 'rw:./uploads/*'];

/** Bidi controls, each of them: a right-to-left override shows `public/\u202etxt.exe` as `public/exe.txt`. */
const BIDI = [
  'public/\u202etxt.exe',
  'public/\u2066a\u2069',
  'public/\u200fb\u061c',
  'public/\u200ec\u202ad\u202be\u202cf\u202dg\u2067h\u2068i',
];

/** What must not reach the output raw: DEL, C1, NEL, LS, PS and the bidi controls. */
const RAW_UNSAFE = /[\u007f-\u009f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('pathgate check (the built bin)', () => {
  let dir: string;
  beforeAll(() => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`npm run build\` first`);
    dir = mkdtempSync(join(tmpdir(), 'pathgate-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // A preloaded module breaks the output step, as a bug in the tool would. Exit 3, never 1:
  // a script that expects a deny must not pass on a crash; and only a bad policy or usage is 2.
  it.each([
    [
      'an unexpected error',
      "new RangeError('broken output')",
      /^pathgate: internal error: RangeError: broken output\n {4}at /,
    ],
    [
      'a TypeError from a bug',
      "new TypeError('broken output')",
      /^pathgate: internal error: TypeError: broken output\n {4}at /,
    ],
    [
      'a thrown value that is not an Error',
      "'broken output'",
      /^pathgate: internal error: broken output\n$/,
    ],
  ])('%s is exit 3, and named', (name, thrown, stderr) => {
    const breaker = join(dir, `breaker-${name.replaceAll(' ', '-')}.mjs`);
    writeFileSync(breaker, `process.stdout.write = () => { throw ${thrown}; };\n`);
    const run = spawnSync(
      process.execPath,
      ['--import', breaker, BIN, 'check', ...RULES, '../etc/passwd'],
      { encoding: 'utf8' },
    );
    expect(run.status).toBe(3);
    expect(run.stderr).toMatch(stderr);
  });

  it('prints each decision with reason, canonical path and rule; exits 0 when all are allowed', () => {
    const run = pathgate('check', ...RULES, 'public/a.txt', 'uploads/x.png');
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n')).toEqual([
      'allow                        "public/a.txt" -> /srv/files/public/a.txt  [rule "./public/**"]',
      'allow                        "uploads/x.png" -> /srv/files/uploads/x.png  [rule "rw:./uploads/*"]',
      '',
    ]);
  });

  it('exits 1 when any path is denied, and says why', () => {
    const run = pathgate('check', ...RULES, '--mode', 'write', 'public/a.txt', '../../etc/passwd');
    expect(run.status).toBe(1);
    expect(run.stdout).toContain(
      'deny (mode-not-permitted)    "public/a.txt" -> /srv/files/public/a.txt',
    );
    expect(run.stdout).toContain('deny (path-not-in-allowlist) "../../etc/passwd" -> /etc/passwd');
  });

  it('prints one line per PATH: a canonical path that needs escaping is JSON-quoted', () => {
    const q = JSON.stringify;
    // A newline would start a line of its own, forged by whoever chose the path.
    const forged = 'public/x\nallow                        "y" -> /srv/files/public/y';
    const escaped = ['public/a\\"b\r', 'public/\u001b[2Kc'];
    const run = pathgate('check', ...RULES, forged, ...escaped);
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n')).toEqual([
      ...[forged, ...escaped].map(
        (input) =>
          `allow                        ${q(input)} -> ${q(`/srv/files/${input}`)}  [rule "./public/**"]`,
      ),
      '',
    ]);
  });

  it('escapes the other control characters and line separators too: U+007F-U+009F, U+2028, U+2029, bidi', () => {
    // NEL, LS and PS end a line for Unicode-aware readers (Python's splitlines); DEL and
    // the C1 controls (CSI is U+009B) drive terminals; bidi controls reorder what a
    // reader sees. None may reach the output raw.
    const inputs = [
      'public/a\u0085allow',
      'public/b\u2028c',
      'public/d\u2029e',
      'public/f\u007f',
      'public/\u009b2Kg',
      ...BIDI,
    ];
    const run = pathgate('check', ...RULES, ...inputs);
    expect(run.status).toBe(0);
    expect(run.stdout).not.toMatch(RAW_UNSAFE);
    const lines = run.stdout.split('\n');
    expect(lines).toHaveLength(inputs.length + 1);
    inputs.forEach((input, i) => {
      const [, shown, canonical] =
        /^allow +("(?:[^"\\]|\\.)*") -> ("(?:[^"\\]|\\.)*") {2}\[rule "\.\/public\/\*\*"\]$/.exec(
          lines[i] as string,
        ) ?? [];
      expect(JSON.parse(shown as string)).toBe(input);
      expect(JSON.parse(canonical as string)).toBe(`/srv/files/${input}`);
    });
  });

  it('--json prints one document with the contract fields', () => {
    const run = pathgate('check', ...RULES, '--json', 'uploads/a.png', 'public/.env');
    expect(run.status).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      root: '/srv/files',
      mode: 'read',
      results: [
        {
          input: 'uploads/a.png',
          outcome: 'allow',
          path: '/srv/files/uploads/a.png',
          rule: 'rw:./uploads/*',
        },
        {
          input: 'public/.env',
          outcome: 'deny',
          reason: 'path-not-in-allowlist',
          path: '/srv/files/public/.env',
        },
      ],
    });
  });

  it('--json escapes them too: the document parses the same, with no raw C1, NEL, LS, PS or bidi', () => {
    // The JSON goes to a terminal or a line reader as often as the text does.
    const inputs = [
      'public/a\u0085allow',
      'public/b\u2028c',
      'public/\u009b2Kg',
      'public/f\u007f',
      ...BIDI,
    ];
    const run = pathgate('check', ...RULES, '--json', ...inputs);
    expect(run.status).toBe(0);
    expect(run.stdout).not.toMatch(RAW_UNSAFE);
    const { results } = JSON.parse(run.stdout) as { results: { input: string; path: string }[] };
    expect(results.map((r) => [r.input, r.path])).toEqual(
      inputs.map((input) => [input, `/srv/files/${input}`]),
    );
  });

  it('reads a JSON policy file, and flags add rules to it', () => {
    const file = join(dir, 'policy.json');
    writeFileSync(file, JSON.stringify({ root: '/data', fs: ['./reports/*.csv'], dot: true }));
    const run = pathgate(
      'check',
      '--policy',
      file,
      '--rule',
      'rw:./tmp/*',
      '--json',
      'reports/.q3.csv',
      'tmp/x',
    );
    expect(run.status).toBe(0);
    const { results } = JSON.parse(run.stdout);
    expect(results.map((r: { rule: string }) => r.rule)).toEqual(['./reports/*.csv', 'rw:./tmp/*']);
  });

  it.each([
    [
      ['check', '--root', '/srv', '--rule', 'wr:./x', 'a'],
      'pathgate: rule 1 "wr:./x": unknown prefix "wr"',
    ],
    [
      ['check', '--root', 'srv', '--rule', './x', 'a'],
      'pathgate: PermissionPolicy: root must canonicalize',
    ],
    [['check', '--rule', './x'], 'pathgate: no PATH to check'],
    [['check', '--mode', 'rw', 'a'], 'pathgate: --mode must be read or write'],
    [['check', '--bogus', 'a'], "pathgate: Unknown option '--bogus'"],
    // A flag left without its value takes the next flag as one: Node's hint spans lines.
    [
      ['check', '--root', '--rule', './x', 'a'],
      "pathgate: Option '--root' argument is ambiguous. Did you forget",
    ],
    [['move', 'a'], 'pathgate: unknown command "move"'],
    [[], 'pathgate: no command'],
    [['check', '--root', '/a', '--root', '/b', 'x'], 'pathgate: --root given more than once'],
    [['check', '--mode', 'read', '--mode=write', 'x'], 'pathgate: --mode given more than once'],

    [
      ['check', '--policy', '/nonexistent/p.json', 'a'],
      'pathgate: cannot read --policy /nonexistent/p.json: ENOENT',
    ],
    [['check', '--policy', '/', 'a'], 'pathgate: cannot read --policy /: EISDIR'],
    // An unset variable (`--policy "$POLICY"`) must not drop the file's root and rules unnoticed.
    [['check', '--policy', '', '--rule', './a', 'a'], 'pathgate: cannot read --policy : ENOENT'],
  ])('exits 2 with a clear message on %j', (args, message) => {
    const run = pathgate(...args);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stdout).toBe('');
  });

  it.each([['check', '--help'], ['check', '-h', '--root', 'srv'], ['--help'], ['help']])(
    '%j prints the usage to stdout and exits 0',
    (...args) => {
      const run = pathgate(...args);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^Usage: pathgate check /);
      expect(run.stderr).toBe('');
    },
  );

  it('the usage names every exit status, 3 (an internal error) included, as the README does', () => {
    const { stdout } = pathgate('--help');
    expect(stdout).toMatch(
      /Exit status: 0 when [^.]*, 1 when [^.]*, 2 on [^.]*, 3 on an internal error/,
    );
  });

  it.each([
    ['the lines', ['check', ...RULES, 'public/a']],
    ['--json', ['check', ...RULES, '--json', 'public/a']],
    ['--help', ['--help']],
  ])('exits 2 when the output cannot take %s (a full disk), saying so', (_what, args) => {
    // Exit 0 with nothing written: a script would go on with an empty report.
    const run = spawnBin('sh', ['-c', '"$@" > /dev/full', 'sh', process.execPath, BIN, ...args]);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      'pathgate: cannot write the output: ENOSPC: no space left on device, write\n',
    );
  });

  it('a reader that stops reading early (| head) is no error: the exit status is the decision', () => {
    // Far more than a pipe holds, so the bin writes after the reader left (EPIPE).
    const paths = Array.from({ length: 3000 }, (_, i) => `public/${i}`);
    // The bin's stderr goes to stdout, before its status: bash's own (a
    // warning on a locale not installed, LC_ALL=tr_TR.UTF-8) is not the bin's.
    const script = `{ "$@" 2>&3 | head -c 1 > /dev/null; echo "\${PIPESTATUS[0]}"; } 3>&1`;
    const run = spawnBin('bash', [
      '-c',
      script,
      'bash',
      process.execPath,
      BIN,
      'check',
      ...RULES,
      ...paths,
    ]);
    expect(run.stdout).toBe('0\n');
  });

  it('a "--help" after "--" is a PATH', () => {
    const run = pathgate('check', '--rule', './x', '--', '--help');
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('deny (path-not-in-allowlist) "--help"');
  });

  it.each([
    [{ root: '/srv', permissions: { fs: ['uploads/*'] } }, 'permissions'],
    [{ fs: ['uploads/*'], Dot: true }, 'Dot'],
  ])('exits 2 on a policy file key it would not read: %j', (policy, key) => {
    const file = join(dir, `unknown-${key}.json`);
    writeFileSync(file, JSON.stringify(policy));
    const run = pathgate('check', '--policy', file, 'uploads/a');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`--policy ${file}: unknown key "${key}"`);
    expect(run.stdout).toBe('');
  });

  // With the root and a rule from flags, a file of the wrong shape would otherwise go unnoticed:
  // an array read as no keys, a string as keys "0"…, a string of rules as one rule a character.
  it.each([
    [[], 'must hold a JSON object { "root", "fs", "dot" }'],
    [null, 'must hold a JSON object { "root", "fs", "dot" }'],
    ['./a/*', 'must hold a JSON object { "root", "fs", "dot" }'],
    [{ fs: './a/*' }, 'the policy file\'s "fs" must be an array of rules'],
  ])('exits 2 on a policy file of the wrong shape: %j', (policy, message) => {
    const file = join(dir, 'bad-shape.json');
    writeFileSync(file, JSON.stringify(policy));
    const run = pathgate('check', '--policy', file, '--root', '/srv', '--rule', './a/*', 'a/x');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stdout).toBe('');
  });

  it.each([
    [{ fs: ['./a/*'], dot: 'yes' }, ['--dot'], '"dot" must be a boolean'],
    [{ fs: ['./a/*'], dot: null }, ['--dot'], '"dot" must be a boolean'],
    [{ root: 5, fs: ['./a/*'] }, ['--root', '/srv'], '"root" must be a string'],
    [{ root: 'srv/files', fs: ['./a/*'] }, ['--root', '/srv'], '"root" must canonicalize'],
    [{ root: '', fs: ['./a/*'] }, ['--root', '/srv'], '"root" must canonicalize'],
  ])(
    'exits 2 on a bad value in the policy file even when a flag overrides it: %j',
    (policy, flags, message) => {
      // The file is the policy a service loads: a flag must not hide that it would not build.
      const file = join(dir, 'bad-value.json');
      writeFileSync(file, JSON.stringify(policy));
      const run = pathgate('check', '--policy', file, ...flags, 'a/x');
      expect(run.status).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    },
  );

  it("exits 2 on a second --policy, which would leave the first one's rules unread", () => {
    const [first, second] = [join(dir, 'first.json'), join(dir, 'second.json')];
    writeFileSync(first, JSON.stringify({ fs: ['./a/*'] }));
    writeFileSync(second, JSON.stringify({ fs: ['./b/*'] }));
    const run = pathgate('check', '--policy', first, '--policy', second, 'a/x');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('pathgate: --policy given more than once');
    expect(run.stdout).toBe('');
  });

  it('exits 2 by itself on a --policy that never ends, rather than read it forever', () => {
    const run = pathgate('check', '--policy', '/dev/zero', 'a/x');
    expect(run.signal).toBeNull();
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('pathgate: --policy /dev/zero is larger than 1 MiB');
    expect(run.stdout).toBe('');
  });

  it('reads a policy file of exactly 1 MiB, and refuses one byte more', () => {
    const [atCap, overCap] = [join(dir, 'at-cap.json'), join(dir, 'over-cap.json')];
    writeFileSync(atCap, paddedPolicy(MIB));
    writeFileSync(overCap, paddedPolicy(MIB + 1));
    expect(pathgate('check', '--policy', atCap, 'a/x').stdout).toContain('[rule "./a/*"]');
    const refused = pathgate('check', '--policy', overCap, 'a/x');
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`pathgate: --policy ${overCap} is larger than 1 MiB`);
    expect(refused.stdout).toBe('');
  });

  it('reads a policy from a pipe, which hands it over in many short reads', () => {
    const file = join(dir, 'piped.json');
    writeFileSync(file, paddedPolicy(MIB));
    const run = pathgatePiped(file, 'check', '--policy', '/dev/stdin', 'a/x');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('allow                        "a/x" -> /a/x  [rule "./a/*"]');
  });

  it('reads a policy file that begins with a UTF-8 byte order mark, as Windows editors write', () => {
    const file = join(dir, 'bom.json');
    writeFileSync(file, `\uFEFF${JSON.stringify({ fs: ['./a/*'] })}`);
    const run = pathgate('check', '--policy', file, 'a/x');
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });

  it('exits 2 on a policy file that is not UTF-8, rather than read a rule with U+FFFD in it', () => {
    const file = join(dir, 'latin1.json');
    writeFileSync(file, Buffer.from('{ "fs": ["./caf\xe9/*"] }', 'latin1'));
    const run = pathgate('check', '--policy', file, 'a/x');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`--policy ${file} is not UTF-8`);
    expect(run.stdout).toBe('');
  });

  it('escapes control characters and line separators on stderr too: a policy file or a flag chose them', () => {
    // A rule from a file in a pull request reaches a CI log through the error message.
    const file = join(dir, 'controls.json');
    writeFileSync(file, JSON.stringify({ fs: ['wr:\u009b2J\u2028forged\u202e'] }));
    const run = pathgate('check', '--policy', file, '--mode', 'x\u001b[2J\u0085', 'a');
    expect(run.status).toBe(2);
    expect(run.stderr.split('\n')[0]).toBe(
      'pathgate: --mode must be read or write, got "x\\u001b[2J\\u0085"',
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what must not appear.
    expect(run.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
    expect(run.stderr).not.toMatch(RAW_UNSAFE);
    const fromFile = pathgate('check', '--policy', file, 'a');
    expect(fromFile.status).toBe(2);
    expect(fromFile.stderr).toBe(
      'pathgate: rule 1 "wr:\\u009b2J\\u2028forged\\u202e": unknown prefix "wr" (use "r:" or "rw:")\n',
    );
  });

  it('exits 2 on a policy file that is not JSON', () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, '{ root: /srv }');
    const run = pathgate('check', '--policy', file, 'a');
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`--policy ${file} is not JSON`);
  });

  it('--resolve-symlinks sees through a link that points out of the root', () => {
    const root = join(dir, 'root');
    execFileSync('mkdir', ['-p', join(root, 'uploads'), join(dir, 'outside')]);
    execFileSync('ln', ['-s', join(dir, 'outside'), join(root, 'uploads', 'link')]);
    const args = ['check', '--root', root, '--rule', 'rw:./uploads/**', '--mode', 'write'];
    expect(pathgate(...args, 'uploads/link/x').status).toBe(0);
    const resolved = pathgate(...args, '--resolve-symlinks', 'uploads/link/x');
    expect(resolved.status).toBe(1);
    expect(resolved.stdout).toContain('deny (path-not-in-allowlist)');
  });

  it('a deny with no canonical path (resolve-failed) prints no arrow', () => {
    const long = `public/${'x'.repeat(4096)}`; // PATH_MAX: resolveSymlinks throws ENAMETOOLONG
    const run = pathgate('check', ...RULES, '--resolve-symlinks', long);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe(`${'deny (resolve-failed)'.padEnd(28)} "${long}"\n`);
  });
});
