// What Redshift's SQL reference documents, as an allow-list: a statement's kind
// must be a Redshift command, and where PostgreSQL's form of a command goes beyond
// Redshift's (ALTER TABLE, SET, SELECT's clauses, type names, GRANT, MERGE, LOCK,
// CREATE VIEW, ...), the form one the command's page lists, each refusal citing
// it. check.ts applies it after unsupported.ts's refused constructs, whose
// messages stay. Why: docs/decisions/redshift-mode-of-the-local-engine.md
import { kindOf, names, relationKind, relations, walk } from './ast.ts';
import type { Finding } from './check.ts';
import { REDSHIFT_FUNCTIONS } from './functions.ts';
import { type AstNode, scanTokens } from './parser.ts';
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
  grant: page('GRANT', 'r_GRANT'),
  revoke: page('REVOKE', 'r_REVOKE'),
  merge: page('MERGE', 'r_MERGE'),
  comment: page('COMMENT', 'r_COMMENT'),
  lock: page('LOCK', 'r_LOCK'),
  createTableAs: page('CREATE TABLE AS', 'r_CREATE_TABLE_AS'),
  createMaterializedView: page('CREATE MATERIALIZED VIEW', 'materialized-view-create-sql-command'),
  createView: page('CREATE VIEW', 'r_CREATE_VIEW'),
  createProcedure: page('CREATE PROCEDURE', 'r_CREATE_PROCEDURE'),
  createSchema: page('CREATE SCHEMA', 'r_CREATE_SCHEMA'),
  call: page('CALL', 'r_CALL_procedure'),
  insert: page('INSERT', 'r_INSERT_30'),
  update: page('UPDATE', 'r_UPDATE'),
  delete: page('DELETE', 'r_DELETE'),
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
  'analyze_threshold_percent',
  'cast_super_null_on_error',
  'datashare_break_glass_session_var',
  'datestyle',
  'default_geometry_encoding',
  'describe_field_name_in_uppercase',
  'downcase_delimited_identifier',
  'enable_case_sensitive_identifier',
  'enable_case_sensitive_super_attribute',
  'enable_result_cache_for_session',
  'enable_vacuum_boost',
  'error_on_nondeterministic_update',
  'extra_float_digits',
  'json_serialization_enable',
  'json_serialization_parse_nested_strings',
  'max_concurrency_scaling_clusters',
  'mv_enable_aqmv_for_session',
  'navigate_super_null_on_error',
  'parse_super_null_on_error',
  'pg_federation_repeatable_read',
  'query_group',
  'search_path',
  'spectrum_enable_pseudo_columns',
  'spectrum_enable_spectrum_oid',
  'spectrum_query_maxerror',
  'statement_timeout',
  'stored_proc_log_min_messages',
  'timezone',
  'wlm_query_slot_count',
  // SET SESSION AUTHORIZATION and SET SESSION CHARACTERISTICS have pages of their own.
  'session_authorization',
  'session characteristics',
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
  'int2',
  'smallint',
  'int4',
  'int',
  'integer',
  'int8',
  'bigint',
  'numeric',
  'decimal',
  'float4',
  'real',
  'float8',
  'float',
  'double precision',
  'bool',
  'boolean',
  'bpchar',
  'char',
  'character',
  'nchar',
  'varchar',
  'character varying',
  'nvarchar',
  'text',
  'date',
  'time',
  'timetz',
  'timestamp',
  'timestamptz',
  'interval',
  'super',
  'varbyte',
  'varbinary',
  'binary varying',
  'geometry',
  'geography',
  'hllsketch',
  'regclass',
  'oid',
  'name',
]);

/** The finding of PostgreSQL's `GRANT r TO u` / `REVOKE r FROM u`, which Redshift writes `GRANT ROLE r ...`. */
export function roleWithoutKeyword(grant: boolean): string {
  return `${grant ? 'GRANT' : 'REVOKE'} of a role without ROLE`;
}

/**
 * Whatever in `statement` Redshift's SQL reference does not document, each
 * construct once. `text`, the statement's own text, shows the keywords its
 * tree does not keep (GRANT's GROUP, LOCK's IN ... MODE, RECURSIVE).
 */
export function disallowed(statement: AstNode, text?: string): Finding[] {
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
    add({
      construct: String(fields.kind).replace('TRANS_STMT_', '').replace(/_/g, ' '),
      citation: P.begin,
      hint: 'Redshift has BEGIN, COMMIT, END, ROLLBACK and ABORT, no savepoints nor prepared transactions',
    });
  }
  if (kind === 'CreateFunctionStmt') add(routineLanguage(fields));
  const words = () => (text === undefined ? [] : scanTokens(text).map((t) => t.text.toLowerCase()));
  const clauses = COMMAND_CLAUSES[kind];
  if (clauses) for (const d of clauses(fields, words)) add(d);
  if (kind === 'DropStmt' && !DROPPABLE.has(String(fields.removeType))) {
    add({
      construct: `DROP ${String(fields.removeType).replace('OBJECT_', '').replace(/_/g, ' ')}`,
      citation: P.commands,
      hint: 'it is not a Redshift SQL command',
    });
  }
  // An INSERT's own VALUES list is its rows; any other VALUES list is a constant table.
  const insertRows = kind === 'InsertStmt' ? (fields.selectStmt as { SelectStmt?: unknown } | undefined)?.SelectStmt : undefined;
  const tableConstraints = kind === 'CreateStmt' && Array.isArray(fields.tableElts) ? fields.tableElts : [];
  for (const element of tableConstraints) {
    const contype = (element as { Constraint?: { contype?: unknown } }).Constraint?.contype;
    if (contype !== undefined && !TABLE_CONSTRAINTS.has(String(contype))) {
      add({
        construct: `${String(contype).replace('CONSTR_', '')} table constraint`,
        citation: P.createTable,
        hint: 'Redshift table constraints are UNIQUE, PRIMARY KEY and FOREIGN KEY',
      });
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
    if (node === 'FuncCall' && f.agg_filter !== undefined)
      add({ construct: 'aggregate FILTER clause', citation: P.select, hint: 'use CASE inside the aggregate' });
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
    return {
      construct: 'ALTER TABLE with more than one subcommand',
      citation: P.alterTable,
      hint: 'run one ALTER TABLE per change (Redshift combines only ALTER SORTKEY, ALTER DISTKEY/DISTSTYLE and ALTER COLUMN ... ENCODE)',
    };
  }
  const [cmd] = cmds;
  if (!cmd) return undefined;
  const subtype = String(cmd.subtype);
  if (!(subtype in ALTER_TABLE_SUBCOMMANDS)) {
    const hint =
      subtype === 'AT_ColumnDefault'
        ? 'a default is declared with its column (CREATE TABLE, ADD COLUMN, or CREATE TABLE ... (LIKE t INCLUDING DEFAULTS))'
        : undefined;
    return { construct: `ALTER TABLE ${POSTGRES_SUBCOMMANDS[subtype] ?? subtype.replace(/^AT_/, '')}`, citation: P.alterTable, ...(hint ? { hint } : {}) };
  }
  if (subtype === 'AT_AlterColumnType') {
    const type = typeNameOf((cmd.def as { ColumnDef?: { typeName?: unknown } })?.ColumnDef?.typeName);
    if (!VARCHAR_TYPES.has(type))
      return {
        construct: `ALTER COLUMN ... TYPE ${type}`,
        citation: P.alterTable,
        hint: 'ALTER COLUMN ... TYPE changes the size of a VARCHAR column only; create a new table and copy the rows',
      };
  }
  if (subtype === 'AT_AddConstraint') {
    const contype = String((cmd.def as { Constraint?: { contype?: unknown } })?.Constraint?.contype);
    if (!TABLE_CONSTRAINTS.has(contype))
      return {
        construct: `ADD ${contype.replace('CONSTR_', '')} constraint`,
        citation: P.createTable,
        hint: 'Redshift table constraints are UNIQUE, PRIMARY KEY and FOREIGN KEY',
      };
  }
  return undefined;
}

/** Languages of Redshift's functions (SQL, Python) and stored procedures (PL/pgSQL). */
const LANGUAGES = new Set(['sql', 'plpythonu', 'plpgsql']);

function routineLanguage(fields: Record<string, unknown>): Finding | undefined {
  let language = 'sql';
  walk(fields.options, ({ kind, fields: f }) => {
    if (kind === 'DefElem' && f.defname === 'language')
      language = String((f.arg as { String?: { sval?: string } } | undefined)?.String?.sval ?? '').toLowerCase();
  });
  if (fields.returnType !== undefined && (fields.returnType as { setof?: boolean }).setof === true) {
    return { construct: 'functions returning SETOF or TABLE', citation: P.createFunction, hint: 'a Redshift function returns one value' };
  }
  return LANGUAGES.has(language)
    ? undefined
    : { construct: `LANGUAGE ${language}`, citation: P.createFunction, hint: 'Redshift functions are SQL or Python (plpythonu), stored procedures PL/pgSQL' };
}

function setParameter(fields: Record<string, unknown>): Finding | undefined {
  // SET TRANSACTION ISOLATION LEVEL / READ ONLY: BEGIN takes them on Redshift.
  const name = String(fields.name ?? '').toLowerCase();
  if (fields.kind === 'VAR_RESET_ALL' || PARAMETERS.has(name)) return undefined;
  if (name === 'transaction' || name === 'transaction_isolation') {
    return { construct: 'SET TRANSACTION', citation: P.begin, hint: 'give the isolation level to BEGIN' };
  }
  return {
    construct: `the configuration parameter ${name}`,
    citation: P.configuration,
    hint: 'SET and RESET take the parameters of the configuration reference only',
  };
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
  return {
    construct: `the function ${name.toUpperCase()}`,
    citation: P.functions,
    hint: "it is not among Redshift's SQL functions (a user-defined function is named f_... or by its schema)",
  };
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
      construct:
        contype === 'CONSTR_IDENTITY'
          ? IDENTITY_COLUMN
          : contype === 'CONSTR_GENERATED'
            ? 'generated columns'
            : `column ${contype.replace('CONSTR_', '')} constraint`,
      citation: P.createTable,
      ...(contype === 'CONSTR_IDENTITY' ? { hint: 'use IDENTITY(seed, step)' } : {}),
    }));
}

type Fields = Record<string, unknown>;
type Clauses = (fields: Fields, words: () => string[]) => Finding[];

const list = (value: unknown): Fields[] => (Array.isArray(value) ? (value as Fields[]) : []);
const nonEmpty = (value: unknown) => value !== undefined && !(Array.isArray(value) && value.length === 0);
const OBJECT_WORDS: Record<string, string> = {
  OBJECT_MATVIEW: 'MATERIALIZED VIEW',
  OBJECT_FDW: 'FOREIGN DATA WRAPPER',
  OBJECT_LARGEOBJECT: 'LARGE OBJECT',
  OBJECT_PARAMETER_ACL: 'PARAMETER',
  OBJECT_DOMCONSTRAINT: 'CONSTRAINT ... ON DOMAIN',
  OBJECT_TABCONSTRAINT: 'CONSTRAINT',
};
/** An object kind as PostgreSQL's keywords: `OBJECT_FOREIGN_SERVER` is `FOREIGN SERVER`. */
const objectWords = (objtype: unknown) =>
  OBJECT_WORDS[String(objtype)] ??
  String(objtype)
    .replace(/^OBJECT_/, '')
    .replace(/_/g, ' ');

/** Each statement kind's clauses checked against its command's page. */
const COMMAND_CLAUSES: Record<string, Clauses> = {
  GrantStmt: grantClauses,
  GrantRoleStmt: (f) => [
    {
      construct: roleWithoutKeyword(f.is_grant === true),
      citation: f.is_grant === true ? P.grant : P.revoke,
      hint: 'Redshift names the role: GRANT ROLE r TO { user [ WITH ADMIN OPTION ] | ROLE r2 }, REVOKE [ ADMIN OPTION FOR ] ROLE r FROM ...; a user joins a group by ALTER GROUP ... ADD USER',
    },
  ],
  MergeStmt: mergeClauses,
  CommentStmt: (f) =>
    COMMENTABLE.has(String(f.objtype))
      ? []
      : [
          {
            construct: `COMMENT ON ${objectWords(f.objtype)}`,
            citation: P.comment,
            hint: 'Redshift comments on tables, columns, constraints, databases and views',
          },
        ],
  LockStmt: lockClauses,
  CreateTableAsStmt: createTableAsClauses,
  ViewStmt: viewClauses,
  CreateFunctionStmt: (f) => (f.is_procedure === true ? procedureClauses(f) : []),
  CreateSchemaStmt: (f) => {
    const owner = (f.authrole ?? {}) as Fields;
    return owner.roletype === undefined || owner.roletype === 'ROLESPEC_CSTRING'
      ? []
      : [
          {
            construct: `AUTHORIZATION ${String(owner.roletype).replace('ROLESPEC_', '')}`,
            citation: P.createSchema,
            hint: 'name the owner: AUTHORIZATION username',
          },
        ];
  },
  CallStmt: (f) =>
    list((f.funccall as Fields | undefined)?.args).some((a) => 'NamedArgExpr' in a)
      ? [{ construct: 'named arguments in CALL', citation: P.call, hint: 'CALL takes the arguments by position' }]
      : [],
  InsertStmt: (f) =>
    f.override !== undefined && f.override !== 'OVERRIDING_NOT_SET'
      ? [{ construct: 'INSERT ... OVERRIDING', citation: P.insert, hint: 'a GENERATED BY DEFAULT AS IDENTITY column takes the values given to it' }]
      : [],
  UpdateStmt: (f) => currentOf(f, P.update),
  DeleteStmt: (f) => currentOf(f, P.delete),
};

/**
 * GRANT's and REVOKE's privileges by object kind (r_GRANT, r_REVOKE; ALTER
 * and TRUNCATE on tables and views as the current pages and their usage
 * notes grant them, and SVV_RELATION_PRIVILEGES reports them); ALL is
 * every one of them. Objects of other kinds (sequences, types, domains,
 * foreign servers, ...) Redshift does not have.
 */
const PRIVILEGES: Record<string, ReadonlySet<string>> = {
  OBJECT_TABLE: new Set(['select', 'insert', 'update', 'delete', 'drop', 'references', 'alter', 'truncate']),
  // USAGE on a database created from a datashare ("GRANT USAGE ON { DATABASE shared_database_name ...").
  OBJECT_DATABASE: new Set(['create', 'temporary', 'temp', 'usage']),
  OBJECT_SCHEMA: new Set(['create', 'usage']),
  OBJECT_FUNCTION: new Set(['execute']),
  OBJECT_PROCEDURE: new Set(['execute']),
  OBJECT_LANGUAGE: new Set(['usage']),
};

/** The privileges a column list goes with: SELECT, UPDATE and ALL (r_GRANT, column-level permissions). */
const COLUMN_PRIVILEGES = new Set(['select', 'update', undefined]);

/** Grantees Redshift names: a user, ROLE r (written `TO r` by then: redshift-mode.ts), GROUP g, PUBLIC. */
const GRANTEE_TYPES = new Set(['ROLESPEC_CSTRING', 'ROLESPEC_PUBLIC']);

function grantClauses(f: Fields, words: () => string[]): Finding[] {
  const grant = f.is_grant === true;
  const citation = grant ? P.grant : P.revoke;
  const objtype = String(f.objtype);
  const found: Finding[] = [];
  const allowed = PRIVILEGES[objtype];
  if (!allowed) {
    found.push({
      construct: `${grant ? 'GRANT' : 'REVOKE'} ON ${objectWords(objtype)}`,
      citation,
      hint: 'Redshift grants on tables and views, databases, schemas, functions, procedures and languages',
    });
    return found;
  }
  const privileges = list(f.privileges).map((p) => (p.AccessPriv ?? {}) as Fields);
  for (const priv of privileges) {
    const name = priv.priv_name === undefined ? undefined : String(priv.priv_name);
    if (name !== undefined && !allowed.has(name)) {
      found.push({
        construct: `the privilege ${name.toUpperCase()} ON ${objectWords(objtype)}`,
        citation,
        hint: `${objectWords(objtype)} takes ${[...allowed].map((p) => p.toUpperCase()).join(', ')} or ALL`,
      });
    }
    if (nonEmpty(priv.cols) && !COLUMN_PRIVILEGES.has(name)) {
      found.push({ construct: `a column list with ${(name ?? '').toUpperCase()}`, citation, hint: 'column lists go with SELECT, UPDATE and ALL' });
    }
  }
  const unspecified = list(f.objects).some((o) => (o.ObjectWithArgs as Fields | undefined)?.args_unspecified === true);
  if (unspecified)
    found.push({
      construct: `${grant ? 'GRANT' : 'REVOKE'} ON ${objectWords(objtype)} without its argument types`,
      citation,
      hint: 'name the argument types: ON FUNCTION f(int, varchar)',
    });
  const grantees = list(f.grantees).map((g) => (g.RoleSpec ?? {}) as Fields);
  for (const g of grantees.filter((r) => !GRANTEE_TYPES.has(String(r.roletype)))) {
    found.push({ construct: `${String(g.roletype).replace('ROLESPEC_', '')} as a grantee`, citation, hint: 'name the user, ROLE, GROUP or PUBLIC' });
  }
  if (f.grantor !== undefined) found.push({ construct: 'GRANTED BY', citation });
  // GROUP is a reserved word: outside quotes it is only ever the grantee's keyword.
  const toGroupOrPublic = grantees.some((g) => g.roletype === 'ROLESPEC_PUBLIC') || words().includes('group');
  // The column-level forms take no grant option (r_GRANT, r_REVOKE: "Granting column-level permissions").
  if (f.grant_option === true && privileges.some((p) => nonEmpty(p.cols))) {
    found.push({
      construct: `${grant ? 'WITH GRANT OPTION' : 'GRANT OPTION FOR'} with column privileges`,
      citation,
      hint: 'grant or revoke the grant option on the whole table',
    });
  }
  if (f.grant_option === true && toGroupOrPublic) {
    found.push(
      grant
        ? { construct: 'WITH GRANT OPTION to a group or PUBLIC', citation, hint: 'WITH GRANT OPTION can be granted to a user only' }
        : { construct: 'GRANT OPTION FOR from a group or PUBLIC', citation, hint: 'the grant option is revoked from a user only' },
    );
  }
  if (!grant && f.behavior === 'DROP_CASCADE')
    found.push({ construct: 'REVOKE ... CASCADE', citation, hint: 'Redshift revokes with RESTRICT (the default) only' });
  return found;
}

/** COMMENT's objects (r_COMMENT): TABLE, COLUMN, CONSTRAINT ... ON table, DATABASE, VIEW. */
const COMMENTABLE = new Set(['OBJECT_TABLE', 'OBJECT_COLUMN', 'OBJECT_TABCONSTRAINT', 'OBJECT_DATABASE', 'OBJECT_VIEW']);

/**
 * Redshift's MERGE (r_MERGE): INTO a table without an alias, USING a
 * source ON a condition, then WHEN MATCHED THEN UPDATE SET ... or DELETE
 * and WHEN NOT MATCHED THEN INSERT [(columns)] VALUES (...), each without
 * a condition of its own; no WITH clause.
 */
function mergeClauses(f: Fields): Finding[] {
  const found: Finding[] = [];
  const citation = P.merge;
  if (f.withClause !== undefined) found.push({ construct: 'WITH clause in MERGE', citation, hint: 'put the source rows in a table first' });
  if ((f.relation as Fields | undefined)?.alias !== undefined)
    found.push({ construct: 'an alias of the MERGE target', citation, hint: 'name the target table by its name; the source takes an alias' });
  const when = list(f.mergeWhenClauses).map((c) => (c.MergeWhenClause ?? {}) as Fields);
  for (const c of when) {
    if (c.condition !== undefined)
      found.push({ construct: 'WHEN ... AND condition in MERGE', citation, hint: 'put the condition in ON, or filter the source' });
    if (c.matchKind === 'MERGE_WHEN_NOT_MATCHED_BY_SOURCE')
      found.push({ construct: 'WHEN NOT MATCHED BY SOURCE', citation, hint: 'delete the unmatched target rows with DELETE ... WHERE NOT EXISTS' });
    if (c.commandType === 'CMD_NOTHING') found.push({ construct: 'DO NOTHING in MERGE', citation });
    if (c.commandType === 'CMD_INSERT' && !nonEmpty(c.values)) found.push({ construct: 'INSERT DEFAULT VALUES in MERGE', citation, hint: 'list the VALUES' });
    if (c.override !== undefined && c.override !== 'OVERRIDING_NOT_SET') found.push({ construct: 'OVERRIDING in MERGE', citation });
  }
  const [matched, notMatched] = when;
  const shaped =
    when.length === 2 &&
    matched?.matchKind === 'MERGE_WHEN_MATCHED' &&
    ['CMD_UPDATE', 'CMD_DELETE', 'CMD_NOTHING'].includes(String(matched.commandType)) &&
    notMatched?.matchKind === 'MERGE_WHEN_NOT_MATCHED_BY_TARGET';
  if (!shaped) {
    found.push({
      construct: 'MERGE without one WHEN MATCHED and then one WHEN NOT MATCHED clause',
      citation,
      hint: 'Redshift takes WHEN MATCHED THEN UPDATE or DELETE, then WHEN NOT MATCHED THEN INSERT',
    });
  }
  return found;
}

/** LOCK [ TABLE ] name [, ...] (r_LOCK): always ACCESS EXCLUSIVE, waiting for the lock. */
function lockClauses(f: Fields, words: () => string[]): Finding[] {
  const found: Finding[] = [];
  // IN is a reserved word: outside quotes it only ever opens IN ... MODE.
  if (words().includes('in'))
    found.push({ construct: 'LOCK ... IN ... MODE', citation: P.lock, hint: 'Redshift locks in ACCESS EXCLUSIVE mode only: write LOCK table_name' });
  if (f.nowait === true) found.push({ construct: 'LOCK ... NOWAIT', citation: P.lock, hint: 'bound the wait with SET statement_timeout' });
  // The tree leaves out a false `inh`: ONLY.
  if (list(f.relations).some((r) => (r.RangeVar as Fields | undefined)?.inh !== true)) found.push({ construct: 'LOCK ONLY', citation: P.lock });
  return found;
}

/**
 * CREATE [ [ LOCAL ] TEMP ] TABLE name [ (columns) ] AS query
 * (r_CREATE_TABLE_AS; BACKUP and the table attributes do not reach the
 * parser) and CREATE MATERIALIZED VIEW name AS query
 * (materialized-view-create-sql-command; likewise BACKUP, the attributes
 * and AUTO REFRESH).
 */
function createTableAsClauses(f: Fields): Finding[] {
  const view = f.objtype === 'OBJECT_MATVIEW';
  const citation = view ? P.createMaterializedView : P.createTableAs;
  const command = view ? 'CREATE MATERIALIZED VIEW' : 'CREATE TABLE AS';
  const into = (f.into ?? {}) as Fields;
  const found: Finding[] = [];
  if (f.if_not_exists === true) found.push({ construct: `${command} IF NOT EXISTS`, citation });
  if ((into.rel as Fields | undefined)?.relpersistence === 'u') found.push({ construct: `UNLOGGED ${view ? 'materialized view' : 'table'}`, citation });
  if (into.skipData === true)
    found.push({
      construct: `${command} ... WITH NO DATA`,
      citation,
      hint: view ? 'a materialized view is filled when it is created' : 'add WHERE false, or use CREATE TABLE ... (LIKE t)',
    });
  if (nonEmpty(into.options)) found.push({ construct: `${command} ... WITH (storage parameters)`, citation });
  if (into.onCommit !== undefined && into.onCommit !== 'ONCOMMIT_NOOP') found.push({ construct: `${command} ... ON COMMIT`, citation });
  if (into.tableSpaceName !== undefined) found.push({ construct: `${command} ... TABLESPACE`, citation });
  if (into.accessMethod !== undefined) found.push({ construct: `${command} ... USING (access method)`, citation });
  if (view && nonEmpty(into.colNames))
    found.push({ construct: 'CREATE MATERIALIZED VIEW with a column list', citation, hint: 'name the columns in the query' });
  if ((f.query as Fields | undefined)?.ExecuteStmt !== undefined) found.push({ construct: `${command} EXECUTE`, citation, hint: 'write the query' });
  return found;
}

/** CREATE [ OR REPLACE ] VIEW name [ (columns) ] AS query [ WITH NO SCHEMA BINDING ] (r_CREATE_VIEW). */
function viewClauses(f: Fields, words: () => string[]): Finding[] {
  const found: Finding[] = [];
  const citation = P.createView;
  if ((f.view as Fields | undefined)?.relpersistence === 't') found.push({ construct: 'temporary views', citation });
  const head = words();
  if (head.slice(0, head.indexOf('view')).includes('recursive'))
    found.push({ construct: 'CREATE RECURSIVE VIEW', citation, hint: 'use WITH RECURSIVE in the query' });
  if (f.withCheckOption !== undefined && f.withCheckOption !== 'NO_CHECK_OPTION') found.push({ construct: 'CREATE VIEW ... WITH CHECK OPTION', citation });
  if (nonEmpty(f.options)) found.push({ construct: 'CREATE VIEW ... WITH (view options)', citation });
  return found;
}

/** Argument modes of a stored procedure (r_CREATE_PROCEDURE): IN, OUT, INOUT; none is IN. */
const PROCEDURE_MODES = new Set(['FUNC_PARAM_IN', 'FUNC_PARAM_OUT', 'FUNC_PARAM_INOUT', 'FUNC_PARAM_DEFAULT']);
/** Its options: AS $$ body $$, LANGUAGE plpgsql, SECURITY INVOKER | DEFINER, SET parameter. */
const PROCEDURE_OPTIONS = new Set(['as', 'language', 'security', 'set']);

function procedureClauses(f: Fields): Finding[] {
  const found: Finding[] = [];
  const citation = P.createProcedure;
  for (const p of list(f.parameters).map((x) => (x.FunctionParameter ?? {}) as Fields)) {
    if (!PROCEDURE_MODES.has(String(p.mode)))
      found.push({ construct: `${String(p.mode).replace('FUNC_PARAM_', '')} arguments`, citation, hint: 'argument modes are IN, OUT and INOUT' });
    if (p.defexpr !== undefined) found.push({ construct: 'argument defaults', citation, hint: 'CALL passes every input argument' });
  }
  if (f.sql_body !== undefined) found.push({ construct: 'BEGIN ATOMIC bodies', citation, hint: 'write the body as AS $$ ... $$ LANGUAGE plpgsql' });
  for (const option of list(f.options).map((o) => (o.DefElem ?? {}) as Fields)) {
    const name = String(option.defname);
    if (!PROCEDURE_OPTIONS.has(name)) found.push({ construct: `CREATE PROCEDURE ... ${name.toUpperCase()}`, citation });
    if (name === 'language') {
      const language = String((option.arg as { String?: { sval?: string } } | undefined)?.String?.sval ?? '').toLowerCase();
      // Languages no routine has are refused as such (routineLanguage).
      if (language !== 'plpgsql' && LANGUAGES.has(language))
        found.push({ construct: `procedures in LANGUAGE ${language}`, citation, hint: 'a stored procedure is PL/pgSQL' });
    }
    if (name === 'set') {
      const set = ((option.arg as { VariableSetStmt?: Fields } | undefined)?.VariableSetStmt ?? {}) as Fields;
      const wrong = setParameter(set);
      if (wrong) found.push(wrong);
    }
  }
  return found;
}

/** WHERE CURRENT OF, which UPDATE's and DELETE's pages do not list. */
function currentOf(f: Fields, citation: Citation): Finding[] {
  return (f.whereClause as Fields | undefined)?.CurrentOfExpr !== undefined
    ? [{ construct: `${citation.title} ... WHERE CURRENT OF`, citation, hint: 'name the rows by their key in WHERE' }]
    : [];
}
