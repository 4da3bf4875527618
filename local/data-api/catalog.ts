// The Data API's metadata operations (ListDatabases, ListSchemas, ListTables,
// DescribeTable), answered synchronously from the catalog as the connecting
// user sees it, as information_schema decides: schemas it may use, tables
// and columns it holds a privilege on. Patterns are SQL LIKE patterns; the
// local system views' schema is never listed. Why: docs/decisions/catalog-visibility.md
// https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_ListTables.html
// https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_DescribeTable.html
import type pg from 'pg';
import { type ColumnMetadata, columnMetadata } from './fields.ts';
import { STAND_IN_SCHEMAS } from './system-views.ts';

/** One page: `limit` rows from `offset`, and whether more follow. */
export interface PageRequest {
  offset: number;
  limit: number;
}

export interface Page<T> {
  items: T[];
  more: boolean;
}

export interface TableMember {
  name: string;
  schema: string;
  /** TABLE, VIEW, SYSTEM TABLE, SYSTEM VIEW, LOCAL TEMPORARY, EXTERNAL TABLE. */
  type: string;
}

/** Schemas never listed: PostgreSQL's own storage schemas, and the local engine's. */
const HIDDEN_SCHEMAS = `n.nspname NOT IN ('pg_toast', ${STAND_IN_SCHEMAS.map((s) => `'${s}'`).join(', ')}) AND n.nspname NOT LIKE 'pg\\_temp\\_%' AND n.nspname NOT LIKE 'pg\\_toast\\_temp\\_%'`;

/** Schemas the user owns (through a role) or holds USAGE or CREATE on, as information_schema.schemata shows them. */
const VISIBLE_SCHEMA = `(pg_has_role(n.nspowner, 'USAGE') OR has_schema_privilege(n.oid, 'CREATE, USAGE'))`;

/** Relations the user owns or holds a privilege on, as information_schema.tables shows them. */
const VISIBLE_RELATION = `(pg_has_role(c.relowner, 'USAGE')
    OR has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
    OR has_any_column_privilege(c.oid, 'SELECT, INSERT, UPDATE, REFERENCES'))`;

const SYSTEM_SCHEMA = `n.nspname IN ('pg_catalog', 'information_schema')`;

// JDBC's table types, which the Data API reports (TableMember.type).
const TABLE_TYPE = `CASE
    WHEN c.relpersistence = 't' THEN 'LOCAL TEMPORARY'
    WHEN c.relkind = 'f' THEN 'EXTERNAL TABLE'
    WHEN c.relkind IN ('v', 'm') THEN CASE WHEN ${SYSTEM_SCHEMA} THEN 'SYSTEM VIEW' ELSE 'VIEW' END
    ELSE CASE WHEN ${SYSTEM_SCHEMA} THEN 'SYSTEM TABLE' ELSE 'TABLE' END
  END`;

// $1 limit, $2 offset.
const DATABASES_SQL = `
SELECT datname AS name FROM pg_database
 WHERE datallowconn AND NOT datistemplate AND has_database_privilege(datname, 'CONNECT')
 ORDER BY datname LIMIT $1 OFFSET $2`;

// $1 schema pattern ('%' for all), $2 limit, $3 offset.
const SCHEMAS_SQL = `
SELECT n.nspname AS name FROM pg_namespace n
 WHERE ${HIDDEN_SCHEMAS} AND ${VISIBLE_SCHEMA} AND n.nspname LIKE $1
 ORDER BY n.nspname LIMIT $2 OFFSET $3`;

// $1 schema pattern, $2 table pattern, $3 limit, $4 offset.
const TABLES_SQL = `
SELECT c.relname AS name, n.nspname AS schema, ${TABLE_TYPE} AS type
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
   AND ${HIDDEN_SCHEMAS} AND ${VISIBLE_SCHEMA} AND ${VISIBLE_RELATION}
   AND n.nspname LIKE $1 AND c.relname LIKE $2
 ORDER BY n.nspname, c.relname LIMIT $3 OFFSET $4`;

// $1 schema (NULL: any), $2 table (NULL: any), $3 limit, $4 offset. Columns
// the user holds a privilege on, as information_schema.columns shows them.
const COLUMNS_SQL = `
SELECT a.attname AS name, a.atttypid::int8 AS type_oid, a.atttypmod AS type_modifier, t.typname AS type_name,
       n.nspname AS schema_name, c.relname AS table_name, a.attnotnull AS not_null,
       pg_get_expr(d.adbin, d.adrelid) AS column_default
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attnum > 0 AND NOT a.attisdropped
   AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
   AND ${HIDDEN_SCHEMAS} AND ${VISIBLE_SCHEMA}
   AND (pg_has_role(c.relowner, 'USAGE') OR has_column_privilege(c.oid, a.attnum, 'SELECT, INSERT, UPDATE, REFERENCES'))
   AND ($1::text IS NULL OR n.nspname::text = $1::text) AND ($2::text IS NULL OR c.relname::text = $2::text)
 ORDER BY n.nspname, c.relname, a.attnum LIMIT $3 OFFSET $4`;

export async function listDatabases(db: pg.ClientBase, page: PageRequest): Promise<Page<string>> {
  return paged(
    page,
    (limit) => db.query<{ name: string }>(DATABASES_SQL, [limit, page.offset]),
    (r) => r.name,
  );
}

export async function listSchemas(db: pg.ClientBase, schemaPattern: string | undefined, page: PageRequest): Promise<Page<string>> {
  return paged(
    page,
    (limit) => db.query<{ name: string }>(SCHEMAS_SQL, [schemaPattern ?? '%', limit, page.offset]),
    (r) => r.name,
  );
}

export async function listTables(db: pg.ClientBase, patterns: { schema?: string; table?: string }, page: PageRequest): Promise<Page<TableMember>> {
  return paged(
    page,
    (limit) => db.query<TableMember>(TABLES_SQL, [patterns.schema ?? '%', patterns.table ?? '%', limit, page.offset]),
    (r) => ({ name: r.name, schema: r.schema, type: r.type }),
  );
}

/** The columns of the named table (any schema when none is named; every table when no table is), in the shape of GetStatementResult's column metadata. */
export async function describeColumns(db: pg.ClientBase, names: { schema?: string; table?: string }, page: PageRequest): Promise<Page<ColumnMetadata>> {
  return paged(
    page,
    (limit) => db.query<Record<string, string | null>>(COLUMNS_SQL, [names.schema ?? null, names.table ?? null, limit, page.offset]),
    (r) =>
      columnMetadata({
        name: r.name!,
        typeOid: Number(r.type_oid),
        typeModifier: Number(r.type_modifier),
        typeName: r.type_name!,
        table: {
          schemaName: r.schema_name!,
          tableName: r.table_name!,
          // The endpoint's pools hand every value over as PostgreSQL's text.
          notNull: r.not_null === 't' || (r.not_null as unknown) === true,
          ...(r.column_default !== null ? { columnDefault: r.column_default } : {}),
        },
      }),
  );
}

/** Runs `query` for one row more than the page holds, to tell whether another page follows. */
async function paged<R extends pg.QueryResultRow, T>(
  page: PageRequest,
  query: (limit: number) => Promise<pg.QueryResult<R>>,
  map: (row: R) => T,
): Promise<Page<T>> {
  const { rows } = await query(page.limit + 1);
  return { items: rows.slice(0, page.limit).map(map), more: rows.length > page.limit };
}
