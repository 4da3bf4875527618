// What PostgreSQL accepts and Amazon Redshift does not, as data: each entry
// names the construct (the name the refusal message uses), says how to
// recognise it in libpg-query's parse tree, and cites the Redshift page it
// comes from. check.ts applies the list; the local Data API endpoint and
// the sourceSql check both refuse what it finds.

export interface Citation {
  readonly title: string;
  readonly url: string;
}

/**
 * How a construct shows in the parse tree. Names compare in lower case;
 * a function matches by its last name part, so `pg_catalog.string_agg` is
 * `string_agg`.
 */
export type Detection =
  /**
   * A node of one of these kinds anywhere (statement kinds included); with
   * `field`, only when that field is present and not empty; with `values`
   * too, only when it holds one of them.
   */
  | { readonly node: string | readonly string[]; readonly field?: string; readonly values?: readonly string[] }
  /** Any node whose kind starts with this prefix (e.g. the SQL/JSON nodes). */
  | { readonly nodePrefix: string }
  /**
   * A call of one of these functions, or of one whose name starts with a
   * prefix, or one of these SQL value functions (`SQLValueFunction.op`,
   * e.g. `SVFOP_CURRENT_TIMESTAMP`: CURRENT_TIMESTAMP written without
   * parentheses). With `onlyWithoutTables`, only in a statement that reads
   * a user table or a system table (STL, STV, SVL, SVV, SYS).
   */
  | {
      readonly functions: readonly string[];
      readonly prefixes?: readonly string[];
      readonly valueFunctions?: readonly string[];
      readonly onlyWithoutTables?: boolean;
    }
  /**
   * A catalog relation (pg_*, information_schema) other than these in a
   * statement that also reads a user table.
   */
  | { readonly catalogJoinableOnly: readonly string[] }
  /** An operator by its symbol, e.g. `->`. */
  | { readonly operators: readonly string[] }
  /** A type name (casts, column definitions, declarations). */
  | { readonly types: readonly string[] }
  /** A type with array bounds: `int[]`, `text ARRAY`. */
  | { readonly arrayTypes: true }
  /** A PL/pgSQL statement of one of these kinds inside a function or procedure body. */
  | { readonly plpgsql: readonly string[] }
  /** A PL/pgSQL RAISE whose arguments are not all plain variables, or that has no format or has USING options. */
  | { readonly plpgsqlRaise: 'variables-only' }
  /** A PL/pgSQL GET DIAGNOSTICS other than the one built-in Redshift lists, `GET DIAGNOSTICS integer_var := ROW_COUNT`. */
  | { readonly plpgsqlDiagnostics: 'row-count-only' };

export interface UnsupportedConstruct {
  /** The name the refusal uses: `ERROR: <construct> is not supported on Amazon Redshift`. */
  readonly construct: string;
  readonly detect: Detection;
  /** Where Redshift says so. */
  readonly citation: Citation;
  /** What to use instead, or why; appended to the message. */
  readonly hint?: string;
}

const DOCS = 'https://docs.aws.amazon.com/redshift/latest/dg';

export const REDSHIFT_PAGES = {
  features: { title: 'Unsupported PostgreSQL features', url: `${DOCS}/c_unsupported-postgresql-features.html` },
  functions: { title: 'Unsupported PostgreSQL functions', url: `${DOCS}/c_unsupported-postgresql-functions.html` },
  dataTypes: { title: 'Unsupported PostgreSQL data types', url: `${DOCS}/c_unsupported-postgresql-datatypes.html` },
  leaderNode: { title: 'SQL functions supported on the leader node', url: `${DOCS}/c_sql-functions-leader-node.html` },
  leaderNodeOnly: { title: 'Leader node–only functions', url: `${DOCS}/c_SQL_functions_leader_node_only.html` },
  dateFunctions: { title: 'Date and time functions', url: `${DOCS}/Date_functions_header.html` },
  catalogJoins: { title: 'Querying the catalog tables', url: `${DOCS}/c_join_PG.html` },
  plpgsql: { title: 'Supported PL/pgSQL statements', url: `${DOCS}/c_PLpgSQL-statements.html` },
  plpgsqlStructure: { title: 'Structure of PL/pgSQL', url: `${DOCS}/c_PLpgSQL-structure.html` },
  sqlCommands: { title: 'SQL commands', url: `${DOCS}/c_SQL_commands.html` },
  insert: { title: 'INSERT', url: `${DOCS}/r_INSERT_30.html` },
  truncate: { title: 'TRUNCATE', url: `${DOCS}/r_TRUNCATE.html` },
  vacuum: { title: 'VACUUM', url: `${DOCS}/r_VACUUM_command.html` },
  tableConstraints: { title: 'Table constraints', url: `${DOCS}/t_Defining_constraints.html` },
} as const satisfies Record<string, Citation>;

const P = REDSHIFT_PAGES;

/** PostgreSQL's JSON functions; Redshift has its own (JSON_EXTRACT_PATH_TEXT, JSON_PARSE, ...), which are not listed. */
const POSTGRES_JSON_FUNCTIONS = [
  'to_json',
  'to_jsonb',
  'row_to_json',
  'array_to_json',
  'json_agg',
  'json_object_agg',
  'json_build_object',
  'json_build_array',
  'json_object',
  'json_array_elements',
  'json_array_elements_text',
  'json_each',
  'json_each_text',
  'json_extract_path',
  'json_object_keys',
  'json_populate_record',
  'json_populate_recordset',
  'json_to_record',
  'json_to_recordset',
  'json_typeof',
  'json_strip_nulls',
];

/** What Redshift reports for a leader-node function in a query the compute nodes run. */
const LEADER_NODE_ERROR = 'Redshift fails it with "Specified types or functions (one per INFO message) not supported on Amazon Redshift tables"';
const LEADER_NODE_HINT = `it runs only on the leader node, in a statement that reads no user table and no system table (STL, STV, SVL, SVV, SYS); ${LEADER_NODE_ERROR}`;

/**
 * Redshift's leader-node-only functions ("Leader node–only functions"; the
 * date functions also in "Date and time functions", which adds
 * LOCALTIMESTAMP): each fails in a statement that reads a user or system
 * table, and runs in one that reads catalog tables only or no table.
 * `current` lists the SQL value functions PostgreSQL parses the keyword
 * forms as (CURRENT_TIMESTAMP without parentheses, CURRENT_SCHEMA).
 */
const LEADER_NODE_ONLY: readonly { name: string; functions: readonly string[]; current?: readonly string[]; citation: Citation; hint?: string }[] = [
  { name: 'CURRENT_SCHEMA', functions: ['current_schema'], current: ['SVFOP_CURRENT_SCHEMA'], citation: P.leaderNode },
  { name: 'CURRENT_SCHEMAS', functions: ['current_schemas'], citation: P.leaderNodeOnly },
  { name: 'HAS_DATABASE_PRIVILEGE', functions: ['has_database_privilege'], citation: P.leaderNodeOnly },
  { name: 'HAS_SCHEMA_PRIVILEGE', functions: ['has_schema_privilege'], citation: P.leaderNodeOnly },
  { name: 'HAS_TABLE_PRIVILEGE', functions: ['has_table_privilege'], citation: P.leaderNodeOnly },
  { name: 'SUBSTR', functions: ['substr'], citation: P.leaderNode, hint: 'use SUBSTRING' },
  { name: 'FACTORIAL', functions: ['factorial'], citation: P.leaderNodeOnly },
  { name: 'AGE', functions: ['age'], citation: P.dateFunctions, hint: 'use DATEDIFF' },
  { name: 'CURRENT_TIME', functions: [], current: ['SVFOP_CURRENT_TIME', 'SVFOP_CURRENT_TIME_N'], citation: P.dateFunctions, hint: 'use GETDATE or SYSDATE' },
  {
    name: 'CURRENT_TIMESTAMP',
    functions: [],
    current: ['SVFOP_CURRENT_TIMESTAMP', 'SVFOP_CURRENT_TIMESTAMP_N'],
    citation: P.dateFunctions,
    hint: 'use GETDATE or SYSDATE',
  },
  { name: 'LOCALTIME', functions: [], current: ['SVFOP_LOCALTIME', 'SVFOP_LOCALTIME_N'], citation: P.dateFunctions, hint: 'use GETDATE or SYSDATE' },
  {
    name: 'LOCALTIMESTAMP',
    functions: [],
    current: ['SVFOP_LOCALTIMESTAMP', 'SVFOP_LOCALTIMESTAMP_N'],
    citation: P.dateFunctions,
    hint: 'use GETDATE or SYSDATE',
  },
  { name: 'ISFINITE', functions: ['isfinite'], citation: P.dateFunctions },
  { name: 'NOW', functions: ['now'], citation: P.dateFunctions, hint: 'use GETDATE or SYSDATE' },
  { name: 'GET_BIT', functions: ['get_bit', 'getbit'], citation: P.leaderNodeOnly },
  { name: 'GET_BYTE', functions: ['get_byte'], citation: P.leaderNodeOnly },
  { name: 'SET_BIT', functions: ['set_bit'], citation: P.leaderNodeOnly },
  { name: 'SET_BYTE', functions: ['set_byte'], citation: P.leaderNodeOnly },
  { name: 'TO_ASCII', functions: ['to_ascii'], citation: P.leaderNodeOnly },
];

/**
 * The catalog tables and views "Querying the catalog tables" lists as
 * completely or partially accessible in a join with Redshift tables; any
 * other is "either inaccessible or unlikely to be useful" there (PG_STATS
 * is its example), though any can be queried without such a join.
 */
const CATALOG_JOINABLE = [
  'pg_attribute',
  'pg_cast',
  'pg_depend',
  'pg_description',
  'pg_locks',
  'pg_opclass',
  'pg_class',
  'pg_constraint',
  'pg_database',
  'pg_group',
  'pg_language',
  'pg_namespace',
  'pg_operator',
  'pg_proc',
  'pg_settings',
  'pg_statistic',
  'pg_tables',
  'pg_type',
  'pg_user',
  'pg_views',
];

/**
 * The PL/pgSQL statements Redshift's page lists (assignment, SELECT INTO and
 * other SQL, NULL, EXECUTE, RETURN, IF, CASE, loops and EXIT/CONTINUE,
 * cursors, RAISE, COMMIT/ROLLBACK); every other kind is refused, but GET
 * DIAGNOSTICS of ROW_COUNT, which the structure page lists among the built-in variables.
 */
const PLPGSQL_NOT_LISTED = [
  ['PLpgSQL_stmt_perform', 'PERFORM'],
  ['PLpgSQL_stmt_foreach_a', 'FOREACH over an array'],
  ['PLpgSQL_stmt_assert', 'ASSERT'],
  ['PLpgSQL_stmt_return_next', 'RETURN NEXT'],
  ['PLpgSQL_stmt_return_query', 'RETURN QUERY'],
] as const;

export const UNSUPPORTED: readonly UnsupportedConstruct[] = [
  { construct: 'ON CONFLICT', detect: { node: 'OnConflictClause' }, citation: P.insert, hint: 'Redshift has MERGE, or DELETE then INSERT in one transaction' },
  { construct: 'RETURNING', detect: { node: 'ReturningClause' }, citation: P.insert, hint: 'read the rows back with a SELECT' },
  { construct: 'CREATE SEQUENCE', detect: { node: 'CreateSeqStmt' }, citation: P.features, hint: 'use an IDENTITY column' },
  {
    construct: 'sequence functions (NEXTVAL, CURRVAL, SETVAL, LASTVAL)',
    detect: { functions: ['nextval', 'currval', 'setval', 'lastval'] },
    citation: P.functions,
  },
  {
    construct: 'SERIAL types',
    detect: { types: ['serial', 'serial2', 'serial4', 'serial8', 'smallserial', 'bigserial'] },
    citation: P.dataTypes,
    hint: 'use an IDENTITY column',
  },
  { construct: 'ARRAY constructors', detect: { node: 'A_ArrayExpr' }, citation: P.features },
  { construct: 'ARRAY subqueries', detect: { node: 'SubLink', field: 'subLinkType', values: ['ARRAY_SUBLINK'] }, citation: P.features },
  { construct: 'array types', detect: { arrayTypes: true }, citation: P.dataTypes },
  { construct: 'ARRAY_AGG', detect: { functions: ['array_agg'] }, citation: P.functions, hint: 'use LISTAGG' },
  {
    construct: 'array functions',
    detect: { functions: ['unnest', 'array_length', 'array_append', 'array_cat', 'string_to_array', 'array_to_string', 'cardinality'] },
    citation: P.functions,
  },
  { construct: 'JSON types', detect: { types: ['json', 'jsonb'] }, citation: P.dataTypes, hint: 'use SUPER' },
  {
    construct: 'JSON functions',
    detect: { functions: POSTGRES_JSON_FUNCTIONS, prefixes: ['jsonb_'] },
    citation: P.dataTypes,
    hint: 'use SUPER and Redshift JSON functions such as JSON_EXTRACT_PATH_TEXT',
  },
  { construct: 'JSON operators', detect: { operators: ['->', '->>', '#>', '#>>'] }, citation: P.dataTypes },
  { construct: 'SQL/JSON constructors', detect: { nodePrefix: 'Json' }, citation: P.dataTypes },
  { construct: 'CREATE INDEX', detect: { node: 'IndexStmt' }, citation: P.features, hint: 'Redshift has sort keys and distribution keys instead' },
  {
    construct: 'GENERATE_SERIES over table data',
    detect: { functions: ['generate_series'], onlyWithoutTables: true },
    citation: P.functions,
    hint: 'it runs only on the leader node, in statements that read no table (see "SQL functions supported on the leader node")',
  },
  ...LEADER_NODE_ONLY.map(({ name, functions, current, citation, hint }) => ({
    construct: `${name} with a table`,
    detect: { functions, ...(current ? { valueFunctions: current } : {}), onlyWithoutTables: true },
    citation,
    hint: `${hint ? `${hint}; ` : ''}${LEADER_NODE_HINT}`,
  })),
  {
    construct: 'catalog tables Redshift does not join with user tables',
    detect: { catalogJoinableOnly: CATALOG_JOINABLE },
    citation: P.catalogJoins,
    hint: 'read it in a statement that reads no user table',
  },
  { construct: 'STRING_AGG', detect: { functions: ['string_agg'] }, citation: P.functions, hint: 'use LISTAGG' },
  { construct: 'PG_SLEEP', detect: { functions: ['pg_sleep', 'pg_sleep_for', 'pg_sleep_until'] }, citation: P.functions },
  {
    construct: 'advisory locks',
    detect: { functions: [], prefixes: ['pg_advisory_', 'pg_try_advisory_'] },
    citation: P.functions,
    hint: 'use LOCK on a table',
  },
  {
    construct: 'IS DISTINCT FROM',
    detect: { node: 'A_Expr', field: 'kind', values: ['AEXPR_DISTINCT', 'AEXPR_NOT_DISTINCT'] },
    citation: P.functions,
    hint: 'compare with = and IS NULL',
  },
  { construct: 'CLOCK_TIMESTAMP', detect: { functions: ['clock_timestamp'] }, citation: P.functions, hint: 'use GETDATE or SYSDATE' },
  { construct: 'CREATE TRIGGER', detect: { node: 'CreateTrigStmt' }, citation: P.features },
  { construct: 'table inheritance', detect: { node: 'CreateStmt', field: 'inhRelations' }, citation: P.features },
  { construct: 'table partitioning', detect: { node: 'CreateStmt', field: 'partspec' }, citation: P.features },
  { construct: 'CREATE TYPE AS (composite type)', detect: { node: 'CompositeTypeStmt' }, citation: P.dataTypes },
  { construct: 'CREATE TYPE AS ENUM', detect: { node: 'CreateEnumStmt' }, citation: P.dataTypes },
  { construct: 'CREATE TYPE AS RANGE', detect: { node: 'CreateRangeStmt' }, citation: P.dataTypes },
  { construct: 'CREATE TYPE (base type)', detect: { node: 'DefineStmt', field: 'kind', values: ['OBJECT_TYPE'] }, citation: P.dataTypes },
  { construct: 'CREATE DOMAIN', detect: { node: 'CreateDomainStmt' }, citation: P.sqlCommands },
  { construct: 'DO blocks', detect: { node: 'DoStmt' }, citation: P.sqlCommands, hint: 'use a stored procedure and CALL' },
  { construct: 'LISTEN', detect: { node: 'ListenStmt' }, citation: P.sqlCommands },
  { construct: 'UNLISTEN', detect: { node: 'UnlistenStmt' }, citation: P.sqlCommands },
  { construct: 'NOTIFY', detect: { node: 'NotifyStmt' }, citation: P.sqlCommands },
  { construct: 'PG_NOTIFY', detect: { functions: ['pg_notify'] }, citation: P.sqlCommands },
  ...PLPGSQL_NOT_LISTED.map(([kind, construct]) => ({
    construct: `PL/pgSQL ${construct}`,
    detect: { plpgsql: [kind] },
    citation: P.plpgsql,
  })),
  {
    construct: 'PL/pgSQL GET DIAGNOSTICS other than integer_var := ROW_COUNT',
    detect: { plpgsqlDiagnostics: 'row-count-only' },
    citation: P.plpgsqlStructure,
  },
  {
    construct: 'PL/pgSQL RAISE with expressions',
    detect: { plpgsqlRaise: 'variables-only' },
    citation: P.plpgsql,
    hint: 'RAISE takes a level, a format and plain variables: assign an expression to a variable first',
  },
];

/**
 * Statements that end the open transaction on Redshift: refused inside a
 * multi-statement TRANSACTION batch, whose atomicity they would break;
 * single statements and AUTO_COMMIT batches run them.
 */
export const ENDS_TRANSACTION: readonly UnsupportedConstruct[] = [
  {
    construct: 'TRUNCATE',
    detect: { node: 'TruncateStmt' },
    citation: P.truncate,
    hint: 'it commits the transaction it runs in, so the batch would no longer be atomic; use DELETE inside a transaction',
  },
  {
    construct: 'VACUUM',
    detect: { node: 'VacuumStmt', field: 'is_vacuumcmd' },
    citation: P.vacuum,
    hint: 'it cannot run inside a transaction block; run it as a statement of its own',
  },
];
