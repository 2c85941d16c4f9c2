import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { campaignTimeout } from './campaign.js';
import { postJson } from './examples.js';
import { SandboxModel } from './examples-model.js';
import { NOTHING_AROUND, SANDBOX_BYTES, servedPairForSuite } from './examples-model-apps.js';
import { COMMANDS, observed, reached } from './examples-model-commands.js';

// Stateful, model-based: fast-check runs sequences of list, download, delete,
// move and upload commands, with ordinary and hostile names (climbing, encoded
// dots and slashes, NUL, NFC and NFD forms of one name, dotfiles, names equal
// once canonical, deep folders, folders at and past the 32 a client may make,
// names over 255 bytes, paths near 4,095), against both example
// servers at once. Each answer must be the one the model of the sandbox
// gives (status, body, reason), and the same from both but where the
// READMEs say they differ (a raw NUL in an upload's filename). After each
// run, each sandbox must hold exactly the model's files and folders, and
// nothing may appear beside it. A failure shrinks to a minimal list of
// commands.

// MODEL_SEED, MODEL_RUNS and MODEL_TIMEOUT (ms) override these for a longer campaign;
// the timeout grows with the runs by itself.
const SEED = Number(process.env.MODEL_SEED ?? 20261205);
const RUNS = Number(process.env.MODEL_RUNS ?? 80);
const TIMEOUT = campaignTimeout('MODEL_TIMEOUT', RUNS, 1_500);
/** Answers the runs must reach (`reached`): each operation's success and its failures, not only denies. */
const REACHED = [
  'list 200',
  'list 400 not a folder',
  'download 200',
  'download 400 not a file',
  'delete 200',
  'delete 400 not a file',
  'delete 404 no such file or folder',
  'move 200',
  'move 400 not a file',
  'move 404 no such file or folder',
  'move 409 already exists',
  'move 409 a parent is not a folder',
  'move 400 name too long',
  'move 400 too deep',
  'move 403 nul-byte',
  'move 403 resolve-failed',
  'upload 201',
  'upload 400 name too long',
  'upload 400 too deep',
  'upload 409 already exists',
  'upload 409 a parent is not a folder',
  'upload 403 missing-path',
  'upload 403 mode-not-permitted',
  'upload 403 path-not-in-allowlist',
  'upload 403 nul-byte',
];

describe('both examples, driven through one model of their sandbox', () => {
  const pair = servedPairForSuite();

  // Seed 4002, run 116: the model let this move through, its first new
  // folder's name being too long, where mkdir fails (ENAMETOOLONG).
  it('answer a move into a new folder whose name is too long as the model does', async () => {
    const model = new SandboxModel(pair.reseed(), SANDBOX_BYTES);
    const [from, to] = ['uploads/hello.txt', `uploads/${'n'.repeat(256)}/f`];
    const answers = await pair.send(postJson('/api/move', JSON.stringify({ from, to })));
    const modelled = model.move(from, to);
    for (const { name, got } of answers) expect(observed(got), name).toEqual(modelled);
    for (const { name, tree } of pair.sandboxes()) {
      expect(tree, `${name}: the sandbox`).toEqual({ files: model.files, dirs: model.dirs });
    }
  });

  it(
    'answer each command alike and as the model does, and hold what it holds',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.commands(COMMANDS, { maxCommands: 30, size: 'medium' }),
          async (commands) => {
            const model = new SandboxModel(pair.reseed(), SANDBOX_BYTES);
            await fc.asyncModelRun(() => ({ model, real: pair }), commands);
            for (const { name, tree, around } of pair.sandboxes()) {
              expect(tree, `${name}: the sandbox`).toEqual({
                files: model.files,
                dirs: model.dirs,
              });
              expect(around, `${name}: beside the sandbox`).toEqual(NOTHING_AROUND);
            }
          },
        ),
        { seed: SEED, numRuns: RUNS },
      );
      expect([...reached]).toEqual(expect.arrayContaining(REACHED));
    },
    TIMEOUT,
  );
});
