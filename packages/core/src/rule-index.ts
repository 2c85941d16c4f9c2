import type { CompiledGlob } from './glob-compile.js';
import { byRuleText, type CompiledRule } from './rule.js';

/** One brace alternative of one rule, filed under its literal root. */
interface IndexEntry {
  readonly rule: CompiledRule;
  readonly glob: CompiledGlob;
}

interface TrieNode {
  readonly children: Map<string, TrieNode>;
  readonly entries: IndexEntry[];
  /** This node's and its ancestors' non-empty entry lists, deepest first. */
  chain: IndexEntry[][];
  /** With few children, their names and nodes as arrays: comparing beats hashing a fresh slice. */
  names: string[] | undefined;
  nodes: TrieNode[];
  /** No children: a check stops here without touching the Map. */
  leaf: boolean;
}

const NONE: IndexEntry[][] = [];
const SCAN_LIMIT = 8;

const newNode = (): TrieNode => ({
  children: new Map(),
  entries: [],
  chain: [],
  names: undefined,
  nodes: [],
  leaf: true,
});

function childOf(node: TrieNode, name: string): TrieNode | undefined {
  const { names } = node;
  if (names === undefined) return node.children.get(name);
  for (let i = 0; i < names.length; i++) if (names[i] === name) return node.nodes[i];
  return undefined;
}

/** A node's chain: its own entries, if any, before its parent's chain. */
const chainOf = (node: TrieNode, parent: IndexEntry[][]): IndexEntry[][] =>
  node.entries.length > 0 ? [node.entries, ...parent] : parent;

/** Rule text order within a node: which rule explains a decision never depends on rule order. */
const sortEntries = (node: TrieNode): void => {
  node.entries.sort((a, b) => byRuleText(a.rule, b.rule));
};

/**
 * A trie from literal-root segments to the rules filed there, so a check
 * looks only at rules whose literal root is the path or one of its parents:
 * its cost follows the path's depth, not the number of rules. Every rule lies
 * inside the policy root, so lookups start at the root's node.
 */
export class RuleIndex {
  private readonly top = newNode();
  private readonly rootNode: TrieNode;
  private readonly root: readonly string[];

  constructor(rules: readonly CompiledRule[], root: readonly string[]) {
    this.rootNode = this.nodeAt(root);
    this.root = root;
    for (const rule of rules) {
      for (const glob of rule.globs) this.nodeAt(glob.literalRoot).entries.push({ rule, glob });
    }
    this.finish();
  }

  /**
   * Sorts and links every node, parents before children, in a loop: a
   * literal root may be thousands of segments deep, too deep to recurse.
   */
  private finish(): void {
    const order = [this.top];
    this.top.chain = chainOf(this.top, []);
    for (let i = 0; i < order.length; i++) {
      const node = order[i] as TrieNode;
      sortEntries(node);
      node.leaf = node.children.size === 0;
      if (node.children.size <= SCAN_LIMIT) {
        node.names = [...node.children.keys()];
        node.nodes = [...node.children.values()];
      }
      for (const child of node.children.values()) {
        child.chain = chainOf(child, node.chain);
        order.push(child);
      }
    }
  }

  /** The node for `segments`, created on the way. */
  private nodeAt(segments: readonly string[]): TrieNode {
    let node = this.top;
    for (const segment of segments) {
      let child = node.children.get(segment);
      if (!child) {
        child = newNode();
        node.children.set(segment, child);
      }
      node = child;
    }
    return node;
  }

  /** Whether the path's segments begin with the root's (same strings, so mostly a pointer compare). */
  private underRoot(segments: readonly string[]): boolean {
    const { root } = this;
    if (segments.length < root.length) return false;
    for (let i = 0; i < root.length; i++) if (segments[i] !== root[i]) return false;
    return true;
  }

  /** The candidate entries for a path, deepest literal root first; none outside the root. */
  candidates(segments: readonly string[]): IndexEntry[][] {
    if (!this.underRoot(segments)) return NONE;
    let node = this.rootNode;
    // A leaf ends the walk before the next segment is hashed (a file name usually meets a leaf).
    for (let i = this.root.length; i < segments.length && !node.leaf; i++) {
      const child = childOf(node, segments[i] as string);
      if (child === undefined) break;
      node = child;
    }
    return node.chain;
  }
}
