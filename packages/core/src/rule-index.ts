import type { CompiledGlob } from './glob-compile.js';
import type { CompiledRule } from './rule.js';

/** One brace alternative of one rule, filed under its literal root. */
export interface IndexEntry {
  readonly rule: CompiledRule;
  readonly glob: CompiledGlob;
}

interface TrieNode {
  readonly children: Map<string, TrieNode>;
  readonly entries: IndexEntry[];
}

const newNode = (): TrieNode => ({ children: new Map(), entries: [] });

/**
 * A trie from literal-root segments to the rules filed there, so a check
 * looks only at rules whose literal root is the path or one of its parents:
 * its cost follows the path's depth, not the number of rules.
 */
export class RuleIndex {
  private readonly top = newNode();

  constructor(rules: readonly CompiledRule[]) {
    for (const rule of rules) {
      for (const glob of rule.globs) this.file({ rule, glob });
    }
    this.sort(this.top);
  }

  private file(entry: IndexEntry): void {
    let node = this.top;
    for (const segment of entry.glob.literalRoot) {
      let child = node.children.get(segment);
      if (!child) {
        child = newNode();
        node.children.set(segment, child);
      }
      node = child;
    }
    node.entries.push(entry);
  }

  /** Rule text order within a node: which rule explains a decision never depends on rule order. */
  private sort(node: TrieNode): void {
    node.entries.sort((a, b) =>
      a.rule.text < b.rule.text ? -1 : a.rule.text > b.rule.text ? 1 : 0,
    );
    for (const child of node.children.values()) this.sort(child);
  }

  /** The candidate entries for a path, deepest literal root first. */
  candidates(segments: readonly string[]): IndexEntry[][] {
    const found: IndexEntry[][] = [];
    let node: TrieNode | undefined = this.top;
    for (let i = 0; node; i++) {
      if (node.entries.length > 0) found.push(node.entries);
      node = i < segments.length ? node.children.get(segments[i] as string) : undefined;
    }
    return found.reverse();
  }
}
