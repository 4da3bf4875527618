// Applies the list in unsupported.ts to parsed SQL.
import { disallowed } from './allowed.ts';
import { kindOf, names, relationKind, relations, type Visited, walk } from './ast.ts';
import { type AstNode, type ParsedStatement, parsePlPgSql, parsePositional } from './parser.ts';
import { parseSql, redshiftSyntaxConstructs } from './postgres-grammar.ts';
import { type Citation, type Detection, ENDS_TRANSACTION, UNSUPPORTED, type UnsupportedConstruct } from './unsupported.ts';

export interface Finding {
  readonly construct: string;
  readonly citation: Citation;
  readonly hint?: string;
}

/** Every listed construct, and every form Redshift does not document, a Data API SQL text (`:name` parameters allowed) uses, each once. */
export function checkSql(sql: string): Finding[] {
  return checkStatements(parseSql(sql).statements, redshiftSyntaxConstructs(sql));
}

/** The findings in `statements`, but for the constructs named in `allowed` (the parse's form of Redshift's own syntax: redshiftSyntaxConstructs). */
export function checkStatements(statements: readonly ParsedStatement[], allowed: readonly string[] = []): Finding[] {
  const found = new Map<string, Finding>();
  for (const statement of statements) {
    for (const entry of matching(UNSUPPORTED, statement.node)) found.set(entry.construct, finding(entry, statement.node));
    for (const entry of plpgsqlFindings(statement)) found.set(entry.construct, entry);
    // Then whatever is not among the forms Redshift documents (allowed.ts).
    for (const entry of disallowed(statement.node, statement.text)) if (!found.has(entry.construct)) found.set(entry.construct, entry);
  }
  return [...found.values()].filter((f) => !allowed.includes(f.construct));
}

/** TRUNCATE or VACUUM: a statement that would end a batch's transaction on Redshift. */
export function endsTransaction(statement: ParsedStatement): Finding | undefined {
  const entry = matching(ENDS_TRANSACTION, statement.node)[0];
  return entry && finding(entry);
}

/** The message a refused statement fails with, in Redshift's `ERROR: ...` form. */
export function refusalMessage(found: Finding): string {
  const hint = found.hint ? `; ${found.hint}` : '';
  return `ERROR: ${found.construct} is not supported on Amazon Redshift${hint} (${found.citation.title}: ${found.citation.url})`;
}

/** The message for a statement that would end a TRANSACTION batch's transaction. */
export function implicitCommitMessage(found: Finding): string {
  return `ERROR: ${found.construct} cannot run in a multi-statement transaction on Amazon Redshift: ${found.hint ?? ''} (${found.citation.title}: ${found.citation.url})`;
}

/** The entry as a finding; a catalog join names the catalog relations it may not read. */
function finding(entry: UnsupportedConstruct, statement?: AstNode): Finding {
  let hint = entry.hint;
  if ('catalogJoinableOnly' in entry.detect && statement) {
    const named = unjoinableCatalog(entry.detect.catalogJoinableOnly, statement);
    hint = `${named.join(', ')} cannot be read with a user table${hint ? `; ${hint}` : ''}`;
  }
  return { construct: entry.construct, citation: entry.citation, ...(hint ? { hint } : {}) };
}

function matching(list: readonly UnsupportedConstruct[], statement: AstNode): UnsupportedConstruct[] {
  const nodes: Visited[] = [];
  walk(statement, (node) => nodes.push(node));
  const kinds = relations(statement).map(relationKind);
  const readsTables = kinds.some((k) => k !== 'catalog');
  return list.filter((entry) =>
    'catalogJoinableOnly' in entry.detect
      ? unjoinableCatalog(entry.detect.catalogJoinableOnly, statement).length > 0
      : nodes.some((node) => detects(entry.detect, node, readsTables)),
  );
}

/** The catalog relations outside `joinable` a statement reads along with a user table, each once. */
function unjoinableCatalog(joinable: readonly string[], statement: AstNode): string[] {
  const ranges = relations(statement);
  if (!ranges.some((r) => relationKind(r) === 'user')) return [];
  const named = ranges
    .filter((r) => relationKind(r) === 'catalog' && !joinable.includes(String(r.relname).toLowerCase()))
    .map((r) => (r.schemaname === undefined ? String(r.relname) : `${String(r.schemaname)}.${String(r.relname)}`));
  return [...new Set(named)];
}

function detects(detect: Detection, { kind, fields }: Visited, readsTables: boolean): boolean {
  if ('node' in detect) {
    const kinds: readonly string[] = typeof detect.node === 'string' ? [detect.node] : detect.node;
    if (!kinds.includes(kind)) return false;
    if (detect.field === undefined) return true;
    const value = fields[detect.field];
    if (detect.values) return typeof value === 'string' && detect.values.includes(value);
    return value !== undefined && value !== null && value !== false && !(Array.isArray(value) && value.length === 0);
  }
  if ('nodePrefix' in detect) return kind.startsWith(detect.nodePrefix);
  if ('functions' in detect) {
    let named = false;
    if (kind === 'FuncCall') {
      const name = lastName(fields.funcname);
      named = detect.functions.includes(name) || (detect.prefixes ?? []).some((prefix) => name.startsWith(prefix));
    } else if (kind === 'SQLValueFunction') {
      named = (detect.valueFunctions ?? []).includes(String(fields.op));
    }
    return named && (!detect.onlyWithoutTables || readsTables);
  }
  if ('operators' in detect) {
    return kind === 'A_Expr' && fields.kind === 'AEXPR_OP' && detect.operators.includes(lastName(fields.name));
  }
  if ('types' in detect) return kind === 'TypeName' && detect.types.includes(lastName(fields.names));
  if ('arrayTypes' in detect) return kind === 'TypeName' && Array.isArray(fields.arrayBounds) && fields.arrayBounds.length > 0;
  return false; // PL/pgSQL detections apply to routine bodies (plpgsqlFindings)
}

function lastName(list: unknown): string {
  return (names(list).at(-1) ?? '').toLowerCase();
}

const PLAIN_VARIABLE = /^\s*[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?\s*$/;
const ASSIGNMENT_TARGET = /^\s*[A-Za-z_][A-Za-z0-9_$.]*\s*:?=/;
/** PLpgSQL_expr.parseMode 0 is a whole statement; 2 an expression; 3-5 an assignment `target := expression`. */
const STATEMENT_MODE = 0;

/**
 * Findings inside a CREATE FUNCTION / CREATE PROCEDURE body in PL/pgSQL:
 * statement kinds Redshift's PL/pgSQL page does not list, RAISE arguments
 * that are not plain variables, and the listed SQL constructs in the
 * body's own SQL.
 */
function plpgsqlFindings(statement: ParsedStatement): Finding[] {
  if (kindOf(statement.node) !== 'CreateFunctionStmt' || !isPlPgSql(statement.node)) return [];
  const findings: Finding[] = [];
  const embedded: ParsedStatement[] = [];
  let body: AstNode[];
  try {
    body = parsePlPgSql(statement.text);
  } catch {
    return []; // the database reports a body that does not parse
  }
  walk(body, ({ kind, fields }) => {
    for (const entry of UNSUPPORTED) {
      const detect = entry.detect;
      if ('plpgsql' in detect && detect.plpgsql.includes(kind)) findings.push(finding(entry));
      if ('plpgsqlRaise' in detect && kind === 'PLpgSQL_stmt_raise' && !raisesVariablesOnly(fields)) findings.push(finding(entry));
      if ('plpgsqlDiagnostics' in detect && kind === 'PLpgSQL_stmt_getdiag' && !diagnosesRowCountOnly(fields)) findings.push(finding(entry));
    }
    if (kind === 'PLpgSQL_expr' && typeof fields.query === 'string') {
      const parsed = parseEmbedded(fields.query, Number(fields.parseMode ?? STATEMENT_MODE));
      if (parsed) embedded.push(...parsed);
    }
  });
  return [...findings, ...checkStatements(embedded)];
}

function isPlPgSql(node: AstNode): boolean {
  let language: string | undefined;
  walk(node, ({ kind, fields }) => {
    if (kind === 'DefElem' && fields.defname === 'language') {
      language = String((fields.arg as { String?: { sval?: string } } | undefined)?.String?.sval ?? '').toLowerCase();
    }
  });
  return language === 'plpgsql';
}

/** RAISE level 'format' [, variable ...]: no USING options, no bare re-raise, no expressions. */
function raisesVariablesOnly(fields: Record<string, unknown>): boolean {
  if (typeof fields.message !== 'string' || fields.options !== undefined) return false;
  const params = Array.isArray(fields.params) ? fields.params : [];
  return params.every((param) => PLAIN_VARIABLE.test(String((param as { PLpgSQL_expr?: { query?: string } }).PLpgSQL_expr?.query ?? '')));
}

/** GET [CURRENT] DIAGNOSTICS of one item, ROW_COUNT: not STACKED, nothing else. */
function diagnosesRowCountOnly(fields: Record<string, unknown>): boolean {
  const items = Array.isArray(fields.diag_items) ? fields.diag_items : [];
  return fields.is_stacked !== true && items.length === 1 && (items[0] as { PLpgSQL_diag_item?: { kind?: string } }).PLpgSQL_diag_item?.kind === 'ROW_COUNT';
}

/** The SQL of one PL/pgSQL expression or statement, or undefined if it does not parse on its own. */
function parseEmbedded(query: string, mode: number): ParsedStatement[] | undefined {
  const text = mode === STATEMENT_MODE ? query : `SELECT ${query.replace(ASSIGNMENT_TARGET, '')}`;
  try {
    return parsePositional(text);
  } catch {
    return undefined; // the database reports it when the routine is created
  }
}
