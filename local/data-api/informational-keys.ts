// Redshift accepts PRIMARY KEY, UNIQUE and FOREIGN KEY constraints but does not
// enforce them; PostgreSQL would, hiding duplicates Redshift lets through. So
// the endpoint cuts them out of CREATE TABLE and ALTER TABLE ADD CONSTRAINT at
// the parse tree's locations (a table's constraint becomes `CHECK (true)`, so
// no element list changes shape) and records them (InformationalConstraints);
// a primary key's columns stay NOT NULL. Why: docs/decisions/redshift-mode-of-the-local-engine.md
// https://docs.aws.amazon.com/redshift/latest/dg/t_Defining_constraints.html
import { kindOf, names } from '../../domain/redshift-sql/ast.ts';
import { type AstNode, scanTokens, type Token } from '../../domain/redshift-sql/parser.ts';

export type KeyKind = 'PRIMARY KEY' | 'UNIQUE' | 'FOREIGN KEY';

export interface TableName {
  /** Absent when the statement did not qualify the name. */
  schema?: string;
  table: string;
}

export interface InformationalConstraint {
  table: TableName;
  kind: KeyKind;
  /** The constraint's name when the statement gave one. */
  name?: string;
  columns: string[];
  /** FOREIGN KEY only. */
  references?: TableName & { columns: string[] };
}

/** A key dropped by ALTER TABLE ... DROP CONSTRAINT: removed from the record once the statement runs. */
export interface DroppedKey {
  table: TableName;
  name: string;
  /** DROP CONSTRAINT IF EXISTS. */
  missingOk: boolean;
}

export interface KeysRewrite {
  /** The statement without its key constraints. */
  text: string;
  constraints: InformationalConstraint[];
  /** CREATE TABLE IF NOT EXISTS: the keys are recorded only if the statement created the table. */
  ifNew?: boolean;
  dropped?: DroppedKey[];
}

const KINDS: Record<string, KeyKind> = {
  CONSTR_PRIMARY: 'PRIMARY KEY',
  CONSTR_UNIQUE: 'UNIQUE',
  CONSTR_FOREIGN: 'FOREIGN KEY',
};

interface Edit {
  start: number;
  end: number;
  replacement: string;
}

type Fields = Record<string, unknown>;

/**
 * `text` (one statement, parsed into `node`) without its key constraints,
 * or undefined when it declares none.
 */
export function withoutKeyConstraints(text: string, node: AstNode): KeysRewrite | undefined {
  const kind = kindOf(node);
  const fields = node[kind] as Fields;
  if (kind === 'CreateStmt') {
    const created = rewrite(text, (editor) => createTable(editor, fields));
    return created && fields.if_not_exists === true ? { ...created, ifNew: true } : created;
  }
  if (kind === 'AlterTableStmt') return dropConstraints(fields) ?? rewrite(text, (editor) => alterTable(editor, fields));
  return undefined;
}

/**
 * An ALTER TABLE that only drops constraints: the key constraints it names
 * are records, not PostgreSQL constraints, so it runs as DROP CONSTRAINT IF
 * EXISTS (dropping a CHECK (true) stand-in of that name, if any) and the
 * records go (recordKeyStatements), failing as PostgreSQL and Redshift do
 * when a constraint named without IF EXISTS is not there. An ALTER TABLE
 * that mixes DROP CONSTRAINT with other actions runs as written.
 */
function dropConstraints(stmt: Fields): KeysRewrite | undefined {
  const cmds = list(stmt.cmds).map((c) => c.AlterTableCmd as Fields);
  if (cmds.length === 0 || !cmds.every((cmd) => cmd.subtype === 'AT_DropConstraint')) return undefined;
  const table = tableName(stmt.relation);
  const dropped = cmds.map((cmd) => ({ table, name: String(cmd.name), missingOk: cmd.missing_ok === true }));
  return {
    text: `ALTER TABLE ${stmt.missing_ok === true ? 'IF EXISTS ' : ''}${regclassName(table)} ${dropped.map((d) => `DROP CONSTRAINT IF EXISTS ${quoted(d.name)}`).join(', ')}`,
    constraints: [],
    dropped,
  };
}

function rewrite(text: string, plan: (text: TextEditor) => InformationalConstraint[]): KeysRewrite | undefined {
  const editor = new TextEditor(text);
  const constraints = plan(editor);
  return constraints.length === 0 ? undefined : { text: editor.apply(), constraints };
}

function createTable(text: TextEditor, stmt: Fields): InformationalConstraint[] {
  const table = tableName(stmt.relation);
  const constraints: InformationalConstraint[] = [];
  const columns = new Map<string, { end: number; notNull: boolean }>();
  const primaryColumns: string[] = [];
  for (const element of list(stmt.tableElts)) {
    const column = element.ColumnDef as Fields | undefined;
    if (column) {
      const name = String(column.colname);
      const own = list(column.constraints).map((c) => c.Constraint as Fields);
      const end = text.elementEnd(Number(column.location));
      let notNull = own.some((c) => c.contype === 'CONSTR_NOTNULL');
      own.forEach((constraint, i) => {
        const keyKind = KINDS[String(constraint.contype)];
        if (!keyKind) return;
        const next = own[i + 1];
        const stop = next ? Number(next.location) : end;
        const impliesNotNull = keyKind === 'PRIMARY KEY' && !notNull;
        text.replace(Number(constraint.location), stop, impliesNotNull ? 'NOT NULL ' : '');
        notNull ||= impliesNotNull;
        constraints.push(record(table, keyKind, constraint, [name]));
      });
      columns.set(name, { end, notNull });
      continue;
    }
    const constraint = element.Constraint as Fields | undefined;
    const keyKind = constraint && KINDS[String(constraint.contype)];
    if (!constraint || !keyKind) continue;
    text.replace(Number(constraint.location), text.elementEnd(Number(constraint.location)), 'CHECK (true)');
    const columnNames = keyColumns(keyKind, constraint);
    if (keyKind === 'PRIMARY KEY') primaryColumns.push(...columnNames);
    constraints.push(record(table, keyKind, constraint, columnNames));
  }
  for (const name of new Set(primaryColumns)) {
    const column = columns.get(name);
    if (column && !column.notNull) text.replace(column.end, column.end, ' NOT NULL');
  }
  return constraints;
}

function alterTable(text: TextEditor, stmt: Fields): InformationalConstraint[] {
  const table = tableName(stmt.relation);
  const constraints: InformationalConstraint[] = [];
  for (const cmd of list(stmt.cmds).map((c) => c.AlterTableCmd as Fields)) {
    const constraint = (cmd.def as Fields | undefined)?.Constraint as Fields | undefined;
    const keyKind = cmd.subtype === 'AT_AddConstraint' && constraint ? KINDS[String(constraint.contype)] : undefined;
    if (!constraint || !keyKind) continue;
    const start = Number(constraint.location);
    text.replace(start, text.elementEnd(start), 'CHECK (true) NOT VALID');
    constraints.push(record(table, keyKind, constraint, keyColumns(keyKind, constraint)));
  }
  return constraints;
}

/** The constrained columns of a table constraint. */
function keyColumns(kind: KeyKind, constraint: Fields): string[] {
  return names(kind === 'FOREIGN KEY' ? constraint.fk_attrs : constraint.keys);
}

function record(table: TableName, kind: KeyKind, constraint: Fields, columns: string[]): InformationalConstraint {
  return {
    table,
    kind,
    ...(typeof constraint.conname === 'string' ? { name: constraint.conname } : {}),
    columns,
    ...(kind === 'FOREIGN KEY' ? { references: { ...tableName(constraint.pktable), columns: names(constraint.pk_attrs) } } : {}),
  };
}

/** A name quoted as PostgreSQL quotes an identifier (a local statement's own parts, not the project's identifiers). */
function quoted(part: string): string {
  return `"${part.replace(/"/g, '""')}"`;
}

/** `"schema"."table"`, or `"table"` resolved in the session's search_path (also a to_regclass argument). */
export function regclassName(name: TableName): string {
  return name.schema === undefined ? quoted(name.table) : `${quoted(name.schema)}.${quoted(name.table)}`;
}

function tableName(relation: unknown): TableName {
  const r = relation as Fields;
  return typeof r.schemaname === 'string' ? { schema: r.schemaname, table: String(r.relname) } : { table: String(r.relname) };
}

function list(value: unknown): Fields[] {
  return Array.isArray(value) ? (value as Fields[]) : [];
}

/** Byte-offset edits of a statement's text, applied at once. */
class TextEditor {
  private readonly bytes: Buffer;
  private readonly tokens: Token[];
  private readonly edits: Edit[] = [];

  constructor(text: string) {
    this.bytes = Buffer.from(text);
    this.tokens = scanTokens(text);
  }

  replace(start: number, end: number, replacement: string): void {
    this.edits.push({ start, end, replacement });
  }

  /** Where the list element starting at `start` ends: at the `,` or `)` that closes it, at its nesting level. */
  elementEnd(start: number): number {
    let depth = 0;
    for (const token of this.tokens) {
      if (token.start < start) continue;
      if (token.text === '(') depth++;
      else if (token.text === ')' && depth-- === 0) return token.start;
      else if (token.text === ',' && depth === 0) return token.start;
    }
    return this.bytes.length;
  }

  apply(): string {
    const parts: Buffer[] = [];
    let copied = 0;
    for (const edit of [...this.edits].sort((a, b) => a.start - b.start)) {
      parts.push(this.bytes.subarray(copied, edit.start), Buffer.from(edit.replacement));
      copied = Math.max(copied, edit.end);
    }
    parts.push(this.bytes.subarray(copied));
    return Buffer.concat(parts).toString();
  }
}
