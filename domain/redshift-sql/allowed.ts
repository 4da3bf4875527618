// What Redshift's SQL reference documents, as an allow-list: every
// statement's kind must be a Redshift command, and within the commands
// whose PostgreSQL forms go beyond Redshift's (ALTER TABLE, SET, DROP,
// transaction control, SELECT's clauses, type names), the form must be one
// the command's page lists. check.ts applies it after the refused
// constructs of unsupported.ts, whose messages stay as they are
// (docs/decisions/redshift-mode-of-the-local-engine.md).
import { kindOf, names, relationKind, relations, walk } from './ast.ts';
import { REDSHIFT_FUNCTIONS } from './functions.ts';
import type { AstNode } from './parser.ts';
import type { Finding } from './check.ts';
import type { Citation } from './unsupported.ts';

const DOCS = 'https://docs.aws.amazon.com/redshift/latest/dg';
const page = (title: string, file: string): Citation => ({ title, url: `${DOCS}/${file}.html` });

export const COMMAND_PAGES = {
  commands: page('SQL commands', 'c_SQL_commands'),
  alterTable: page('ALTER TABLE', 'r_ALTER_TABLE'),
  set: page('SET', 'r_SET'),
  configuration: page('Configuration reference', 'cm_chap_ConfigurationRef'),
  begin: page('BEGIN', 'r_BEGIN'),
  select: page('SELECT', 'r_SELECT_synopsis'),
  features: page('Unsupported PostgreSQL features', 'c_unsupported-postgresql-features'),
  dataTypes: page('Data types', 'c_Supported_data_types'),
  createTable: page('CREATE TABLE', 'r_CREATE_TABLE_NEW'),
  createFunction: page('CREATE FUNCTION', 'r_CREATE_FUNCTION'),
  functions: page('SQL functions reference', 'c_SQL_functions'),
} as const satisfies Record<string, Citation>;

const P = COMMAND_PAGES;

/**
 * libpg-query's statement kinds that are Redshift commands (the "SQL
 * commands" page), by the command they are. A kind missing here is refused.
 */
const COMMANDS: Record<string, string> = {
  SelectStmt: 'SELECT',
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
  CreateStmt: 'CREATE TABLE',
  CreateTableAsStmt: 'CREATE TABLE AS',
  ViewStmt: 'CREATE VIEW',
  RefreshMatViewStmt: 'REFRESH MATERIALIZED VIEW',
  DropStmt: 'DROP',
  AlterTableStmt: 'ALTER TABLE',
  RenameStmt: 'ALTER ... RENAME',
  AlterOwnerStmt: 'ALTER ... OWNER TO',
  GrantStmt: 'GRANT',
  GrantRoleStmt: 'GRANT ROLE',
  AlterDefaultPrivilegesStmt: 'ALTER DEFAULT PRIVILEGES',
  CreateSchemaStmt: 'CREATE SCHEMA',
  CommentStmt: 'COMMENT',
  LockStmt: 'LOCK',
  CreateFunctionStmt: 'CREATE FUNCTION',
  CallStmt: 'CALL',
  VariableSetStmt: 'SET',
  VariableShowStmt: 'SHOW',
  TransactionStmt: 'BEGIN',
  TruncateStmt: 'TRUNCATE',
  VacuumStmt: 'VACUUM',
  ExplainStmt: 'EXPLAIN',
  CreateRoleStmt: 'CREATE USER',
  AlterRoleStmt: 'ALTER USER',
  AlterRoleSetStmt: 'ALTER USER',
  DropRoleStmt: 'DROP USER',
  CreatedbStmt: 'CREATE DATABASE',
  DropdbStmt: 'DROP DATABASE',
  AlterDatabaseStmt: 'ALTER DATABASE',
  PrepareStmt: 'PREPARE',
  ExecuteStmt: 'EXECUTE',
  DeallocateStmt: 'DEALLOCATE',
  DeclareCursorStmt: 'DECLARE',
  FetchStmt: 'FETCH',
  ClosePortalStmt: 'CLOSE',
  CopyStmt: 'COPY',
};

/** PostgreSQL's names of statement kinds Redshift lacks, for the refusal (the rest are named by their kind). */
const POSTGRES_COMMANDS: Record<string, string> = {
  CreateExtensionStmt: 'CREATE EXTENSION',
  AlterSeqStmt: 'ALTER SEQUENCE',
  RuleStmt: 'CREATE RULE',
  ReindexStmt: 'REINDEX',
  ClusterStmt: 'CLUSTER',
  CheckPointStmt: 'CHECKPOINT',
  DiscardStmt: 'DISCARD',
  CreatePolicyStmt: 'CREATE POLICY',
  CreateTableSpaceStmt: 'CREATE TABLESPACE',
  CreateEventTrigStmt: 'CREATE EVENT TRIGGER',
  CreateForeignTableStmt: 'CREATE FOREIGN TABLE',
  AlterFunctionStmt: 'ALTER FUNCTION',
  LoadStmt: 'LOAD',
  AlterSystemStmt: 'ALTER SYSTEM',
  CreateStatsStmt: 'CREATE STATISTICS',
  SecLabelStmt: 'SECURITY LABEL',
  ConstraintsSetStmt: 'SET CONSTRAINTS',
  ImportForeignSchemaStmt: 'IMPORT FOREIGN SCHEMA',
  CreatePublicationStmt: 'CREATE PUBLICATION',
  CreateSubscriptionStmt: 'CREATE SUBSCRIPTION',
};

/** ALTER TABLE's subcommands in Redshift's syntax, one per statement. */
const ALTER_TABLE_SUBCOMMANDS: Record<string, string> = {
  AT_AddConstraint: 'ADD table_constraint',
  AT_DropConstraint: 'DROP CONSTRAINT',
  AT_ChangeOwner: 'OWNER TO',
  AT_AlterColumnType: 'ALTER COLUMN ... TYPE',
  AT_AddColumn: 'ADD COLUMN',
  AT_DropColumn: 'DROP COLUMN',
};

/** PostgreSQL's words for subcommands Redshift lacks, for the refusal. */
const POSTGRES_SUBCOMMANDS: Record<string, string> = {
  AT_ColumnDefault: 'ALTER COLUMN ... SET DEFAULT / DROP DEFAULT',
  AT_SetNotNull: 'ALTER COLUMN ... SET NOT NULL',
  AT_DropNotNull: 'ALTER COLUMN ... DROP NOT NULL',
  AT_AddIdentity: 'ALTER COLUMN ... ADD GENERATED AS IDENTITY',
  AT_SetStatistics: 'ALTER COLUMN ... SET STATISTICS',
  AT_SetStorage: 'ALTER COLUMN ... SET STORAGE',
  AT_EnableTrig: 'ENABLE TRIGGER',
  AT_DisableTrig: 'DISABLE TRIGGER',
  AT_EnableRowSecurity: 'ENABLE ROW LEVEL SECURITY',
  AT_DisableRowSecurity: 'DISABLE ROW LEVEL SECURITY',
  AT_SetLogged: 'SET LOGGED',
  AT_SetUnLogged: 'SET UNLOGGED',
  AT_SetTableSpace: 'SET TABLESPACE',
  AT_ValidateConstraint: 'VALIDATE CONSTRAINT',
};

/** The name of a PostgreSQL identity column, which Redshift writes IDENTITY(seed, step) (postgres-grammar.ts). */
export const IDENTITY_COLUMN = 'GENERATED ... AS IDENTITY';

/** The constraints ADD table_constraint takes (CREATE TABLE's table_constraint). */
const TABLE_CONSTRAINTS = new Set(['CONSTR_PRIMARY', 'CONSTR_UNIQUE', 'CONSTR_FOREIGN']);
/** A column's constraints in CREATE TABLE and ADD COLUMN: DEFAULT, IDENTITY, NULL, NOT NULL and the keys. */
const COLUMN_CONSTRAINTS = new Set(['CONSTR_NULL', 'CONSTR_NOTNULL', 'CONSTR_DEFAULT', 'CONSTR_PRIMARY', 'CONSTR_UNIQUE', 'CONSTR_FOREIGN']);

/** The VARCHAR spellings: ALTER COLUMN ... TYPE changes a VARCHAR's size only. */
const VARCHAR_TYPES = new Set(['varchar', 'character varying', 'nvarchar', 'text']);

/**
 * Configuration parameters SET and RESET take: the configuration reference's
 * pages (cm_chap_ConfigurationRef and one page per parameter).
 */
const PARAMETERS = new Set([
  'analyze_threshold_percent', 'cast_super_null_on_error', 'datashare_break_glass_session_var', 'datestyle',
  'default_geometry_encoding', 'describe_field_name_in_uppercase', 'downcase_delimited_identifier',
  'enable_case_sensitive_identifier', 'enable_case_sensitive_super_attribute', 'enable_result_cache_for_session',
  'enable_vacuum_boost', 'error_on_nondeterministic_update', 'extra_float_digits', 'json_serialization_enable',
  'json_serialization_parse_nested_strings', 'max_concurrency_scaling_clusters', 'mv_enable_aqmv_for_session',
  'navigate_super_null_on_error', 'parse_super_null_on_error', 'pg_federation_repeatable_read', 'query_group',
  'search_path', 'spectrum_enable_pseudo_columns', 'spectrum_enable_spectrum_oid', 'spectrum_query_maxerror',
  'statement_timeout', 'stored_proc_log_min_messages', 'timezone', 'wlm_query_slot_count',
  // SET SESSION AUTHORIZATION and SET SESSION CHARACTERISTICS have pages of their own.
  'session_authorization', 'session characteristics',
]);

/** Transaction control Redshift has: BEGIN / START TRANSACTION, COMMIT / END, ROLLBACK / ABORT. */
const TRANSACTION_KINDS = new Set(['TRANS_STMT_BEGIN', 'TRANS_STMT_START', 'TRANS_STMT_COMMIT', 'TRANS_STMT_ROLLBACK']);

/** DROP's object kinds with a Redshift command (DROP TABLE, VIEW, MATERIALIZED VIEW, SCHEMA, FUNCTION, PROCEDURE, DATABASE). */
const DROPPABLE = new Set(['OBJECT_TABLE', 'OBJECT_VIEW', 'OBJECT_MATVIEW', 'OBJECT_SCHEMA', 'OBJECT_FUNCTION', 'OBJECT_PROCEDURE']);

/**
 * Type names Redshift has ("Data types"), as PostgreSQL's parser spells
 * them (`integer` is `pg_catalog.int4`). Catalog types (`regclass`, `oid`,
 * `name`) are there for the catalog queries the leader node runs.
 */
const TYPES = new Set([
  'int2', 'smallint', 'int4', 'int', 'integer', 'int8', 'bigint', 'numeric', 'decimal', 'float4', 'real', 'float8', 'float',
  'double precision', 'bool', 'boolean', 'bpchar', 'char', 'character', 'nchar', 'varchar', 'character varying', 'nvarchar',
  'text', 'date', 'time', 'timetz', 'timestamp', 'timestamptz', 'interval', 'super', 'varbyte', 'varbinary', 'binary varying',
  'geometry', 'geography', 'hllsketch', 'regclass', 'oid', 'name',
]);

/** Whatever in `statement` Redshift's SQL reference does not document, each construct once. */
export function disallowed(statement: AstNode): Finding[] {
  const found = new Map<string, Finding>();
  const add = (d: Finding | undefined) => {
    if (d && !found.has(d.construct)) found.set(d.construct, d);
  };
  const kind = kindOf(statement);
  const fields = (statement[kind] ?? {}) as Record<string, unknown>;
  if (!(kind in COMMANDS)) {
    add({ construct: POSTGRES_COMMANDS[kind] ?? kind.replace(/Stmt$/, ''), citation: P.commands, hint: 'it is not a Redshift SQL command' });
    return [...found.values()];
  }
  if (kind === 'AlterTableStmt') add(alterTable(fields));
  if (kind === 'VariableSetStmt') add(setParameter(fields));
  if (kind === 'TransactionStmt' && !TRANSACTION_KINDS.has(String(fields.kind))) {
    add({ construct: String(fields.kind).replace('TRANS_STMT_', '').replace(/_/g, ' '), citation: P.begin, hint: 'Redshift has BEGIN, COMMIT, END, ROLLBACK and ABORT, no savepoints nor prepared transactions' });
  }
  if (kind === 'CreateFunctionStmt') add(routineLanguage(fields));
  if (kind === 'DropStmt' && !DROPPABLE.has(String(fields.removeType))) {
    add({ construct: `DROP ${String(fields.removeType).replace('OBJECT_', '').replace(/_/g, ' ')}`, citation: P.commands, hint: 'it is not a Redshift SQL command' });
  }
  // An INSERT's own VALUES list is its rows; any other VALUES list is a constant table.
  const insertRows = kind === 'InsertStmt' ? (fields.selectStmt as { SelectStmt?: unknown } | undefined)?.SelectStmt : undefined;
  const tableConstraints = kind === 'CreateStmt' && Array.isArray(fields.tableElts) ? fields.tableElts : [];
  for (const element of tableConstraints) {
    const contype = (element as { Constraint?: { contype?: unknown } }).Constraint?.contype;
    if (contype !== undefined && !TABLE_CONSTRAINTS.has(String(contype))) {
      add({ construct: `${String(contype).replace('CONSTR_', '')} table constraint`, citation: P.createTable, hint: 'Redshift table constraints are UNIQUE, PRIMARY KEY and FOREIGN KEY' });
    }
  }
  // On the compute nodes (a statement reading a user table) only Redshift's functions run; a statement
  // on the leader node has PostgreSQL's catalog functions too. System views are left out: where each
  // runs, the reference does not say for every one of them.
  const onComputeNodes = relations(statement).some((r) => relationKind(r) === 'user');
  walk(statement, ({ kind: node, fields: f }) => {
    if (node === 'SelectStmt') for (const d of selectClauses(f)) add(d);
    if (node === 'FuncCall' && onComputeNodes) add(undocumentedFunction(f));
    if (node === 'SelectStmt' && Array.isArray(f.valuesLists) && f !== insertRows) {
      add({ construct: 'VALUES list used as a constant table', citation: P.features, hint: 'SELECT the values, joined with UNION ALL' });
    }
    if (node === 'FuncCall' && f.agg_filter !== undefined) add({ construct: 'aggregate FILTER clause', citation: P.select, hint: 'use CASE inside the aggregate' });
    if (node === 'RangeTableSample') add({ construct: 'TABLESAMPLE', citation: P.select });
    // GENERATE_SERIES in FROM runs on the leader node (unsupported.ts refuses it over table data).
    if (node === 'RangeFunction' && !rangeFunctions(f).every((name) => name === 'generate_series')) {
      add({ construct: 'functions in FROM (table functions)', citation: P.features });
    }
    if (node === 'RowExpr') add({ construct: 'row constructors', citation: P.features, hint: 'compare the columns one by one, joined with AND' });
    if (node === 'CollateClause') add({ construct: 'COLLATE clause', citation: P.features, hint: 'Redshift has the COLLATE function' });
    if (node === 'TypeName') add(typeName(f));
    if (node === 'ColumnDef') for (const d of columnConstraints(f)) add(d);
  });
  return [...found.values()];
}

function alterTable(fields: Record<string, unknown>): Finding | undefined {
  const cmds = (Array.isArray(fields.cmds) ? fields.cmds : []).map((c) => (c as { AlterTableCmd?: Record<string, unknown> }).AlterTableCmd ?? {});
  if (cmds.length > 1) {
    return { construct: 'ALTER TABLE with more than one subcommand', citation: P.alterTable, hint: 'run one ALTER TABLE per change (Redshift combines only ALTER SORTKEY, ALTER DISTKEY/DISTSTYLE and ALTER COLUMN ... ENCODE)' };
  }
  const [cmd] = cmds;
  if (!cmd) return undefined;
  const subtype = String(cmd.subtype);
  if (!(subtype in ALTER_TABLE_SUBCOMMANDS)) {
    const hint = subtype === 'AT_ColumnDefault' ? 'a default is declared with its column (CREATE TABLE, ADD COLUMN, or CREATE TABLE ... (LIKE t INCLUDING DEFAULTS))' : undefined;
    return { construct: `ALTER TABLE ${POSTGRES_SUBCOMMANDS[subtype] ?? subtype.replace(/^AT_/, '')}`, citation: P.alterTable, ...(hint ? { hint } : {}) };
  }
  if (subtype === 'AT_AlterColumnType') {
    const type = typeNameOf((cmd.def as { ColumnDef?: { typeName?: unknown } })?.ColumnDef?.typeName);
    if (!VARCHAR_TYPES.has(type)) return { construct: `ALTER COLUMN ... TYPE ${type}`, citation: P.alterTable, hint: 'ALTER COLUMN ... TYPE changes the size of a VARCHAR column only; create a new table and copy the rows' };
  }
  if (subtype === 'AT_AddConstraint') {
    const contype = String((cmd.def as { Constraint?: { contype?: unknown } })?.Constraint?.contype);
    if (!TABLE_CONSTRAINTS.has(contype)) return { construct: `ADD ${contype.replace('CONSTR_', '')} constraint`, citation: P.createTable, hint: 'Redshift table constraints are UNIQUE, PRIMARY KEY and FOREIGN KEY' };
  }
  return undefined;
}

/** Languages of Redshift's functions (SQL, Python) and stored procedures (PL/pgSQL). */
const LANGUAGES = new Set(['sql', 'plpythonu', 'plpgsql']);

function routineLanguage(fields: Record<string, unknown>): Finding | undefined {
  let language = 'sql';
  walk(fields.options, ({ kind, fields: f }) => {
    if (kind === 'DefElem' && f.defname === 'language') language = String((f.arg as { String?: { sval?: string } } | undefined)?.String?.sval ?? '').toLowerCase();
  });
  if (fields.returnType !== undefined && (fields.returnType as { setof?: boolean }).setof === true) {
    return { construct: 'functions returning SETOF or TABLE', citation: P.createFunction, hint: 'a Redshift function returns one value' };
  }
  return LANGUAGES.has(language) ? undefined : { construct: `LANGUAGE ${language}`, citation: P.createFunction, hint: 'Redshift functions are SQL or Python (plpythonu), stored procedures PL/pgSQL' };
}

function setParameter(fields: Record<string, unknown>): Finding | undefined {
  // SET TRANSACTION ISOLATION LEVEL / READ ONLY: BEGIN takes them on Redshift.
  const name = String(fields.name ?? '').toLowerCase();
  if (fields.kind === 'VAR_RESET_ALL' || PARAMETERS.has(name)) return undefined;
  if (name === 'transaction' || name === 'transaction_isolation') {
    return { construct: 'SET TRANSACTION', citation: P.begin, hint: 'give the isolation level to BEGIN' };
  }
  return { construct: `the configuration parameter ${name}`, citation: P.configuration, hint: 'SET and RESET take the parameters of the configuration reference only' };
}

function selectClauses(fields: Record<string, unknown>): Finding[] {
  const found: Finding[] = [];
  const distinct = fields.distinctClause;
  if (Array.isArray(distinct) && distinct.some((item) => item && Object.keys(item as object).length > 0)) {
    found.push({ construct: 'DISTINCT ON', citation: P.select, hint: 'use ROW_NUMBER() OVER (PARTITION BY ...) and keep row 1' });
  }
  if (fields.limitOption === 'LIMIT_OPTION_WITH_TIES') found.push({ construct: 'FETCH ... WITH TIES', citation: P.select });
  if (Array.isArray(fields.windowClause) && fields.windowClause.length > 0) {
    found.push({ construct: 'WINDOW clause (named windows)', citation: P.select, hint: 'write each window in its OVER ()' });
  }
  return found;
}

/**
 * A call of a function the SQL functions reference does not have, unless it
 * is a user-defined one: named by its schema, or `f_...` as Redshift's
 * CREATE FUNCTION page asks of user-defined functions.
 */
function undocumentedFunction(fields: Record<string, unknown>): Finding | undefined {
  const parts = names(fields.funcname).map((n) => n.toLowerCase());
  const name = parts.at(-1) ?? '';
  const schema = parts.length > 1 ? parts[0] : undefined;
  if (REDSHIFT_FUNCTIONS.has(name) || name.startsWith('f_') || (schema !== undefined && schema !== 'pg_catalog')) return undefined;
  return { construct: `the function ${name.toUpperCase()}`, citation: P.functions, hint: "it is not among Redshift's SQL functions (a user-defined function is named f_... or by its schema)" };
}

/** The names of the functions a FROM item calls. */
function rangeFunctions(fields: Record<string, unknown>): string[] {
  const found: string[] = [];
  walk(fields.functions, ({ kind, fields: f }) => {
    if (kind === 'FuncCall') found.push((names(f.funcname).at(-1) ?? '').toLowerCase());
  });
  return found;
}

function typeNameOf(typeName: unknown): string {
  return (names((typeName as { names?: unknown } | undefined)?.names).at(-1) ?? '').toLowerCase();
}

function typeName(fields: Record<string, unknown>): Finding | undefined {
  const type = typeNameOf(fields);
  if (type === '' || TYPES.has(type)) return undefined;
  return { construct: `the type ${type}`, citation: P.dataTypes, hint: 'Redshift has its own list of data types' };
}

function columnConstraints(fields: Record<string, unknown>): Finding[] {
  const constraints = Array.isArray(fields.constraints) ? fields.constraints : [];
  return constraints
    .map((c) => String((c as { Constraint?: { contype?: unknown } }).Constraint?.contype))
    .filter((contype) => !COLUMN_CONSTRAINTS.has(contype))
    .map((contype) => ({
      construct: contype === 'CONSTR_IDENTITY' ? IDENTITY_COLUMN : contype === 'CONSTR_GENERATED' ? 'generated columns' : `column ${contype.replace('CONSTR_', '')} constraint`,
      citation: P.createTable,
      ...(contype === 'CONSTR_IDENTITY' ? { hint: 'use IDENTITY(seed, step)' } : {}),
    }));
}
