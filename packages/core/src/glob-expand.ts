import {
  type CodePointRange,
  type GlobNode,
  GlobSyntaxError,
  type StarNode,
} from './glob-parse.js';

/**
 * Expand: a syntax tree → its brace-free alternatives. Each token remembers
 * whether it is glob syntax: wildcards and classes always, and literal
 * characters that came from inside braces (so `{a,b}` still counts as glob
 * syntax for the literal root and for `..`, as in the unexpanded text), and
 * whether it is `plain`: written as it is, neither escaped nor from braces.
 */
export type GlobToken =
  | { type: 'char'; value: string; syntax: boolean; plain: boolean }
  | { type: 'slash' }
  | StarNode
  | { type: 'any' }
  | { type: 'class'; negated: boolean; ranges: readonly CodePointRange[] };

/**
 * Where braces stood, at both ends of the alternative chosen: zero-width, so a
 * segment that braces touched counts as glob syntax even when they gave it
 * nothing (`{x,}..` is no `..`, `{,}` no empty segment).
 */
export type BraceEdge = { type: 'edge' };
const EDGE: BraceEdge = { type: 'edge' };

/** Rule text is configuration, but `{a,b}{a,b}…` still must not explode at build time. */
const MAX_EXPANSIONS = 1024;

function token(node: Exclude<GlobNode, { type: 'brace' }>, braced: boolean): GlobToken {
  if (node.type !== 'char') return node;
  return { type: 'char', value: node.value, syntax: braced, plain: !braced && !node.escaped };
}

/**
 * The tokens of all alternatives together: 1,024 alternatives of a 50 KB
 * tail took 20 s and a gigabyte to compile, for a rule no path would need.
 */
const MAX_TOKENS = 1 << 20;

function checkTokens(tokens: number): void {
  if (tokens > MAX_TOKENS) {
    throw new GlobSyntaxError(
      `it expands to more than ${MAX_TOKENS} characters, its brace alternatives together`,
    );
  }
}

/**
 * A brace's alternatives, expanded one by one: past the limits (times `heads`,
 * the alternatives before the brace) it throws there, not once every one was
 * built (a 50 KB rule of 1,024-way alternatives took seconds and gigabytes).
 */
function expandBrace(
  alternatives: readonly GlobNode[][],
  heads: number,
): (GlobToken | BraceEdge)[][] {
  const expanded: (GlobToken | BraceEdge)[][] = [];
  let tokens = 0;
  for (const alternative of alternatives) {
    for (const tail of expandGlob(alternative, true)) {
      expanded.push(tail);
      tokens += tail.length;
    }
    if (heads * expanded.length > MAX_EXPANSIONS) {
      throw new GlobSyntaxError(`braces expand to more than ${MAX_EXPANSIONS} alternatives`);
    }
    checkTokens(heads * tokens);
  }
  return expanded;
}

export function expandGlob(
  nodes: readonly GlobNode[],
  braced = false,
): (GlobToken | BraceEdge)[][] {
  let results: (GlobToken | BraceEdge)[][] = [[]];
  let tokens = 0;
  for (const node of nodes) {
    if (node.type !== 'brace') {
      tokens += results.length;
      checkTokens(tokens);
      const t = token(node, braced);
      for (const result of results) result.push(t);
      continue;
    }
    const alternatives = expandBrace(node.alternatives, results.length);
    // Each head joined to each tail, with an edge on either side of the tail.
    const tails = alternatives.reduce((sum, tail) => sum + tail.length + 2, 0);
    tokens = tokens * alternatives.length + tails * results.length;
    checkTokens(tokens);
    results = results.flatMap((head) => alternatives.map((tail) => [...head, EDGE, ...tail, EDGE]));
  }
  return results;
}
