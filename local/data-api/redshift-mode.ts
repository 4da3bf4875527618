// Redshift mode of the local endpoint: each statement is parsed with PostgreSQL's
// parser before it runs, refused when Redshift would not run it
// (domain/redshift-sql/unsupported.ts; TRUNCATE or VACUUM inside a TRANSACTION
// batch), else run as Redshift would: its informational keys and table attributes
// recorded instead, its ROLE keyword, LIKE, functions, syntax and user options
// rewritten (withoutRoleKeyword, likeWithIdentity, redshift-functions/syntax.ts,
// user-options.ts). A text PostgreSQL cannot parse runs unchanged, for the database
// to report. docs/redshift.md; why: docs/decisions/redshift-mode-of-the-local-engine.md

import { decodeStatements, encodeStatements } from '../../domain/publish/sql/one-transaction.ts';
import { roleWithoutKeyword } from '../../domain/redshift-sql/allowed.ts';
import { kindOf } from '../../domain/redshift-sql/ast.ts';
import { checkStatements, endsTransaction, implicitCommitMessage, refusalMessage } from '../../domain/redshift-sql/check.ts';
import { type ParsedStatement, parsePositional, SqlSyntaxError, scanTokens } from '../../domain/redshift-sql/parser.ts';
import { redshiftSyntaxConstructs } from '../../domain/redshift-sql/postgres-grammar.ts';
import { stripTableAttributes, type TableAttributes, TableDdlError } from '../../domain/redshift-sql/table-ddl.ts';
import { type Rewrite, render, tokensOf } from '../../domain/redshift-sql/text-edits.ts';
import { MANIFEST } from '../../domain/sql/statement.ts';
import { type DroppedKey, type InformationalConstraint, regclassName, type TableName, withoutKeyConstraints } from './informational-keys.ts';
import type { TranslatedSql } from './params.ts';
import { beforeParse, withRedshiftSyntax } from './redshift-functions/syntax.ts';
import { policyStatement } from './security-policies.ts';
import { SYSTEM_VIEWS_SCHEMA } from './system-views.ts';
import { passwordDisabledUser, syslogAccessStatement } from './user-options.ts';

export interface GatedSql {
  /** What runs: the text, without key constraints. */
  text: string;
  /** Set when the statement must fail without running. */
  refusal?: string;
  /** Key constraints taken out of the text, recorded once the statement commits. */
  constraints: InformationalConstraint[];
  /** Key constraints the statement drops. */
  dropped?: DroppedKey[];
  /** Record `constraints` only if the statement created its table (CREATE TABLE IF NOT EXISTS). */
  ifNew?: boolean;
  /** Key constraints of the statements a CALL of run_statements carries (their records run inside it). */
  packedConstraints?: InformationalConstraint[];
  /** A CREATE TABLE's Redshift attributes, or the table a CREATE TABLE ... (LIKE t) copies them from. */
  tableAttributes?: { table: TableName; ifNew: boolean } & ({ attributes: TableAttributes } | { likeOf: TableName });
  /** The user a CREATE USER or ALTER USER with PASSWORD DISABLE leaves to IAM: the runner gives it the endpoint's password for it. */
  iamUser?: string;
}

/**
 * Gates the `$n`-parameter texts of one request. `inTransaction`: the texts
 * run as one multi-statement TRANSACTION batch.
 */
export function gate(texts: readonly string[], inTransaction: boolean): GatedSql[] {
  return texts.map((original) => {
    // The verdict depends on the text alone: a statement sent again with
    // other parameters (every chunk's load) is parsed once.
    const key = `${inTransaction ? 't' : 's'}${original}`;
    const known = verdicts.get(key);
    if (known) return known;
    const verdict = gateOne(original, inTransaction);
    if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value!);
    verdicts.set(key, verdict);
    return verdict;
  });
}

/** Verdicts by text, oldest first: a bounded cache. */
const verdicts = new Map<string, GatedSql>();
const MAX_VERDICTS = 2000;

const CREATE_TABLE = /^\s*create\s+((local\s+)?(temp|temporary)\s+)?table\s/i;

function gateOne(original: string, inTransaction: boolean): GatedSql {
  const packed = packedStatements(original);
  if (packed) return packed;
  const syslog = syslogAccessStatement(original);
  if (syslog !== undefined) return { text: syslog, constraints: [] };
  const policy = policyStatement(original);
  if (policy) return 'refusal' in policy ? { text: original, refusal: policy.refusal, constraints: [] } : { text: policy.text, constraints: [] };
  let text = withoutRoleKeyword(beforeParse(original));
  let attributes: TableAttributes | undefined;
  if (CREATE_TABLE.test(text)) {
    try {
      const stripped = stripTableAttributes(text);
      if (stripped) ({ text, attributes } = stripped);
    } catch (error) {
      // Not Redshift's attribute grammar: the statement runs as written, and the parse or the database says what is wrong.
      if (!(error instanceof TableDdlError)) throw error;
    }
  }
  // Redshift's IDENTITY(seed, step) reaches the parser as PostgreSQL's identity column, then no finding (postgres-grammar.ts).
  const gated = gateParsed(text, inTransaction, [...redshiftSyntaxConstructs(original), ...roleSyntaxConstructs(original)]);
  if (gated.refusal !== undefined) return gated;
  const dynamic = withDynamicQueries(gated.text);
  if (dynamic.refusal !== undefined) return { text, refusal: dynamic.refusal, constraints: [] };
  const table = tableAttributesOf(gated.text, attributes);
  const run = withRedshiftSyntax(dynamic.text);
  return { ...gated, text: CREATE_TABLE.test(run) ? likeWithIdentity(run) : run, ...(table ? { tableAttributes: table } : {}) };
}
/**
 * A CREATE TABLE's `LIKE t INCLUDING DEFAULTS` as PostgreSQL copies what
 * Redshift's does: Redshift keeps an identity as a default expression, so
 * INCLUDING DEFAULTS copies it (the new table numbering from the seed),
 * where PostgreSQL copies an identity only with INCLUDING IDENTITY. Without
 * INCLUDING DEFAULTS both copy the column as a plain NOT NULL one.
 */
export function likeWithIdentity(text: string): string {
  if (!/\bincluding\s+defaults\b/i.test(text)) return text;
  const tokens = tokensOf(text);
  if (!tokens) return text;
  const rewrites: Rewrite[] = [];
  tokens.forEach((token, i) => {
    const next = tokens[i + 1];
    if (token.text.toLowerCase() === 'including' && next?.text.toLowerCase() === 'defaults') {
      rewrites.push({ start: next.end, end: next.end, build: () => ' INCLUDING IDENTITY' });
    }
  });
  return rewrites.length === 0 ? text : render(Buffer.from(text), rewrites);
}

const RUN_STATEMENTS = new RegExp(String.raw`^\s*CALL\s+${MANIFEST}\.run_statements\('((?:[^']|'')*)'\)\s*;?\s*$`, 'i');

/**
 * A CALL of the manifest's run_statements (domain/publish/sql/one-transaction.ts):
 * Redshift runs each statement it carries as one of its own, so each is
 * gated and rewritten as a statement is, the first refusal is the CALL's,
 * and PostgreSQL's run_statements EXECUTEs the rewritten texts, each
 * followed by its key records (their values inlined: EXECUTE binds none).
 */
function packedStatements(text: string): GatedSql | undefined {
  const match = RUN_STATEMENTS.exec(text);
  if (!match) return undefined;
  let inner: string[];
  try {
    inner = decodeStatements(match[1]!.replaceAll("''", "'"));
  } catch {
    return undefined;
  }
  const gated = gate(inner, true);
  const refused = gated.find((g) => g.refusal !== undefined);
  if (refused) return { text, refusal: refused.refusal, constraints: [] };
  const texts = gated.flatMap((g) => [g.text, ...(g.constraints.length > 0 || g.dropped || g.tableAttributes ? recordKeyStatements(g).map(inlined) : [])]);
  const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;
  return {
    text: `CALL ${MANIFEST}.run_statements(${literal(encodeStatements(texts))})`,
    constraints: [],
    packedConstraints: gated.flatMap((g) => g.constraints),
  };
}

/** A `$n` text with its values as literals (PostgreSQL's standard strings: a backslash is itself). */
function inlined(sql: TranslatedSql): string {
  const values = sql.values as (string | null)[];
  return sql.text.replace(/\$(\d+)/g, (_, n: string) => {
    const value = values[Number(n) - 1];
    return value === null || value === undefined ? 'NULL' : `'${value.replaceAll("'", "''")}'`;
  });
}

const CALL = /^\s*call\s/i;
/** A statement a procedure EXECUTEs: a query, or an INSERT (the manifest's load_chunk). */
const QUERY = /^\s*(select|with|insert)\s/i;

/**
 * A CALL whose string argument is a query, which the procedure EXECUTEs
 * (the publish transaction's source re-check, domain/publish/sql/swap.ts
 * sourceRecheck): Redshift runs that query with its own SQL, so it is gated
 * and rewritten as a statement of its own, and its refusal is the CALL's.
 */
function withDynamicQueries(text: string): { text: string; refusal?: string } {
  if (!CALL.test(text)) return { text };
  let statements: ParsedStatement[];
  try {
    statements = parsePositional(text);
  } catch {
    return { text };
  }
  const [statement] = statements;
  if (statements.length !== 1 || !statement || kindOf(statement.node) !== 'CallStmt') return { text };
  const args = ((statement.node.CallStmt as { funccall?: { args?: unknown[] } }).funccall?.args ?? []).map(
    (a) => (a as { A_Const?: { sval?: { sval?: string }; location?: number } }).A_Const,
  );
  const tokens = scanTokens(text);
  const rewrites: Rewrite[] = [];
  for (const arg of args) {
    const query = arg?.sval?.sval;
    // One statement: its locations are the text's byte offsets.
    const token = tokens.find((t) => t.start === arg?.location);
    if (query === undefined || !QUERY.test(query) || !token?.text.startsWith("'")) continue;
    const [inner] = gate([query], false);
    if (inner!.refusal !== undefined) return { text, refusal: inner!.refusal };
    const literal = `'${inner!.text.replace(/'/g, "''")}'`;
    rewrites.push({ start: token.start, end: token.end, build: () => literal });
  }
  return { text: rewrites.length === 0 ? text : render(Buffer.from(text), rewrites) };
}

/**
 * The `$n` arguments of a CALL whose values are statements the procedure
 * EXECUTEs (the manifest's load_chunk, domain/manifest/sql/manifest.ts): as
 * withDynamicQueries does for a literal, each value is gated and rewritten as
 * a statement of its own, and its refusal is the CALL's.
 */
export function withDynamicParameters(text: string, values: readonly string[]): { values: readonly string[]; refusal?: string } {
  const positions = callParameters(text);
  if (positions.length === 0) return { values };
  const rewritten = [...values];
  for (const n of positions) {
    const value = values[n - 1];
    if (value === undefined || !QUERY.test(value)) continue;
    const [inner] = gate([value], false);
    if (inner!.refusal !== undefined) return { values, refusal: inner!.refusal };
    rewritten[n - 1] = inner!.text;
  }
  return { values: rewritten };
}

/** The `$n` numbers a CALL's text passes as arguments, by text: a bounded cache. */
function callParameters(text: string): number[] {
  if (!CALL.test(text)) return [];
  const known = callParameterCache.get(text);
  if (known) return known;
  let positions: number[] = [];
  try {
    const statements = parsePositional(text);
    const node = statements.length === 1 ? statements[0]!.node : undefined;
    if (node && kindOf(node) === 'CallStmt') {
      const args = (node.CallStmt as { funccall?: { args?: unknown[] } }).funccall?.args ?? [];
      positions = args.map((a) => (a as { ParamRef?: { number?: number } }).ParamRef?.number).filter((n): n is number => n !== undefined);
    }
  } catch {
    // the database reports what is wrong with it
  }
  if (callParameterCache.size >= MAX_VERDICTS) callParameterCache.delete(callParameterCache.keys().next().value!);
  callParameterCache.set(text, positions);
  return positions;
}
const callParameterCache = new Map<string, number[]>();

/** What a CREATE TABLE records of its table's attributes: those it declares, or its LIKE table's. */
function tableAttributesOf(text: string, attributes: TableAttributes | undefined): GatedSql['tableAttributes'] {
  if (!CREATE_TABLE.test(text)) return undefined;
  let node;
  try {
    [node] = parsePositional(text).map((s) => s.node);
  } catch {
    return undefined;
  }
  if (!node || kindOf(node) !== 'CreateStmt') return undefined;
  const create = node.CreateStmt as { relation: { schemaname?: string; relname: string }; if_not_exists?: boolean; tableElts?: Record<string, unknown>[] };
  const name = (r: { schemaname?: string; relname: string }): TableName =>
    r.schemaname === undefined ? { table: r.relname } : { schema: r.schemaname, table: r.relname };
  const table = name(create.relation);
  const ifNew = create.if_not_exists === true;
  if (attributes) return { table, ifNew, attributes };
  const like = (create.tableElts ?? []).map((e) => e.TableLikeClause as { relation: { schemaname?: string; relname: string } } | undefined).find((l) => l);
  return like ? { table, ifNew, likeOf: name(like.relation) } : undefined;
}

function gateParsed(text: string, inTransaction: boolean, allowed: readonly string[] = []): GatedSql {
  let statements: ParsedStatement[];
  try {
    statements = parsePositional(text);
  } catch (error) {
    if (error instanceof SqlSyntaxError) return { text, constraints: [] };
    throw error;
  }
  const unsupported = checkStatements(statements, allowed)[0];
  if (unsupported) return { text, refusal: refusalMessage(unsupported), constraints: [] };
  const commits = inTransaction ? statements.map(endsTransaction).find((f) => f !== undefined) : undefined;
  if (commits) return { text, refusal: implicitCommitMessage(commits), constraints: [] };
  const iamUser = passwordDisabledUser(statements);
  if (iamUser !== undefined) return { text, constraints: [], iamUser };
  const keys = statements.length === 1 ? withoutKeyConstraints(text, statements[0]!.node) : undefined;
  return keys
    ? { text: keys.text, constraints: keys.constraints, ...(keys.dropped ? { dropped: keys.dropped } : {}), ...(keys.ifNew ? { ifNew: true } : {}) }
    : { text, constraints: [] };
}

/**
 * Redshift's ROLE keyword where PostgreSQL, whose roles are its users and
 * groups, takes a bare name (r_GRANT, r_REVOKE): a grantee
 * `GRANT <privileges> ON <object> TO ROLE r` and `REVOKE ... FROM ROLE r`,
 * and the role granted, `GRANT ROLE r TO { u | ROLE r2 }` and
 * `REVOKE [ ADMIN OPTION FOR ] ROLE r FROM { u | ROLE r2 }`.
 */
export function withoutRoleKeyword(text: string): string {
  const granted = ROLE_GRANT.exec(text);
  const afterRole = granted ? `${granted[1]}${systemRole(text.slice(granted[0].length))}` : text;
  const grantees = GRANTEE_LIST.exec(afterRole);
  if (!grantees) return afterRole;
  // Every ROLE of the grantee list, not only its first: `TO alice, GROUP g, ROLE r`.
  const list = afterRole.slice(grantees[0].length).replace(ROLE_IN_LIST, '$1');
  return `${grantees[0]}${list}`;
}

const ROLE_GRANT = /^(\s*(?:GRANT|REVOKE(?:\s+ADMIN\s+OPTION\s+FOR)?)\s+)ROLE\s+(?=["'A-Za-z_])/i;
const GRANTEE_LIST = /^\s*(?:GRANT\s[^;]*?\sTO|REVOKE\s[^;]*?\sFROM)\s+/i;
const ROLE_IN_LIST = /((?:^|,)\s*)ROLE\s+(?=["A-Za-z_])/gi;

/** Redshift's system roles written bare or quoted as a string (`ROLE sys:secadmin`, r_roles-default), as a delimited name. */
function systemRole(rest: string): string {
  return rest.replace(/^(?:'(sys:[a-z_]+)'|(sys:[a-z_]+))/i, (_m, a: string | undefined, b: string | undefined) => `"${(a ?? b)!.toLowerCase()}"`);
}

/** The findings a text in Redshift's role syntax lets through: `GRANT ROLE r` reaches the parser as PostgreSQL's `GRANT r`. */
function roleSyntaxConstructs(original: string): readonly string[] {
  return ROLE_GRANT.test(original) ? [roleWithoutKeyword(true), roleWithoutKeyword(false)] : [];
}

/**
 * The statements that record a statement's key constraints in the
 * database's catalog stand-in (system-views.ts), or remove the ones it
 * drops, run right after it in its session and transaction, so a
 * rolled-back declaration leaves no record.
 */
export function recordKeyStatements(gated: Pick<GatedSql, 'constraints' | 'dropped' | 'ifNew' | 'tableAttributes'>): TranslatedSql[] {
  const recorded = gated.constraints.map((c) => ({
    text: `SELECT ${SYSTEM_VIEWS_SCHEMA}.record_key(to_regclass($1)::oid, $2, $3, $4::json, to_regclass($5)::oid, $6::json, $7)`,
    values: [
      regclassName(c.table),
      c.kind,
      c.name ?? null,
      JSON.stringify(c.columns),
      c.references ? regclassName(c.references) : null,
      c.references ? JSON.stringify(c.references.columns) : null,
      String(gated.ifNew === true),
    ] as string[],
  }));
  const dropped = (gated.dropped ?? []).map((d) => ({
    text: `SELECT ${SYSTEM_VIEWS_SCHEMA}.drop_key(to_regclass($1)::oid, $2, $3, $4)`,
    values: [regclassName(d.table), d.name, String(d.missingOk), regclassName(d.table)],
  }));
  const attributes = gated.tableAttributes;
  const table =
    attributes === undefined
      ? []
      : [
          'attributes' in attributes
            ? {
                text: `SELECT ${SYSTEM_VIEWS_SCHEMA}.record_table_attributes(to_regclass($1)::oid, $2::json, $3)`,
                values: [regclassName(attributes.table), JSON.stringify(attributes.attributes), String(attributes.ifNew)],
              }
            : {
                text: `SELECT ${SYSTEM_VIEWS_SCHEMA}.copy_table_attributes(to_regclass($1)::oid, to_regclass($2)::oid, $3)`,
                values: [regclassName(attributes.table), regclassName(attributes.likeOf), String(attributes.ifNew)],
              },
        ];
  return [...recorded, ...dropped, ...table];
}

/** Key constraints by database, in the order their statements committed. */
export class InformationalConstraints {
  private readonly byDatabase = new Map<string, InformationalConstraint[]>();

  record(database: string, constraints: readonly InformationalConstraint[]): void {
    if (constraints.length === 0) return;
    const recorded = this.byDatabase.get(database) ?? [];
    const known = new Set(recorded.map((c) => JSON.stringify(c)));
    for (const constraint of constraints) {
      if (!known.has(JSON.stringify(constraint))) recorded.push(constraint);
    }
    this.byDatabase.set(database, recorded);
  }

  list(database: string): InformationalConstraint[] {
    return [...(this.byDatabase.get(database) ?? [])];
  }
}
