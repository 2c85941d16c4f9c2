// What a sandbox may hold after a batch of the cut-off property test
// (examples-cutoff.test.ts): no exact model, as the order of a failed
// upload's errors varies, but invariants any serial order keeps.
import type { Request } from './cutoff-requests.js';
import type { Tree } from './examples-model.js';

/** A request of a batch, the content its upload sent, and its status (`undefined`: no answer, the connection closed). */
export interface Answered {
  request: Request;
  content: string;
  status: number | undefined;
}

const ok = (status: number | undefined) => status !== undefined && status >= 200 && status < 300;

/** `path`'s folders, from the sandbox root down. */
function ancestors(path: string): string[] {
  const names = path.split('/');
  return names.slice(1).map((_, i) => names.slice(0, i + 1).join('/'));
}

/** The paths a request answered 2xx acted on, from the sandbox root. */
function actedOn(request: Request): string[] {
  if (request.operation === 'move') return [`uploads/${request.from}`, `uploads/${request.to}`];
  if (request.operation === 'delete') return [`uploads/${request.path}`];
  return [`uploads/${request.target}`];
}

/** How a failure shows a file's content: its serial number (or start) and length. */
const shown = (text: string) => `${JSON.stringify(text.slice(0, 12))}… (${text.length} bytes)`;

/** What one sandbox holds, as the batches so far leave it. */
export class Holdings {
  /** Each stored content and its path: the seeds, the uploads answered 201, where moves took them. */
  private where = new Map<string, string>();
  /** The folders that may stay empty: there before, or ones a request answered 2xx in. */
  private kept = new Set<string>();

  /**
   * `movesKnown`: the server's uploads know the folders its moves make (the
   * Fastify example). Else (Express: the storage of @pathgate/express knows
   * its own uploads' folders only), a new folder a failing move made may be
   * left empty by a failing upload that walked into it.
   */
  constructor(
    start: Tree,
    private readonly movesKnown: boolean,
  ) {
    for (const [path, text] of start.files) this.where.set(text, path);
    for (const dir of start.dirs) this.kept.add(dir);
  }

  /** What `tree` holds against the batch's answers: each problem found (none: all well); then holds it. */
  judge(answers: readonly Answered[], tree: Tree): string[] {
    const problems = answers
      .filter(({ status }) => status !== undefined && status >= 500)
      .map(({ request, status }) => `${request.operation} answered ${status}`);
    const done = answers.filter(({ status }) => ok(status));
    const moved = new Set(
      done.flatMap(({ request: r }) => (r.operation === 'move' ? [`uploads/${r.to}`] : [])),
    );
    const taken = new Set(
      done.flatMap(({ request: r }) => (r.operation === 'upload' ? [] : [actedOn(r)[0] as string])),
    );
    for (const { request, content } of done) {
      if (request.operation === 'upload') this.where.set(content, `uploads/${request.target}`);
    }
    // A failed upload's file stored before its failure (a second file) may
    // be moved meanwhile, and the failure takes it back only where it still
    // is (the examples' READMEs): where a 2xx move of its name took it, it stays.
    const sources = new Set(
      done.flatMap(({ request: r }) => (r.operation === 'move' ? [`uploads/${r.from}`] : [])),
    );
    const movedOn = new Set(
      answers
        .filter(({ request: r, status }) => r.operation === 'upload' && !ok(status))
        .filter(({ request: r }) => sources.has(actedOn(r)[0] as string))
        .map(({ content }) => content),
    );
    for (const { request } of done)
      for (const path of actedOn(request)) for (const dir of ancestors(path)) this.kept.add(dir);
    if (!this.movesKnown) this.keepFailedMoves(answers);
    problems.push(
      ...this.files(tree, moved, movedOn),
      ...this.gone(tree, taken),
      ...this.folders(tree),
    );
    this.where = new Map([...tree.files].map(([path, text]) => [text, path]));
    for (const dir of tree.dirs) this.kept.add(dir);
    return problems;
  }

  /** The folders on the way to each failed move's target may stay empty (`movesKnown`). */
  private keepFailedMoves(answers: readonly Answered[]): void {
    for (const { request, status } of answers) {
      if (request.operation !== 'move' || ok(status)) continue;
      for (const dir of ancestors(`uploads/${request.to}`)) this.kept.add(dir);
    }
  }

  /**
   * Each file is a whole stored content, once, at its path or where a 2xx
   * move put it (also one of `movedOn`, failed uploads' files); no dot file.
   */
  private files(tree: Tree, moved: ReadonlySet<string>, movedOn: ReadonlySet<string>): string[] {
    const problems: string[] = [];
    const seen = new Set<string>();
    for (const [path, text] of tree.files) {
      const home = this.where.get(text);
      if (path.split('/').some((name) => name.startsWith('.') || name.endsWith(' (not a file)'))) {
        problems.push(`${path} is left (a temporary file, or not a file)`);
      } else if (home === undefined && !(movedOn.has(text) && moved.has(path))) {
        problems.push(`${path} holds ${shown(text)}: no whole upload answered 201`);
      } else if (home !== undefined && path !== home && !moved.has(path)) {
        problems.push(`${path} holds ${shown(text)} of ${home}, and no move put it there`);
      }
      if (seen.has(text)) problems.push(`${shown(text)} is stored twice`);
      seen.add(text);
    }
    return problems;
  }

  /** Each stored content is still at its path, unless a 2xx move or delete took that path. */
  private gone(tree: Tree, taken: ReadonlySet<string>): string[] {
    return [...this.where]
      .filter(([text, path]) => tree.files.get(path) !== text && !taken.has(path))
      .map(([text, path]) => `${path} lost ${shown(text)}, and no move nor delete took it`);
  }

  /** Each empty folder was there before, or some request answered 2xx in it. */
  private folders(tree: Tree): string[] {
    const entries = [...tree.files.keys(), ...tree.dirs];
    return [...tree.dirs]
      .filter((dir) => !this.kept.has(dir) && !entries.some((path) => path.startsWith(`${dir}/`)))
      .map((dir) => `${dir}/ is left empty, made by failed requests only`);
  }
}
