// Redshift's row-level security and dynamic data masking statements, which
// PostgreSQL's parser does not read, as calls of the stand-in functions of
// SYSTEM_VIEWS_SCHEMA (system-views.ts SECURITY_POLICIES): a policy is
// recorded, an RLS attachment becomes a PostgreSQL policy on the table (by
// oid, so it follows a rename), a masking attachment is only recorded (masking
// is not enforced locally). Statement forms: r_CREATE_RLS_POLICY, r_ATTACH_RLS_POLICY,
// r_CREATE_MASKING_POLICY, r_ATTACH_MASKING_POLICY under https://docs.aws.amazon.com/redshift/latest/dg/
import { parsePositional } from '../../domain/redshift-sql/parser.ts';
import { SYSTEM_VIEWS_SCHEMA } from './system-views.ts';

const S = SYSTEM_VIEWS_SCHEMA;
const IDENT = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;
const QUALIFIED = String.raw`${IDENT}(?:\s*\.\s*${IDENT})?`;
/** A parenthesised list whose items may hold one level of parentheses: `(a varchar(10), b numeric(10, 2))`. */
const LIST = String.raw`\(((?:[^()]|\([^()]*\))*)\)`;
const GRANTEE = String.raw`(?:PUBLIC|ROLE\s+${IDENT}|${IDENT})`;
const GRANTEES = String.raw`${GRANTEE}(?:\s*,\s*${GRANTEE})*`;

const STARTS = /^\s*(CREATE|ALTER|DROP|ATTACH|DETACH)\s+(RLS|MASKING)\s+POLICY\b/i;
// PostgreSQL's ENABLE, DISABLE and FORCE forms are left to the allow-list, which refuses them.
const ALTER_TABLE_RLS = /^\s*ALTER\s+TABLE\s+.*(?<!ENABLE|DISABLE|FORCE)\s+ROW\s+LEVEL\s+SECURITY\b/is;

/** A statement of Redshift's RLS or masking grammar: its translation, or why it is refused. */
export type PolicyStatement = { text: string } | { refusal: string };

/** The translation of a Redshift RLS or masking statement; undefined for any other text. */
export function policyStatement(original: string): PolicyStatement | undefined {
  const text = original.trim().replace(/;\s*$/, '');
  const start = STARTS.exec(text);
  if (start) {
    const kind = start[2]!.toUpperCase() as 'RLS' | 'MASKING';
    const verb = start[1]!.toUpperCase();
    const page = `r_${verb}_${kind}_POLICY`;
    const call = (kind === 'RLS' ? rls : masking)[verb]?.(text);
    return call ?? refused(`${verb} ${kind} POLICY`, page);
  }
  if (ALTER_TABLE_RLS.test(text)) {
    const m = new RegExp(String.raw`^ALTER\s+TABLE\s+(${QUALIFIED})\s+ROW\s+LEVEL\s+SECURITY\s+(ON|OFF)(\s+FOR\s+DATASHARES)?$`, 'i').exec(text);
    if (!m) return refused('ALTER TABLE ... ROW LEVEL SECURITY { ON | OFF } [ FOR DATASHARES ]', 'r_ALTER_TABLE');
    return { text: `SELECT ${S}.set_row_level_security(${table(m[1]!)}, ${m[2]!.toUpperCase() === 'ON'}, ${m[3] !== undefined})` };
  }
  return undefined;
}

function refused(construct: string, page: string): { refusal: string } {
  return { refusal: `ERROR: this form of ${construct} is not supported on Amazon Redshift (https://docs.aws.amazon.com/redshift/latest/dg/${page}.html)` };
}

type Translate = (text: string) => PolicyStatement | undefined;

const rls: Record<string, Translate> = {
  CREATE: (text) => {
    const m = new RegExp(String.raw`^CREATE\s+RLS\s+POLICY\s+(${IDENT})(?:\s+WITH\s*${LIST}(?:\s+AS\s+(${IDENT}))?)?\s+USING\s*\(([\s\S]*)\)$`, 'i').exec(text);
    if (!m) return undefined;
    const columns = m[2] === undefined ? [] : withColumns(m[2]);
    if (columns === undefined) return undefined;
    const lookups = lookupTables(m[4]!);
    const oids = lookups.length === 0 ? 'ARRAY[]::oid[]' : `ARRAY[${lookups.map((t) => `${table(t)}::oid`).join(', ')}]`;
    return {
      text: `SELECT ${S}.create_rls_policy(${lit(name(m[1]!))}, ${lit(JSON.stringify(columns))}, ${m[3] ? lit(name(m[3])) : 'NULL'}, ${lit(m[4]!.trim())}, ${oids})`,
    };
  },
  DROP: (text) => {
    const m = new RegExp(String.raw`^DROP\s+RLS\s+POLICY\s+(IF\s+EXISTS\s+)?(${IDENT})(?:\s+(CASCADE|RESTRICT))?$`, 'i').exec(text);
    if (!m) return undefined;
    return { text: `SELECT ${S}.drop_rls_policy(${lit(name(m[2]!))}, ${m[1] !== undefined}, ${m[3]?.toUpperCase() === 'CASCADE'})` };
  },
  ALTER: (text) => {
    const m = new RegExp(String.raw`^ALTER\s+RLS\s+POLICY\s+(${IDENT})\s+USING\s*\(([\s\S]*)\)$`, 'i').exec(text);
    if (!m) return undefined;
    return { text: `SELECT ${S}.alter_rls_policy(${lit(name(m[1]!))}, ${lit(m[2]!.trim())})` };
  },
  ATTACH: (text) => attachment(text, 'ATTACH'),
  DETACH: (text) => attachment(text, 'DETACH'),
};

function attachment(text: string, verb: 'ATTACH' | 'DETACH'): PolicyStatement | undefined {
  const m = new RegExp(
    String.raw`^${verb}\s+RLS\s+POLICY\s+(${IDENT})\s+ON\s+(?:TABLE\s+)?(${QUALIFIED}(?:\s*,\s*${QUALIFIED})*)\s+${verb === 'ATTACH' ? 'TO' : 'FROM'}\s+(${GRANTEES})$`,
    'i',
  ).exec(text);
  if (!m) return undefined;
  const fn = verb === 'ATTACH' ? 'attach_rls_policy' : 'detach_rls_policy';
  const calls = split(m[2]!).flatMap((t) => grantees(m[3]!).map((g) => `${S}.${fn}(${lit(name(m[1]!))}, ${table(t)}, ${lit(g.name)}, ${lit(g.kind)})`));
  return { text: `SELECT ${calls.join(', ')}` };
}

const masking: Record<string, Translate> = {
  CREATE: (text) => {
    const m = new RegExp(String.raw`^CREATE\s+MASKING\s+POLICY\s+(${IDENT})\s+WITH\s*${LIST}\s+USING\s*\(([\s\S]*)\)$`, 'i').exec(text);
    if (!m) return undefined;
    const columns = withColumns(m[2]!);
    if (columns === undefined) return undefined;
    return { text: `SELECT ${S}.create_masking_policy(${lit(name(m[1]!))}, ${lit(JSON.stringify(columns))}, ${lit(m[3]!.trim())})` };
  },
  ALTER: (text) => {
    const m = new RegExp(String.raw`^ALTER\s+MASKING\s+POLICY\s+(${IDENT})\s+USING\s*\(([\s\S]*)\)$`, 'i').exec(text);
    if (!m) return undefined;
    return { text: `SELECT ${S}.alter_masking_policy(${lit(name(m[1]!))}, ${lit(m[2]!.trim())})` };
  },
  DROP: (text) => {
    const m = new RegExp(String.raw`^DROP\s+MASKING\s+POLICY\s+(${IDENT})$`, 'i').exec(text);
    if (!m) return undefined;
    return { text: `SELECT ${S}.drop_masking_policy(${lit(name(m[1]!))})` };
  },
  ATTACH: (text) => {
    const m = new RegExp(
      String.raw`^ATTACH\s+MASKING\s+POLICY\s+(${IDENT})\s+ON\s+(${QUALIFIED})\s*\(([^)]*)\)(?:\s+USING\s*\(([^)]*)\))?\s+TO\s+(${GRANTEE})(?:\s+PRIORITY\s+(\d+))?$`,
      'i',
    ).exec(text);
    if (!m) return undefined;
    const output = columnNames(m[3]!);
    const input = m[4] === undefined ? output : columnNames(m[4]);
    const [g] = grantees(m[5]!);
    return {
      text: `SELECT ${S}.attach_masking_policy(${lit(name(m[1]!))}, ${table(m[2]!)}, ${lit(JSON.stringify(output))}, ${lit(JSON.stringify(input))}, ${lit(g!.name)}, ${lit(g!.kind)}, ${m[6] ?? 0})`,
    };
  },
  DETACH: (text) => {
    const m = new RegExp(String.raw`^DETACH\s+MASKING\s+POLICY\s+(${IDENT})\s+ON\s+(${QUALIFIED})\s*\(([^)]*)\)\s+FROM\s+(${GRANTEE})$`, 'i').exec(text);
    if (!m) return undefined;
    const [g] = grantees(m[4]!);
    return {
      text: `SELECT ${S}.detach_masking_policy(${lit(name(m[1]!))}, ${table(m[2]!)}, ${lit(JSON.stringify(columnNames(m[3]!)))}, ${lit(g!.name)}, ${lit(g!.kind)})`,
    };
  },
};

/** An identifier's name: a delimited one as written, any other folded to lower case, as Redshift folds it. */
function name(ident: string): string {
  return ident.startsWith('"') ? ident.slice(1, -1).replace(/""/g, '"') : ident.toLowerCase();
}

function lit(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** The table's oid, resolved on the caller's search_path; an unknown table fails in the stand-in function. */
function table(qualified: string): string {
  return `to_regclass(${lit(qualified.replace(/\s+/g, ''))})`;
}

function split(list: string): string[] {
  return [...list.matchAll(new RegExp(QUALIFIED, 'g'))].map((m) => m[0]);
}

function columnNames(list: string): string[] {
  return [...list.matchAll(new RegExp(IDENT, 'g'))].map((m) => name(m[0]));
}

/** `col type [, ...]` of a WITH clause; undefined when it is not that. */
function withColumns(list: string): { colname: string; type: string }[] | undefined {
  const parts = list.split(/,(?![^()]*\))/).map((p) => p.trim());
  const columns = parts.map((p) => new RegExp(String.raw`^(${IDENT})\s+(.+)$`).exec(p));
  if (columns.some((c) => !c)) return undefined;
  return columns.map((c) => ({ colname: name(c![1]!), type: c![2]!.trim() }));
}

function grantees(list: string): { name: string; kind: 'user' | 'role' | 'public' }[] {
  return [...list.matchAll(new RegExp(GRANTEE, 'gi'))].map((m) => {
    const g = m[0];
    if (/^PUBLIC$/i.test(g)) return { name: 'public', kind: 'public' };
    const role = new RegExp(String.raw`^ROLE\s+(${IDENT})$`, 'i').exec(g);
    return role ? { name: name(role[1]!), kind: 'role' } : { name: name(g), kind: 'user' };
  });
}

/**
 * The tables a predicate's subqueries read: its lookup tables, which
 * Redshift refuses to drop or rename while a policy refers to them
 * (https://docs.aws.amazon.com/redshift/latest/dg/t_rls_object_dependency.html).
 */
function lookupTables(predicate: string): string[] {
  let nodes: unknown[];
  try {
    nodes = parsePositional(`SELECT 1 WHERE ${predicate}`).map((st) => st.node);
  } catch {
    return [];
  }
  const found = new Set<string>();
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== 'object') return;
    const range = (value as { RangeVar?: { schemaname?: string; relname: string } }).RangeVar;
    if (range)
      found.add(
        [range.schemaname, range.relname]
          .filter((n) => n !== undefined)
          .map((n) => `"${n!.replace(/"/g, '""')}"`)
          .join('.'),
      );
    Object.values(value).forEach(walk);
  };
  walk(nodes);
  return [...found];
}
