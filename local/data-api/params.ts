// The Data API's `:name` parameters, translated to PostgreSQL's `$n`.
// Values stay untyped strings: PostgreSQL infers each one's type from its
// context, as Redshift converts implicitly.
import { referencedNames, toPositional } from '../../domain/redshift-sql/parameters.ts';
import { validation } from './errors.ts';

export interface SqlParameter {
  name: string;
  value: string;
}

export interface TranslatedSql {
  text: string;
  values: string[];
  /** Run in the same session right after the statement succeeds; its failure is the statement's (Redshift mode's key records). */
  after?: TranslatedSql[];
  /** A user the statement leaves to IAM (PASSWORD DISABLE): the runner gives it the password it logs on with, in the same session and transaction. */
  iamUser?: string;
}

const NAME = /^[0-9A-Za-z_]+$/;

/** Checks the request's parameter list itself (the API's own constraints). */
export function validateParameters(parameters: unknown): SqlParameter[] {
  if (parameters === undefined) return [];
  if (!Array.isArray(parameters) || parameters.length === 0) {
    throw validation("1 validation error detected: Value at 'parameters' failed to satisfy constraint: Member must have length greater than or equal to 1");
  }
  const seen = new Set<string>();
  return parameters.map((p: { name?: unknown; value?: unknown }) => {
    if (typeof p?.name !== 'string' || !NAME.test(p.name)) {
      throw validation(
        `1 validation error detected: Value '${String(p?.name)}' at 'parameters.member.name' failed to satisfy constraint: Member must satisfy regular expression pattern: ^[0-9a-zA-Z_]+$`,
      );
    }
    if (typeof p.value !== 'string' || p.value.length === 0) {
      throw validation(
        `1 validation error detected: Value at 'parameters.member.value' of parameter '${p.name}' failed to satisfy constraint: Member must have length greater than or equal to 1`,
      );
    }
    if (seen.has(p.name)) throw validation(`Parameter '${p.name}' is supplied more than once.`);
    seen.add(p.name);
    return { name: p.name, value: p.value };
  });
}

/**
 * Rewrites `:name` to `$n`. Every referenced name must be supplied; checking
 * that every supplied parameter is referenced is up to the caller (a batch
 * shares one list across its statements).
 */
export function translate(sql: string, parameters: SqlParameter[]): TranslatedSql {
  const byName = new Map(parameters.map((p) => [p.name, p.value]));
  const { text, names } = toPositional(sql);
  const values = names.map((name) => {
    const value = byName.get(name);
    if (value === undefined) throw validation(`Parameter '${name}' is referenced in the SQL statement but no value is supplied.`);
    return value;
  });
  return { text, values };
}

/** Fails when a supplied parameter is referenced by none of the statements. */
export function checkAllReferenced(sqls: string[], parameters: SqlParameter[]): void {
  const referenced = new Set(sqls.flatMap((sql) => [...referencedNames(sql)]));
  const unused = parameters.find((p) => !referenced.has(p.name));
  if (unused) throw validation(`Parameter '${unused.name}' is supplied but not referenced in the SQL statement.`);
}
