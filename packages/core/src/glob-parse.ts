/**
 * Parse: glob text → syntax tree. The grammar is deliberately small (DESIGN
 * table): `*`, `**`, `?`, `[...]`, `{a,b}`, `\x`; every other character is
 * literal, so no regex syntax (`|`, `(`, `+`) can ever leak through.
 */

/** A class member: an inclusive range of code points. */
export type CodePointRange = readonly [number, number];

export type GlobNode =
  | { type: 'char'; value: string; escaped?: true }
  | { type: 'slash' }
  | StarNode
  | { type: 'any' }
  | { type: 'class'; negated: boolean; ranges: readonly CodePointRange[] }
  | { type: 'brace'; alternatives: readonly GlobNode[][] };

/**
 * `*`, or `**` as written (`twin`): only a `**` written as such, filling a
 * whole segment, is a globstar. Stars that meet only once braces are
 * expanded (`*{*}`, `x/{*,}*`) each stay within one segment.
 */
export type StarNode = { type: 'star'; twin?: true };

/** A grammar error: `rule.ts` adds the rule's number and text. */
export class GlobSyntaxError extends Error {}

/** Deeper nesting is refused: the recursive parser must not overflow the stack. */
const MAX_BRACE_DEPTH = 32;

class Parser {
  private pos = 0;
  private depth = 0;
  constructor(private readonly chars: readonly string[]) {}

  /** A sequence, up to the end or (inside braces) up to `,` or `}`. */
  sequence(inBrace: boolean): GlobNode[] {
    const nodes: GlobNode[] = [];
    while (this.pos < this.chars.length) {
      const c = this.chars[this.pos] as string;
      if (inBrace && (c === ',' || c === '}')) return nodes;
      this.pos++;
      nodes.push(this.node(c));
    }
    if (inBrace) throw new GlobSyntaxError('unbalanced "{"');
    return nodes;
  }

  private node(c: string): GlobNode {
    switch (c) {
      case '/':
        return { type: 'slash' };
      case '*':
        if (this.chars[this.pos] !== '*') return { type: 'star' };
        this.pos++;
        return { type: 'star', twin: true };
      case '?':
        return { type: 'any' };
      case '\\':
        return { type: 'char', value: this.escaped(), escaped: true };
      case '[':
        return this.charClass();
      case '{':
        return this.brace();
      default:
        return { type: 'char', value: c };
    }
  }

  private escaped(): string {
    const c = this.chars[this.pos++];
    if (c === undefined) throw new GlobSyntaxError('trailing "\\"');
    return c;
  }

  /** `{a,b}`: alternatives may nest and hold `/`; `{a}` is one alternative. */
  private brace(): GlobNode {
    if (++this.depth > MAX_BRACE_DEPTH) {
      throw new GlobSyntaxError(`braces nest deeper than ${MAX_BRACE_DEPTH}`);
    }
    const alternatives = [this.sequence(true)];
    while (this.chars[this.pos] === ',') {
      this.pos++;
      alternatives.push(this.sequence(true));
    }
    this.pos++; // the closing `}` (sequence() threw if there was none)
    this.depth--;
    return { type: 'brace', alternatives };
  }

  /** `[abc]`, `[a-z]`, `[!a]`, `[^a]`; a `]` first is a member; never `/`. */
  private charClass(): GlobNode {
    const first = this.chars[this.pos];
    const negated = first === '!' || first === '^';
    if (negated) this.pos++;
    const ranges: CodePointRange[] = [];
    let closed = false;
    for (let start = this.pos; this.pos < this.chars.length; ) {
      if (this.chars[this.pos] === ']' && this.pos > start) {
        closed = true;
        this.pos++;
        break;
      }
      ranges.push(this.classMember());
    }
    if (!closed) throw new GlobSyntaxError('unbalanced "["');
    return { type: 'class', negated, ranges };
  }

  private classMember(): CodePointRange {
    const low = this.classChar();
    if (this.chars[this.pos] !== '-' || this.chars[this.pos + 1] === ']') return [low, low];
    if (this.pos + 1 >= this.chars.length) return [low, low];
    this.pos++;
    const high = this.classChar();
    if (high < low) throw new GlobSyntaxError('a class range runs backwards');
    return [low, high];
  }

  private classChar(): number {
    let c = this.chars[this.pos++] as string;
    if (c === '\\') c = this.escaped();
    if (c === '/') throw new GlobSyntaxError('a "[" class cannot hold or cross "/"');
    return c.codePointAt(0) as number;
  }
}

/** Parses well-formed glob text (NUL and lone surrogates were refused before). */
export function parseGlob(text: string): GlobNode[] {
  return new Parser(Array.from(text)).sequence(false);
}
