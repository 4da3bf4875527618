// A pipeline's sourceSql: what it reads, and whether it is a query the
// warehouse can run inside the statements Plan and LoadChunk build. Each
// text is parsed as the local endpoint parses it, Redshift's own syntax
// included (postgres-grammar.ts).
import { kindOf, nodesOf, relations } from './ast.ts';
import { checkStatements } from './check.ts';
import { type ParsedStatement, SqlSyntaxError } from './parser.ts';
import { type ParsedSql, parseSql, redshiftSyntaxConstructs } from './postgres-grammar.ts';

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

/** The last name of a column reference (`x.ordered_at` is `ordered_at`), folded to lower case as unquoted names resolve. */
function columnName(node: unknown): string | undefined {
  const fields = (node as { ColumnRef?: { fields?: { String?: { sval?: string } }[] } } | undefined)?.ColumnRef?.fields;
  return fields?.at(-1)?.String?.sval?.toLowerCase();
}

const isParameter = (node: unknown) => node !== null && typeof node === 'object' && 'ParamRef' in node;

/**
 * The columns the query compares with its parameters (`:start`, `:end`):
 * `t >= :start`, `:end > t`, `t BETWEEN :start AND :end`. A row whose such
 * column is NULL passes none of these comparisons.
 */
export function intervalFilterColumns(sourceSql: string): string[] {
  const found = new Set<string>();
  for (const expr of nodesOf(
    parseSql(sourceSql).statements.map((s) => s.node),
    'A_Expr',
  )) {
    const right = expr.rexpr as { List?: { items?: unknown[] } } | undefined;
    const parameterOnRight = isParameter(right) || (right?.List?.items ?? []).some(isParameter);
    const column = parameterOnRight ? columnName(expr.lexpr) : isParameter(expr.lexpr) ? columnName(expr.rexpr) : undefined;
    if (column !== undefined) found.add(column);
  }
  return [...found];
}

/** Whether the query tests one of `columns` for NULL anywhere (`IS NULL`, `IS NOT NULL`), qualified or not. */
export function testsForNull(sourceSql: string, columns: readonly string[]): boolean {
  const names = new Set(columns.map((c) => c.toLowerCase()));
  return nodesOf(
    parseSql(sourceSql).statements.map((s) => s.node),
    'NullTest',
  ).some((test) => {
    const name = columnName(test.arg);
    return name !== undefined && names.has(name);
  });
}

/**
 * What is wrong with a pipeline's source query, said after the field name
 * (`sourceSql <problem>`); undefined when nothing is. `wrapped` are the
 * statements Plan and LoadChunk build around it (the source replaced by
 * itself inside `(...) AS src`): each must parse as one statement whose
 * `src` subquery is exactly the source, so nothing in the source escapes
 * its parentheses.
 */
export function sourceSqlProblem(sourceSql: string, wrapped: readonly string[]): string | undefined {
  return readOnlySelectProblem(sourceSql, wrapped, {
    notSelect: 'must be a SELECT statement',
    parameters: (names) => {
      const missing = BOUND.filter((name) => !names.includes(name)).map((name) => `:${name}`);
      if (missing.length > 0) return `must use the ${missing.join(' and ')} placeholder${missing.length > 1 ? 's' : ''} (rows in [:start, :end))`;
      const extra = names.filter((name) => !BOUND.includes(name)).map((name) => `:${name}`);
      return extra.length > 0 ? `uses ${extra.join(', ')}, but only :start and :end are bound` : undefined;
    },
    escaped: 'must stay inside the parentheses Plan and LoadChunk wrap it in (as "(<sourceSql>) AS src")',
  });
}

/** How a query is judged: its messages, and what its parameters may be. */
interface SelectRules {
  readonly notSelect: string;
  readonly parameters: (names: readonly string[]) => string | undefined;
  readonly escaped: string;
}

/** One read-only SELECT that Redshift runs, with the parameters `rules` allow, staying inside `(...) AS src` in each of `wrapped`. */
function readOnlySelectProblem(sql: string, wrapped: readonly string[], rules: SelectRules): string | undefined {
  if (sql.trim() === '') return rules.notSelect;
  let parsed: ParsedSql;
  try {
    parsed = parseSql(sql);
  } catch (error) {
    if (error instanceof SqlSyntaxError) return `does not parse: ${error.message}`;
    throw error;
  }
  const { statements, parameterNames } = parsed;
  if (statements.length > 1) return 'must be one statement (no ";")';
  const [statement] = statements;
  if (!statement || kindOf(statement.node) !== 'SelectStmt') return rules.notSelect;
  const select = statement.node.SelectStmt as Record<string, unknown>;
  if (select.intoClause) return 'must not use SELECT INTO';
  if (nodesOf(statement.node, 'LockingClause').length > 0) return 'must not lock rows (FOR UPDATE, FOR SHARE)';
  if (WRITES.some((kind) => nodesOf(statement.node, kind).length > 0)) return 'must only read (no INSERT, UPDATE, DELETE or MERGE)';
  const parameters = rules.parameters(parameterNames);
  if (parameters !== undefined) return parameters;

  const unsupported = checkStatements(statements, redshiftSyntaxConstructs(sql))[0];
  if (unsupported) {
    return `uses ${unsupported.construct}, which Amazon Redshift does not support (${unsupported.citation.title}: ${unsupported.citation.url})`;
  }
  const source = withoutLocations(statement.node);
  for (const text of wrapped) {
    if (!wrapsExactly(text, source)) return rules.escaped;
  }
  return undefined;
}

const BOUND = ['start', 'end'];
const WRITES = ['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt'];
const SOURCE_ALIAS = 'src';

function wrapsExactly(text: string, source: string): boolean {
  let statements: ParsedStatement[];
  try {
    statements = parseSql(text).statements;
  } catch (error) {
    if (error instanceof SqlSyntaxError) return false;
    throw error;
  }
  if (statements.length !== 1) return false;
  const subqueries = nodesOf(statements, 'RangeSubselect').filter((range) => (range.alias as { aliasname?: string } | undefined)?.aliasname === SOURCE_ALIAS);
  return subqueries.length === 1 && withoutLocations(subqueries[0]!.subquery) === source;
}

/** A tree as JSON without text positions, to compare the same SQL at two places. */
function withoutLocations(node: unknown): string {
  return JSON.stringify(node, (key, value: unknown) => (key === 'location' || key.endsWith('_location') ? undefined : value));
}

/**
 * What is wrong with a declared check's SQL (checks.sql[].sql), said after
 * the field name; undefined when nothing is. `sql` has its staging
 * placeholder already replaced by a table name; `wrapped` are the
 * statements Reconcile builds around it (as `(<sql>) AS src`). It must be
 * one read-only SELECT that Redshift runs, without parameters (none are
 * bound), staying inside its parentheses.
 */
export function checkSqlProblem(sql: string, wrapped: readonly string[]): string | undefined {
  return readOnlySelectProblem(sql, wrapped, {
    notSelect: 'must be a SELECT statement returning the offending rows',
    parameters: (names) => (names.length > 0 ? `uses ${names.map((n) => `:${n}`).join(', ')}, but no parameters are bound` : undefined),
    escaped: 'must stay inside the parentheses Reconcile wraps it in (as "(<sql>) AS src")',
  });
}
