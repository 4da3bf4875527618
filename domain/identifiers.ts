import { ValidationError } from './errors.ts';
import { echo } from './text.ts';

/**
 * The one place identifiers and literal values become SQL text.
 *
 * Identifiers are restricted to lower-case unquoted Redshift names (Redshift
 * folds unquoted names to lower case) and at most 63 bytes, the PostgreSQL
 * limit the local engine shares (Redshift allows 127). Everything that
 * passes is then double-quoted anyway, so a reserved word is harmless.
 */
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;
export const MAX_IDENTIFIER_LENGTH = 63;

/** What is wrong with a name as an identifier, said after the name of the field; undefined when nothing is. */
export function identifierProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'must be a non-empty string';
  if (name.length > MAX_IDENTIFIER_LENGTH) return `${echo(name)} is longer than ${MAX_IDENTIFIER_LENGTH} characters`;
  if (!IDENTIFIER.test(name)) {
    return `${echo(name)} is not allowed: use lower-case letters, digits and underscores, starting with a letter or underscore`;
  }
  return undefined;
}

export function validateIdentifier(name: unknown, what = 'identifier'): string {
  const problem = identifierProblem(name);
  if (problem !== undefined) throw new ValidationError(`${what} ${problem}`);
  return name as string;
}

/** Validates and double-quotes one identifier: `sales` -> `"sales"`. */
export function quoteIdent(name: string): string {
  return `"${validateIdentifier(name)}"`;
}

/**
 * A name read from the warehouse's catalog (a grantee, a view, a column, a key, a
 * policy), double-quoted: any delimited identifier Redshift allows, UTF-8
 * printable, a double quote doubled, at most 127 bytes
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_names.html), e.g.
 * `AWSIDC:alice@example.com`. The tool's own names keep the stricter quoteIdent.
 */
export function quoteCatalogName(name: string): string {
  const problem = catalogNameProblem(name);
  if (problem !== undefined) throw new ValidationError(`catalog name ${problem}`);
  return `"${name.replaceAll('"', '""')}"`;
}

/** What is wrong with a catalog name; undefined when nothing is. */
export function catalogNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'must be a non-empty string';
  if (Buffer.byteLength(name, 'utf8') > MAX_USER_NAME_LENGTH) return `${echo(name)} is longer than ${MAX_USER_NAME_LENGTH} bytes`;
  if (/[\u0000-\u001f\u007f]/.test(name)) return `${echo(name)} holds a control character, which Redshift's names cannot`;
  return undefined;
}

/** `"schema"."name"` of a relation read from the catalog (quoteCatalogName). */
export function qualifiedCatalogName(schema: string, name: string): string {
  return `${quoteCatalogName(schema)}.${quoteCatalogName(name)}`;
}

/** A table or view by schema and name, as the catalog and the grants name it. */
export interface Relation {
  readonly schema: string;
  readonly table: string;
}

/** `"schema"."table"` */
export function qualifiedName(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

export type LiteralValue = string | number | boolean | Date | null;

/**
 * Renders a value as a SQL literal. Only for BatchExecuteStatement, which
 * takes no parameters (single statements always use `:name` parameters).
 * Values here are the tool's own (batch ids, validated names, timestamps,
 * counts); a backslash or control character is refused rather than escaped
 * because Redshift and PostgreSQL treat backslashes in literals differently.
 */
export function sqlLiteral(value: LiteralValue): string {
  if (value === null) return 'NULL';
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new ValidationError(`cannot render ${value} as a SQL literal`);
    return String(value);
  }
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new ValidationError('cannot render an invalid date as a SQL literal');
    return `CAST('${formatTimestamp(value)}' AS timestamp)`;
  }
  if (/[\\\u0000-\u001f]/.test(value)) {
    throw new ValidationError(`refusing to render a string with a backslash or control character as a SQL literal`);
  }
  return `'${value.replaceAll("'", "''")}'`;
}

/** UTC timestamp in the text form both Redshift and PostgreSQL read: `2026-01-02 03:04:05.678`. */
export function formatTimestamp(date: Date): string {
  return date.toISOString().replace('T', ' ').replace('Z', '');
}

/**
 * Database user names: `IAMR:<role name>` or `IAM:<user name>` (IAM's characters,
 * at most 64), or a plain lower-case identifier; at most 127 bytes
 * (https://docs.aws.amazon.com/redshift/latest/dg/r_names.html). Always
 * double-quoted; a double quote is never part of one. Why: docs/decisions/identifiers.md
 */
const IAM_USER = /^IAMR?:[A-Za-z0-9+=,.@_-]{1,64}$/;
export const MAX_USER_NAME_LENGTH = 127;

/** What is wrong with a database user name; undefined when nothing is. */
export function databaseUserProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'must be a non-empty string';
  if (IAM_USER.test(name)) return undefined;
  if (name.length > MAX_USER_NAME_LENGTH) return `${echo(name)} is longer than ${MAX_USER_NAME_LENGTH} characters`;
  if (!IDENTIFIER.test(name)) {
    return `${echo(name)} is not allowed: use lower-case letters, digits and underscores, or IAMR:<IAM role name> (IAM:<IAM user name>) as the Data API names an IAM identity`;
  }
  return undefined;
}

/** Validates and double-quotes a database user: `"IAMR:atomic-publish-steps"`. */
export function quoteUser(name: string): string {
  const problem = databaseUserProblem(name);
  if (problem !== undefined) throw new ValidationError(`database user ${problem}`);
  return `"${name}"`;
}
