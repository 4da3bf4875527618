// The Data API's `:name` parameters in a SQL text. PostgreSQL's grammar has
// no such syntax: a text is parsed (and run locally) with `$n` in their place.
import { codeSpans } from './lexer.ts';

const REFERENCE = /:([0-9A-Za-z_]+)/y;

export interface PositionalSql {
  /** The text with every `:name` replaced by `$n`. */
  readonly text: string;
  /** Parameter names in the order of their positions: `$1` is `names[0]`. */
  readonly names: readonly string[];
}

/** Names referenced as `:name` in code (not in literals, identifiers, comments; `::` is a cast). */
export function referencedNames(sql: string): Set<string> {
  return new Set(toPositional(sql).names);
}

/** toPositional's results by text, oldest first: the same statement comes back with other values (every chunk's load). */
const positional = new Map<string, PositionalSql>();
const MAX_POSITIONAL = 2000;

/** Rewrites `:name` to `$n`, one position per distinct name, in order of first use. */
export function toPositional(sql: string): PositionalSql {
  const known = positional.get(sql);
  if (known) return known;
  const result = rewrite(sql);
  if (positional.size >= MAX_POSITIONAL) positional.delete(positional.keys().next().value!);
  positional.set(sql, result);
  return result;
}

function rewrite(sql: string): PositionalSql {
  const positions = new Map<string, number>();
  let text = '';
  let copied = 0;
  forEachReference(sql, (name, start, end) => {
    let position = positions.get(name);
    if (position === undefined) {
      position = positions.size + 1;
      positions.set(name, position);
    }
    text += `${sql.slice(copied, start)}$${position}`;
    copied = end;
  });
  return { text: text + sql.slice(copied), names: [...positions.keys()] };
}

function forEachReference(sql: string, visit: (name: string, start: number, end: number) => void): void {
  for (const span of codeSpans(sql)) {
    for (let i = span.start; i < span.end; i++) {
      if (sql[i] !== ':') continue;
      if (sql[i + 1] === ':') {
        i++; // a `::` cast
        continue;
      }
      REFERENCE.lastIndex = i;
      const match = REFERENCE.exec(sql);
      if (!match?.[1] || REFERENCE.lastIndex > span.end) continue;
      visit(match[1], i, REFERENCE.lastIndex);
      i = REFERENCE.lastIndex - 1;
    }
  }
}

/**
 * `sql` with every `:name` replaced by `values[name]` (SQL text, e.g. a
 * literal), on one line, for a text run where the Data API binds no
 * parameters (inside a procedure's EXECUTE): a `--` comment becomes a space,
 * line breaks in code become spaces. Undefined when that cannot be done
 * safely: a name without a value, or a literal, quoted identifier or block
 * comment holding a line break or a backslash (sqlLiteral refuses them).
 */
export function inlineParameters(sql: string, values: Readonly<Record<string, string>>): string | undefined {
  const references = new Map<number, { name: string; end: number }>();
  forEachReference(sql, (name, start, end) => references.set(start, { name, end }));
  let text = '';
  let position = 0;
  const gap = (part: string): boolean => {
    if (part.startsWith('--')) text += ' ';
    else if (/[\\\u0000-\u001f]/.test(part)) return false;
    else text += part;
    return true;
  };
  for (const span of [...codeSpans(sql), { start: sql.length, end: sql.length }]) {
    if (!gap(sql.slice(position, span.start))) return undefined;
    for (let i = span.start; i < span.end; i++) {
      const reference = references.get(i);
      if (reference !== undefined) {
        const value = values[reference.name];
        if (value === undefined) return undefined;
        text += value;
        i = reference.end - 1;
      } else {
        text += /\s/.test(sql[i]!) ? ' ' : sql[i];
      }
    }
    position = span.end;
  }
  return text;
}
