// Walking libpg-query's JSON parse trees: a node is an object with one key,
// its kind (`{ RangeVar: { relname: ... } }`); fields hold nodes, lists of
// nodes, or plain values. A field declared with one struct type holds that
// struct without the kind key (`InsertStmt.relation` is a bare RangeVar):
// FIELD_KINDS names those.
import type { AstNode } from './parser.ts';

const KIND = /^[A-Z]/;

const FIELD_KINDS: Record<string, string> = {
  relation: 'RangeVar',
  typevar: 'RangeVar',
  pktable: 'RangeVar',
  typeName: 'TypeName',
  onConflictClause: 'OnConflictClause',
  returningClause: 'ReturningClause',
  withClause: 'WithClause',
  intoClause: 'IntoClause',
  partspec: 'PartitionSpec',
  partbound: 'PartitionBoundSpec',
};

/** A node of the tree with its kind and fields. */
export interface Visited {
  kind: string;
  fields: Record<string, unknown>;
}

/** Calls `visit` for every node under `root`, depth first, parents before children. */
export function walk(root: unknown, visit: (node: Visited) => void): void {
  if (Array.isArray(root)) {
    for (const item of root) walk(item, visit);
    return;
  }
  if (root === null || typeof root !== 'object') return;
  for (const [key, value] of Object.entries(root)) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const kind = KIND.test(key) ? key : FIELD_KINDS[key];
      if (kind) visit({ kind, fields: value as Record<string, unknown> });
    }
    walk(value, visit);
  }
}

/** Every node of one kind under `root`. */
export function nodesOf(root: unknown, kind: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  walk(root, (node) => {
    if (node.kind === kind) found.push(node.fields);
  });
  return found;
}

/** The kind of a statement node, e.g. `SelectStmt`. */
export function kindOf(node: AstNode): string {
  return Object.keys(node)[0] ?? '';
}

/** The `sval` strings of a name list (`[{ String: { sval } }]`), e.g. a qualified function name. */
export function names(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((item) => String((item as { String?: { sval?: unknown } }).String?.sval ?? ''));
}

/**
 * The range variables (tables and views) under `root` other than references
 * to its common table expressions, in order of appearance in the text.
 */
export function relations(root: unknown): Record<string, unknown>[] {
  const cteNames = new Set(nodesOf(root, 'CommonTableExpr').map((cte) => String(cte.ctename)));
  return nodesOf(root, 'RangeVar')
    .filter((range) => range.schemaname !== undefined || !cteNames.has(String(range.relname)))
    .sort((a, b) => Number(a.location) - Number(b.location));
}

export type RelationKind = 'catalog' | 'system' | 'user';

const SYSTEM_PREFIX = /^(stl|stv|svl|svv|sys|svcs|stcs)_/;

/**
 * Catalog tables (PG_*, information_schema) live on the leader node; system
 * tables and views (STL, STV, SVL, SVV, SYS, locally in local_redshift) and
 * user tables are read on the compute nodes. A statement reading only
 * catalog tables, or no table, runs on the leader node.
 */
export function relationKind(range: Record<string, unknown>): RelationKind {
  const schema = range.schemaname;
  const table = typeof range.relname === 'string' ? range.relname.toLowerCase() : '';
  if (schema === 'information_schema') return 'catalog';
  const builtIn = schema === undefined || schema === 'pg_catalog' || schema === 'local_redshift';
  if (builtIn && table.startsWith('pg_')) return 'catalog';
  if (builtIn && SYSTEM_PREFIX.test(table)) return 'system';
  return schema === 'pg_catalog' ? 'catalog' : 'user';
}
