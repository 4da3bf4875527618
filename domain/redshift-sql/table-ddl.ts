// A Redshift CREATE TABLE's own attributes, which PostgreSQL's grammar does not
// know (column ENCODE, DISTKEY, SORTKEY; after the columns DISTSTYLE, DISTKEY (c),
// [COMPOUND | INTERLEAVED] SORTKEY (...), SORTKEY AUTO, ENCODE AUTO, BACKUP;
// https://docs.aws.amazon.com/redshift/latest/dg/r_CREATE_TABLE_NEW.html), found
// in the token stream (nothing inside a string literal) and cut out; the rest is
// checked on its parse tree. For a migration's DDL and the local endpoint, which
// records the attributes for its catalog views.
import { kindOf, names } from './ast.ts';
import { checkStatements } from './check.ts';
import { toPositional } from './parameters.ts';
import { parsePositional, SqlSyntaxError, scanTokens, type Token } from './parser.ts';
import { inPostgresGrammar, redshiftSyntaxConstructs } from './postgres-grammar.ts';

/** Column compression encodings ("Compression encodings", https://docs.aws.amazon.com/redshift/latest/dg/c_Compression_encodings.html). */
export const ENCODINGS = [
  'raw',
  'az64',
  'bytedict',
  'delta',
  'delta32k',
  'lzo',
  'mostly8',
  'mostly16',
  'mostly32',
  'runlength',
  'text255',
  'text32k',
  'zstd',
] as const;
const DIST_STYLES = ['auto', 'even', 'key', 'all'];

export interface TableAttributes {
  /** Column name (as the catalog spells it) -> encoding, lower case. */
  readonly encodings: Readonly<Record<string, string>>;
  readonly distStyle?: string;
  readonly distKey?: string;
  readonly sortStyle?: 'compound' | 'interleaved' | 'auto';
  readonly sortKey: readonly string[];
}

export interface StrippedCreateTable {
  /** The statement without its Redshift attributes. */
  readonly text: string;
  readonly attributes: TableAttributes;
}

/** The text does not follow Redshift's CREATE TABLE grammar for its attributes. */
export class TableDdlError extends Error {
  override readonly name = 'TableDdlError';
}

const lower = (token: Token | undefined) => token?.text.toLowerCase() ?? '';

/** An identifier token as the catalog spells it: quoted as written, unquoted folded to lower case. */
function identifierOf(token: Token | undefined): string {
  if (!token) return '';
  return token.text.startsWith('"') ? token.text.slice(1, -1).replace(/""/g, '"') : token.text.toLowerCase();
}

/**
 * A CREATE TABLE text with its Redshift attributes cut out, or undefined
 * when it has none (or is not a CREATE TABLE with a column list). Throws
 * TableDdlError for an attribute that does not follow the grammar.
 */
export function stripTableAttributes(text: string): StrippedCreateTable | undefined {
  const tokens = scanTokens(text);
  if (lower(tokens[0]) !== 'create' || !tokens.slice(1, 4).some((t) => lower(t) === 'table')) return undefined;
  const open = tokens.findIndex((t) => t.text === '(');
  if (open < 0) return undefined;
  const cuts: [number, number][] = [];
  const encodings: Record<string, string> = {};
  const sortKey: string[] = [];
  let distKey: string | undefined;
  let distStyle: string | undefined;
  let sortStyle: TableAttributes['sortStyle'];
  let depth = 0;
  let element: Token[] = [];
  let close = -1;
  const columnOf = () =>
    element.length > 0 && !['constraint', 'primary', 'unique', 'foreign', 'check', 'like'].includes(lower(element[0])) ? identifierOf(element[0]) : undefined;
  for (let i = open; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.text === '(') {
      depth++;
      if (depth === 1) continue;
    } else if (token.text === ')') {
      depth--;
      if (depth === 0) {
        close = i;
        break;
      }
    } else if (depth === 1 && token.text === ',') {
      element = [];
      continue;
    } else if (depth === 1 && element.length > 0) {
      const column = columnOf();
      const word = lower(token);
      if (column !== undefined && word === 'encode') {
        const encoding = lower(tokens[i + 1]);
        if (!(ENCODINGS as readonly string[]).includes(encoding)) {
          throw new TableDdlError(`column ${column}: ENCODE ${tokens[i + 1]?.text ?? '(nothing)'} is not a Redshift encoding (one of ${ENCODINGS.join(', ')})`);
        }
        encodings[column] = encoding;
        cuts.push([token.start, tokens[i + 1]!.end]);
        i++;
        continue;
      }
      if (column !== undefined && (word === 'distkey' || word === 'sortkey')) {
        if (word === 'distkey') {
          if (distKey !== undefined) throw new TableDdlError(`DISTKEY is declared twice (${distKey}, ${column}): a table has one distribution key`);
          distKey = column;
        } else sortKey.push(column);
        cuts.push([token.start, token.end]);
        continue;
      }
    }
    if (depth >= 1) element.push(token);
  }
  if (close < 0) throw new TableDdlError('the column list is not closed by ")"');
  let i = close + 1;
  const start = i < tokens.length ? tokens[i]!.start : undefined;
  const expect = (want: string) => {
    if (tokens[i]?.text !== want) throw new TableDdlError(`expected "${want}" after ${tokens[i - 1]?.text}, found ${tokens[i]?.text ?? 'the end'}`);
    i++;
  };
  const columnList = (): string[] => {
    expect('(');
    const columns: string[] = [];
    for (;;) {
      const token = tokens[i];
      if (!token || !/^("|[A-Za-z_])/.test(token.text)) throw new TableDdlError(`expected a column name, found ${token?.text ?? 'the end'}`);
      columns.push(identifierOf(token));
      i++;
      if (tokens[i]?.text === ',') {
        i++;
        continue;
      }
      expect(')');
      return columns;
    }
  };
  while (i < tokens.length && tokens[i]!.text !== ';') {
    const word = lower(tokens[i]);
    i++;
    if (word === 'diststyle') {
      distStyle = lower(tokens[i]);
      if (!DIST_STYLES.includes(distStyle))
        throw new TableDdlError(`DISTSTYLE ${tokens[i]?.text ?? '(nothing)'} is not one of ${DIST_STYLES.join(', ').toUpperCase()}`);
      i++;
    } else if (word === 'distkey') {
      const columns = columnList();
      if (columns.length !== 1) throw new TableDdlError('DISTKEY names exactly one column');
      if (distKey !== undefined) throw new TableDdlError(`DISTKEY is declared twice (${distKey}, ${columns[0]}): a table has one distribution key`);
      distKey = columns[0];
    } else if (word === 'compound' || word === 'interleaved' || word === 'sortkey') {
      if (sortKey.length > 0 || sortStyle !== undefined)
        throw new TableDdlError('SORTKEY is declared twice (on a column and after the column list, or twice after it)');
      if (word !== 'sortkey') {
        if (lower(tokens[i]) !== 'sortkey') throw new TableDdlError(`expected SORTKEY after ${word.toUpperCase()}`);
        i++;
      }
      if (lower(tokens[i]) === 'auto' && word === 'sortkey') {
        sortStyle = 'auto';
        i++;
      } else {
        sortStyle = word === 'interleaved' ? 'interleaved' : 'compound';
        sortKey.push(...columnList());
      }
    } else if (word === 'encode') {
      if (lower(tokens[i]) !== 'auto') throw new TableDdlError('after the column list only ENCODE AUTO is allowed (encodings of columns go after their type)');
      i++;
    } else if (word === 'backup') {
      if (!['yes', 'no'].includes(lower(tokens[i]))) throw new TableDdlError('BACKUP takes YES or NO');
      i++;
    } else {
      throw new TableDdlError(
        `unexpected ${tokens[i - 1]!.text} after the column list (allowed: DISTSTYLE, DISTKEY (column), [COMPOUND | INTERLEAVED] SORTKEY (columns), SORTKEY AUTO, ENCODE AUTO, BACKUP)`,
      );
    }
  }
  if (start !== undefined && i > close + 1) cuts.push([start, tokens[i - 1]!.end]);
  if (cuts.length === 0) return undefined;
  if (sortKey.length > 0 && sortStyle === undefined) sortStyle = 'compound';
  const bytes = Buffer.from(text);
  const parts: Buffer[] = [];
  let copied = 0;
  for (const [from, to] of cuts.sort((a, b) => a[0] - b[0])) {
    parts.push(bytes.subarray(copied, from));
    copied = to;
  }
  parts.push(bytes.subarray(copied));
  const attributes: TableAttributes = {
    encodings,
    ...(distStyle !== undefined ? { distStyle } : distKey !== undefined ? { distStyle: 'key' } : {}),
    ...(distKey !== undefined ? { distKey } : {}),
    ...(sortStyle !== undefined ? { sortStyle } : {}),
    sortKey,
  };
  return { text: Buffer.concat(parts).toString(), attributes };
}

/** A column of a table DDL. */
export interface DdlColumn {
  readonly name: string;
  /** The type as information_schema.columns spells it, with length or precision: `numeric(14,2)`, `character varying(16)`. */
  readonly type: string;
  readonly hasDefault: boolean;
  /** NOT NULL, or in the PRIMARY KEY (which implies it). */
  readonly notNull: boolean;
}

/** A table body validated as Redshift DDL: its columns and attributes. */
export interface TableDdl {
  readonly columns: readonly DdlColumn[];
  readonly attributes: TableAttributes;
}

/** PostgreSQL's internal type names as information_schema.columns names them. */
const CATALOG_TYPE_NAMES: Record<string, string> = {
  int2: 'smallint',
  int4: 'integer',
  int8: 'bigint',
  float4: 'real',
  float8: 'double precision',
  bool: 'boolean',
  varchar: 'character varying',
  bpchar: 'character',
  timestamp: 'timestamp without time zone',
  timestamptz: 'timestamp with time zone',
  time: 'time without time zone',
  timetz: 'time with time zone',
};

function typeText(typeName: Record<string, unknown>): string {
  const all = names(typeName.names);
  const base = all[all.length - 1] ?? '';
  const name = CATALOG_TYPE_NAMES[base] ?? base;
  const mods = (Array.isArray(typeName.typmods) ? typeName.typmods : []).map((m) =>
    String((m as { A_Const?: { ival?: { ival?: number } } }).A_Const?.ival?.ival ?? 0),
  );
  if (name === 'numeric') return `numeric(${mods[0] ?? 18},${mods[1] ?? 0})`;
  if (name === 'character varying' || name === 'character') return `${name}(${mods[0] ?? (name === 'character' ? 1 : 256)})`;
  return name;
}

/**
 * The body of a CREATE TABLE (`(<columns and constraints>) <attributes>`),
 * checked as Redshift DDL: one column list of plain columns and key
 * constraints (no LIKE, no inheritance, no partitions, nothing after it but
 * Redshift's table attributes), types Redshift has, attributes naming its
 * columns. Throws TableDdlError or SqlSyntaxError saying what is wrong.
 */
export function parseTableDdl(body: string): TableDdl {
  const written = `CREATE TABLE ddl_probe ${body}`;
  // As the local endpoint reads it: Redshift's IDENTITY(seed, step) in PostgreSQL's grammar, then without the table attributes.
  const text = inPostgresGrammar(written);
  const stripped = stripTableAttributes(text);
  const plain = stripped?.text ?? text;
  const statements = parsePositional(toPositional(plain).text);
  if (statements.length !== 1 || kindOf(statements[0]!.node) !== 'CreateStmt')
    throw new TableDdlError('must be one column list in parentheses, with table attributes after it');
  const create = statements[0]!.node.CreateStmt as Record<string, unknown>;
  const relation = create.relation as { relname?: string; schemaname?: string };
  if (relation.relname !== 'ddl_probe' || relation.schemaname !== undefined) throw new TableDdlError('must begin with the column list in parentheses');
  for (const field of ['inhRelations', 'partspec', 'partbound', 'options', 'tablespacename', 'accessMethod', 'ofTypename']) {
    if (create[field] !== undefined && !(Array.isArray(create[field]) && create[field].length === 0)) {
      throw new TableDdlError('must hold columns, key constraints and Redshift table attributes only');
    }
  }
  if (create.oncommit !== undefined && create.oncommit !== 'ONCOMMIT_NOOP') throw new TableDdlError('must not use ON COMMIT');
  const unsupported = checkStatements(statements, redshiftSyntaxConstructs(written))[0];
  if (unsupported)
    throw new TableDdlError(
      `uses ${unsupported.construct}, which Amazon Redshift does not support (${unsupported.citation.title}: ${unsupported.citation.url})`,
    );
  const columns: DdlColumn[] = [];
  const primaryKey = new Set<string>();
  for (const element of (create.tableElts ?? []) as Record<string, unknown>[]) {
    const column = element.ColumnDef as Record<string, unknown> | undefined;
    if (column) {
      const constraints = ((column.constraints ?? []) as { Constraint: { contype: string } }[]).map((c) => c.Constraint.contype);
      columns.push({
        name: String(column.colname),
        type: typeText(column.typeName as Record<string, unknown>),
        hasDefault: constraints.includes('CONSTR_DEFAULT'),
        notNull: constraints.includes('CONSTR_NOTNULL') || constraints.includes('CONSTR_PRIMARY'),
      });
      continue;
    }
    const constraint = element.Constraint as { contype?: string; keys?: unknown } | undefined;
    if (!['CONSTR_PRIMARY', 'CONSTR_UNIQUE', 'CONSTR_FOREIGN'].includes(String(constraint?.contype))) {
      throw new TableDdlError('must hold columns and PRIMARY KEY, UNIQUE or FOREIGN KEY constraints only (no LIKE, no CHECK)');
    }
    if (constraint?.contype === 'CONSTR_PRIMARY') for (const key of names(constraint.keys)) primaryKey.add(key);
  }
  for (const [i, column] of columns.entries()) if (primaryKey.has(column.name)) columns[i] = { ...column, notNull: true };
  if (columns.length === 0) throw new TableDdlError('must declare at least one column');
  const attributes = stripped?.attributes ?? { encodings: {}, sortKey: [] };
  const known = new Set(columns.map((c) => c.name));
  const named = [...Object.keys(attributes.encodings), ...(attributes.distKey ? [attributes.distKey] : []), ...attributes.sortKey];
  const unknown = named.filter((c) => !known.has(c));
  if (unknown.length > 0) throw new TableDdlError(`its attributes name column(s) ${[...new Set(unknown)].join(', ')}, which it does not declare`);
  return { columns, attributes };
}

export { SqlSyntaxError };
