// Finds the parts of a SQL text that are code, as opposed to string literals,
// quoted identifiers, comments and dollar-quoted bodies, following
// PostgreSQL's lexical rules (standard_conforming_strings on).

export interface CodeSpan {
  start: number;
  /** Exclusive. */
  end: number;
}

const IDENT_CHAR = /[A-Za-z0-9_$]/;
const DOLLAR_TAG = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/;

export function codeSpans(sql: string): CodeSpan[] {
  const spans: CodeSpan[] = [];
  let start = 0;
  let i = 0;
  const skipTo = (end: number) => {
    if (i > start) spans.push({ start, end: i });
    i = end;
    start = end;
  };
  while (i < sql.length) {
    const c = sql[i];
    const next = sql[i + 1];
    if (c === "'") {
      const escapes = /[eE]/.test(sql[i - 1] ?? '') && !IDENT_CHAR.test(sql[i - 2] ?? '');
      skipTo(endOfQuoted(sql, i, "'", escapes));
    } else if (c === '"') {
      skipTo(endOfQuoted(sql, i, '"', false));
    } else if (c === '-' && next === '-') {
      const eol = sql.indexOf('\n', i);
      skipTo(eol === -1 ? sql.length : eol);
    } else if (c === '/' && next === '*') {
      skipTo(endOfBlockComment(sql, i));
    } else if (c === '$' && !IDENT_CHAR.test(sql[i - 1] ?? '')) {
      const tag = DOLLAR_TAG.exec(sql.slice(i, i + 64))?.[0];
      if (tag) {
        const close = sql.indexOf(tag, i + tag.length);
        skipTo(close === -1 ? sql.length : close + tag.length);
      } else {
        i++;
      }
    } else {
      i++;
    }
  }
  if (i > start) spans.push({ start, end: i });
  return spans;
}

/** Index just past the closing quote; a doubled quote is an escaped one. */
function endOfQuoted(sql: string, open: number, quote: string, backslashEscapes: boolean): number {
  for (let i = open + 1; i < sql.length; i++) {
    if (backslashEscapes && sql[i] === '\\') {
      i++;
    } else if (sql[i] === quote) {
      if (sql[i + 1] === quote) i++;
      else return i + 1;
    }
  }
  return sql.length;
}

/** Block comments nest in PostgreSQL. */
function endOfBlockComment(sql: string, open: number): number {
  let depth = 0;
  for (let i = open; i < sql.length - 1; i++) {
    if (sql[i] === '/' && sql[i + 1] === '*') {
      depth++;
      i++;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  return sql.length;
}
