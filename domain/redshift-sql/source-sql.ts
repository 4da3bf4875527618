// What a pipeline's sourceSql reads.
import { relations } from './ast.ts';
import { parseSql } from './parser.ts';

export interface SourceTable {
  schema?: string;
  table: string;
}

/**
 * Every table or view the query reads (its range variables other than the
 * names of its common table expressions), each once, in order of first
 * appearance in the text. Unquoted names come back folded to lower case, as the
 * warehouse resolves them. Throws `SqlSyntaxError` if the text does not parse.
 */
export function sourceTables(sourceSql: string): SourceTable[] {
  const { statements } = parseSql(sourceSql);
  const seen = new Map<string, SourceTable>();
  for (const range of relations(statements.map((s) => s.node))) {
    const table = String(range.relname);
    const schema = typeof range.schemaname === 'string' ? range.schemaname : undefined;
    const key = JSON.stringify([schema ?? null, table]);
    if (!seen.has(key)) seen.set(key, schema === undefined ? { table } : { schema, table });
  }
  return [...seen.values()];
}
