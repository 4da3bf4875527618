// The Data API's `:name` parameters, translated to PostgreSQL's `$n`.
// Values stay untyped strings: PostgreSQL infers each one's type from its
// context, as Redshift converts implicitly.
import { validation } from './errors.ts';
import { codeSpans } from './sql-lexer.ts';

export interface SqlParameter {
  name: string;
  value: string;
}

export interface TranslatedSql {
  text: string;
  values: string[];
}

const NAME = /^[0-9A-Za-z_]+$/;
const REFERENCE = /:([0-9A-Za-z_]+)/y;

/** Checks the request's parameter list itself (the API's own constraints). */
export function validateParameters(parameters: unknown): SqlParameter[] {
  if (parameters === undefined) return [];
  if (!Array.isArray(parameters) || parameters.length === 0) {
    throw validation("1 validation error detected: Value at 'parameters' failed to satisfy constraint: Member must have length greater than or equal to 1");
  }
  const seen = new Set<string>();
  return parameters.map((p: { name?: unknown; value?: unknown }) => {
    if (typeof p?.name !== 'string' || !NAME.test(p.name)) {
      throw validation(`1 validation error detected: Value '${String(p?.name)}' at 'parameters.member.name' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[0-9a-zA-Z_]+$`);
    }
    if (typeof p.value !== 'string' || p.value.length === 0) {
      throw validation(`1 validation error detected: Value at 'parameters.member.value' of parameter '${p.name}' failed to satisfy constraint: Member must have length greater than or equal to 1`);
    }
    if (seen.has(p.name)) throw validation(`Parameter '${p.name}' is supplied more than once.`);
    seen.add(p.name);
    return { name: p.name, value: p.value };
  });
}

/** Names referenced as `:name` in code (not in literals, identifiers, comments; `::` is a cast). */
export function referencedNames(sql: string): Set<string> {
  const names = new Set<string>();
  forEachReference(sql, (name) => names.add(name));
  return names;
}

/**
 * Rewrites `:name` to `$n`. Every referenced name must be supplied; checking
 * that every supplied parameter is referenced is up to the caller (a batch
 * shares one list across its statements).
 */
export function translate(sql: string, parameters: SqlParameter[]): TranslatedSql {
  const byName = new Map(parameters.map((p) => [p.name, p.value]));
  const positions = new Map<string, number>();
  const values: string[] = [];
  let text = '';
  let copied = 0;
  forEachReference(sql, (name, start, end) => {
    const value = byName.get(name);
    if (value === undefined) throw validation(`Parameter '${name}' is referenced in the SQL statement but no value is supplied.`);
    let position = positions.get(name);
    if (position === undefined) {
      values.push(value);
      position = values.length;
      positions.set(name, position);
    }
    text += `${sql.slice(copied, start)}$${position}`;
    copied = end;
  });
  return { text: text + sql.slice(copied), values };
}

/** Fails when a supplied parameter is referenced by none of the statements. */
export function checkAllReferenced(sqls: string[], parameters: SqlParameter[]): void {
  const referenced = new Set(sqls.flatMap((sql) => [...referencedNames(sql)]));
  const unused = parameters.find((p) => !referenced.has(p.name));
  if (unused) throw validation(`Parameter '${unused.name}' is supplied but not referenced in the SQL statement.`);
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
