// PostgreSQL's own parser (libpg-query, compiled to WebAssembly) for the SQL
// this project sends to Redshift. Redshift's dialect descends from
// PostgreSQL 8.0: what it accepts parses here, once the few words of its
// own that PostgreSQL's grammar rejects are rewritten (postgres-grammar.ts,
// whose parseSql reads a text as the Data API receives it), and what it
// refuses is then recognised in the tree (see unsupported.ts).
import { loadModule, parsePlPgSQLSync, parseSync, scanSync } from 'libpg-query';

// The WebAssembly module loads once, when this module is first imported, so
// that parsing is synchronous everywhere after (spec validation runs at
// import time of pipelines/index.ts).
await loadModule();

/** A parse tree node as libpg-query returns it: `{ Kind: fields }`. */
export type AstNode = Record<string, unknown>;

export interface ParsedStatement {
  /** The statement's node, e.g. `{ SelectStmt: {...} }`. */
  node: AstNode;
  /** The statement's own text (without the separating `;`). */
  text: string;
}

/** The text is not SQL PostgreSQL's grammar accepts. */
export class SqlSyntaxError extends Error {
  override readonly name = 'SqlSyntaxError';
}

/** Parses a text that already uses `$n` parameters and PostgreSQL's grammar (what the local engine runs). */
export function parsePositional(text: string): ParsedStatement[] {
  let tree: { stmts?: { stmt?: AstNode; stmt_location?: number; stmt_len?: number }[] };
  try {
    tree = parseSync(text);
  } catch (error) {
    throw new SqlSyntaxError((error as Error).message, { cause: error });
  }
  const bytes = Buffer.from(text);
  return (tree.stmts ?? []).map(({ stmt, stmt_location: start = 0, stmt_len: length = 0 }) => ({
    node: stmt ?? {},
    text: bytes
      .subarray(start, length === 0 ? undefined : start + length)
      .toString()
      .trim(),
  }));
}

/**
 * The PL/pgSQL functions of a CREATE FUNCTION or CREATE PROCEDURE text
 * (`{ PLpgSQL_function: {...} }`), their bodies as PL/pgSQL statement nodes.
 */
export function parsePlPgSql(createRoutine: string): AstNode[] {
  try {
    return (parsePlPgSQLSync(createRoutine) as unknown as { plpgsql_funcs?: AstNode[] }).plpgsql_funcs ?? [];
  } catch (error) {
    throw new SqlSyntaxError((error as Error).message, { cause: error });
  }
}

/** A lexical token; offsets, like every parse tree location, count UTF-8 bytes. */
export interface Token {
  start: number;
  /** Exclusive. */
  end: number;
  text: string;
}

/** The tokens of a `$n`-parameter text (comments and whitespace left out). */
export function scanTokens(text: string): Token[] {
  return scanSync(text).tokens.map(({ start, end, text: token }) => ({ start, end, text: token }));
}
