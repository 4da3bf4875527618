// Editing a SQL text at its tokens' byte offsets (the offsets of the
// scanner and of every parse tree location), so that everything outside an
// edited span stays as written, `$n` parameters, literals and comments
// included. Used by the rewrite into PostgreSQL's grammar
// (postgres-grammar.ts) and by the local endpoint's rewrites of Redshift's
// functions (local/data-api/redshift-functions/syntax.ts).
import { scanTokens, type Token } from './parser.ts';

/** A span of the text [start, end) in bytes, and its replacement, built from rendered sub-spans. */
export interface Rewrite {
  start: number;
  end: number;
  build(render: (start: number, end: number) => string): string;
}

/** The tokens of a text, or undefined when PostgreSQL's scanner cannot read it (the parse or the database then says what is wrong). */
export function tokensOf(text: string): Token[] | undefined {
  try {
    return scanTokens(text);
  } catch {
    return undefined;
  }
}

/** The token closing the parenthesis that token `open` opens. */
export function matching(tokens: readonly Token[], open: number): number | undefined {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    if (tokens[i]!.text === '(') depth++;
    else if (tokens[i]!.text === ')' && --depth === 0) return i;
  }
  return undefined;
}

/** The text with each rewrite's span replaced; a rewrite inside another's span is applied where that one renders it. */
export function render(bytes: Buffer, rewrites: readonly Rewrite[]): string {
  const sorted = [...rewrites].sort((a, b) => a.start - b.start || b.end - a.end);
  const renderSpan = (start: number, end: number): string => {
    let out = '';
    let position = start;
    for (const rewrite of sorted) {
      if (rewrite.start < position || rewrite.end > end) continue;
      out += bytes.subarray(position, rewrite.start).toString() + rewrite.build(renderSpan);
      position = rewrite.end;
    }
    return out + bytes.subarray(position, end).toString();
  };
  return renderSpan(0, bytes.length);
}
