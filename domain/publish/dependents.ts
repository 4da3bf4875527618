/**
 * What the live table carries besides its rows, and what depends on it:
 * read from the catalog just before the swap (domain/publish/sql/swap.ts
 * `dependentsFacts`), re-applied to the new live table inside the swap
 * transaction, and fingerprinted so that the swap refuses to run on facts
 * that changed after they were read.
 */
import { createHash } from 'node:crypto';
import { ValidationError } from '../errors.ts';

/** A grantee as SVV_RELATION_PRIVILEGES names it: `user`, `group`, `role` or `public`. */
export type IdentityType = 'user' | 'group' | 'role' | 'public';

export interface Grant {
  readonly identityType: IdentityType;
  readonly identity: string;
  readonly privileges: readonly string[];
  readonly withGrantOption: boolean;
}

/** A privilege granted on some columns of the live table. */
export interface ColumnGrant {
  readonly identityType: IdentityType;
  readonly identity: string;
  readonly privilege: string;
  /** In name order. */
  readonly columns: readonly string[];
}

/** A row-level security policy attached to the live table for one grantee. */
export interface RlsAttachment {
  readonly policy: string;
  readonly identityType: IdentityType;
  readonly identity: string;
}

/** A masking policy attached to columns of the live table for one grantee. */
export interface MaskingAttachment {
  readonly policy: string;
  readonly identityType: IdentityType;
  readonly identity: string;
  readonly priority: number;
  readonly inputColumns: readonly string[];
  readonly outputColumns: readonly string[];
}

export interface DependentView {
  readonly schema: string;
  readonly view: string;
  /** Bytes of its definition as the catalog renders it (pg_get_viewdef): the procedure holds it in a varchar(65535). */
  readonly definitionBytes: number;
  readonly owner: string;
  /** Columns of the live table the view reads. */
  readonly columns: readonly string[];
}

/** A declared key of the live table: informational on Redshift, but its planner uses it. */
export interface DeclaredKey {
  readonly name: string;
  /** As pg_get_constraintdef renders it: `PRIMARY KEY (id)`, `FOREIGN KEY (x) REFERENCES s.t(y)`. */
  readonly definition: string;
}

/** A FOREIGN KEY of another table that references the live table. */
export interface ReferencingKey {
  readonly schema: string;
  readonly table: string;
  readonly name: string;
  /** As pg_get_constraintdef renders it, naming the live table. */
  readonly definition: string;
  /** The referencing table's owner: only an owner can drop and add its constraints. */
  readonly owner: string;
}

export interface LiveTableFacts {
  /** The database user the handlers run as (current_user). */
  readonly user: string;
  readonly grants: readonly Grant[];
  /** Privileges granted on columns, one per grantee, privilege and column set. */
  readonly columnGrants: readonly ColumnGrant[];
  /** RLS policies attached, and whether the table's ROW LEVEL SECURITY is on (policyFacts; none when not read). */
  readonly rlsPolicies: readonly RlsAttachment[];
  readonly rlsOn: boolean;
  readonly maskingPolicies: readonly MaskingAttachment[];
  /** Whether the policies' catalog could be read (the user is a superuser or holds sys:secadmin). */
  readonly policiesRead: boolean;
  /** The policies the incoming table has of its own (a restored version keeps its own through the renames). */
  readonly incoming: { readonly rlsPolicies: readonly RlsAttachment[]; readonly rlsOn: boolean; readonly maskingPolicies: readonly MaskingAttachment[] };
  /** Column name -> default expression as the catalog renders it. */
  readonly defaults: ReadonlyMap<string, string>;
  /** The md5 of the table's comment, and of each column's (column name -> digest): the texts stay in the catalog. */
  readonly tableComment?: string;
  readonly columnComments: ReadonlyMap<string, string>;
  /** Whether the table or a column has a comment (the swap copies them: manifest.ts copy_comments). */
  readonly commented: boolean;
  readonly views: readonly DependentView[];
  /** PRIMARY KEY, UNIQUE and FOREIGN KEY constraints, in name order. */
  readonly keys: readonly DeclaredKey[];
  /** Names of the keys the table about to become live already has (a restored version's own). */
  readonly incomingKeys: readonly string[];
  /** Other tables' foreign keys referencing the live table. */
  readonly referencingKeys: readonly ReferencingKey[];
  /** Columns of the staging table that becomes live. */
  readonly stagingColumns: ReadonlySet<string>;
  /** md5 chained over the rows' `fact` column in order: what the swap checks again under its locks. */
  readonly fingerprint: string;
}

/** A row of the facts query: `kind`, `name`, `detail`, `extra` and the canonical `fact` text. */
export interface FactRow {
  readonly kind: unknown;
  readonly name: unknown;
  readonly detail: unknown;
  readonly extra: unknown;
  readonly fact: unknown;
}

/** md5 chained over the facts, as the guard procedure computes it: `fp := md5(fp || fact)` from ''. */
export function factsFingerprint(facts: readonly string[]): string {
  let fp = '';
  for (const fact of facts)
    fp = createHash('md5')
      .update(fp + fact, 'utf8')
      .digest('hex');
  return fp;
}

const IDENTITY_TYPES: ReadonlySet<string> = new Set(['user', 'group', 'role', 'public']);

/** The incoming table's own policies (policyFacts), read as the live table's kinds into `incoming`. */
const INCOMING_POLICY_KINDS: ReadonlySet<string> = new Set(['incoming_rls', 'incoming_rls_on', 'incoming_masking']);

/** `type:name` of a grantee as the facts queries render it. */
function identityOf(text: string): { identityType: IdentityType; identity: string } {
  const at = text.indexOf(':');
  const type = (at < 0 ? text : text.slice(0, at)).trim().toLowerCase();
  const identity = at < 0 ? '' : text.slice(at + 1);
  if (!IDENTITY_TYPES.has(type)) throw new ValidationError(`unknown grantee type ${type} for ${identity}`);
  return { identityType: type as IdentityType, identity };
}

/** The column names of a masking attachment, as SVV_ATTACHED_MASKING_POLICY lists them (a JSON array, or names by commas). */
function columnList(text: string | undefined): string[] {
  const trimmed = (text ?? '').trim();
  if (trimmed === '') return [];
  if (trimmed.startsWith('[')) {
    const parsed: unknown = JSON.parse(trimmed);
    if (Array.isArray(parsed)) return parsed.map(String);
  }
  return trimmed
    .replace(/^\(|\)$/g, '')
    .split(',')
    .map((c) => c.trim().replace(/^"|"$/g, ''))
    .filter((c) => c !== '');
}

/**
 * The facts as the queries returned them (rows in `fact` order): the
 * dependents, and the policies when they could be read (policyFacts).
 * The fingerprint is of the dependents' rows only.
 */
export function liveTableFacts(rows: readonly FactRow[], policyRows?: readonly FactRow[]): LiveTableFacts {
  let user = '';
  const grants = new Map<string, { identityType: IdentityType; identity: string; privileges: string[]; withGrantOption: boolean }>();
  const columnGrants = new Map<string, { identityType: IdentityType; identity: string; privilege: string; columns: string[] }>();
  const rlsPolicies: RlsAttachment[] = [];
  let rlsOn = false;
  const maskingPolicies: MaskingAttachment[] = [];
  const incoming = { rlsPolicies: [] as RlsAttachment[], rlsOn: false, maskingPolicies: [] as MaskingAttachment[] };
  const defaults = new Map<string, string>();
  const columnComments = new Map<string, string>();
  let tableComment: string | undefined;
  const views = new Map<string, { schema: string; view: string; definitionBytes: number; owner: string; columns: string[] }>();
  const viewColumns: [string, string][] = [];
  const stagingColumns = new Set<string>();
  const keys: DeclaredKey[] = [];
  const incomingKeys: string[] = [];
  const referencing: { table: string; name: string; definition: string }[] = [];
  const referencingOwners = new Map<string, string>();
  for (const row of [...rows, ...(policyRows ?? [])]) {
    const name = String(row.name ?? '');
    const detail = String(row.detail ?? '');
    const extra = String(row.extra ?? '');
    const kind = String(row.kind);
    const policies = INCOMING_POLICY_KINDS.has(kind) ? incoming : undefined;
    switch (policies ? kind.slice('incoming_'.length) : kind) {
      case 'user':
        user = name;
        break;
      case 'grant': {
        const { identityType, identity } = identityOf(name);
        const key = `${identityType}:${identity}:${extra}`;
        const grant = grants.get(key) ?? { identityType, identity, privileges: [], withGrantOption: extra === 'admin' };
        if (!grant.privileges.includes(detail.toUpperCase())) grant.privileges.push(detail.toUpperCase());
        grants.set(key, grant);
        break;
      }
      case 'column_grant': {
        const { identityType, identity } = identityOf(name);
        const key = `${identityType}:${identity}:${detail.toUpperCase()}`;
        const grant = columnGrants.get(key) ?? { identityType, identity, privilege: detail.toUpperCase(), columns: [] };
        if (!grant.columns.includes(extra)) grant.columns.push(extra);
        columnGrants.set(key, grant);
        break;
      }
      case 'rls':
        (policies?.rlsPolicies ?? rlsPolicies).push({ policy: name, ...identityOf(detail) });
        break;
      case 'rls_on':
        if (policies) policies.rlsOn = true;
        else rlsOn = true;
        break;
      case 'masking': {
        const [priority, input, output] = extra.split('|');
        (policies?.maskingPolicies ?? maskingPolicies).push({
          policy: name,
          ...identityOf(detail),
          priority: Number(priority),
          inputColumns: columnList(input),
          outputColumns: columnList(output),
        });
        break;
      }
      case 'default':
        defaults.set(name, detail);
        break;
      case 'comment':
        if (name === '') tableComment = detail;
        else columnComments.set(name, detail);
        break;
      case 'view': {
        const [schema, view] = splitQualified(name);
        views.set(name, { schema, view, definitionBytes: Number(detail.split(':')[1] ?? 0), owner: extra, columns: [] });
        break;
      }
      case 'view_column':
        viewColumns.push([name, detail]);
        break;
      case 'key':
        keys.push({ name, definition: detail });
        break;
      case 'incoming_key':
        incomingKeys.push(name);
        break;
      case 'referencing_key':
        referencing.push({ table: name, name: detail, definition: extra });
        break;
      case 'referencing_owner':
        referencingOwners.set(name, detail);
        break;
      case 'staging_column':
        stagingColumns.add(name);
        break;
    }
  }
  for (const [view, column] of viewColumns) {
    const found = views.get(view);
    if (found && !found.columns.includes(column)) found.columns.push(column);
  }
  return {
    user,
    grants: [...grants.values()],
    columnGrants: [...columnGrants.values()].map((g) => ({ ...g, columns: [...g.columns].sort() })),
    rlsPolicies,
    rlsOn,
    maskingPolicies,
    policiesRead: policyRows !== undefined,
    incoming,
    defaults,
    ...(tableComment !== undefined ? { tableComment } : {}),
    columnComments,
    commented: tableComment !== undefined || columnComments.size > 0,
    views: [...views.values()],
    keys,
    incomingKeys,
    referencingKeys: referencing.map((k) => {
      const [schema, table] = splitQualified(k.table);
      return { schema, table, name: k.name, definition: k.definition, owner: referencingOwners.get(k.table) ?? '' };
    }),
    stagingColumns,
    fingerprint: factsFingerprint(rows.map((r) => String(r.fact ?? ''))),
  };
}

function splitQualified(name: string): [string, string] {
  const at = name.indexOf('.');
  return [name.slice(0, at), name.slice(at + 1)];
}

/**
 * Why the views and other tables' foreign keys cannot be re-pointed at the
 * new table, or undefined when they can: a view reading a column the new
 * table lacks (it would fail or change meaning), or a view or referencing
 * table the handlers' user does not own (only the owner or a superuser can
 * replace a view or change a table's constraints).
 */
export function dependentViewProblems(liveTable: string, facts: LiveTableFacts): string | undefined {
  const problems: string[] = [];
  for (const v of facts.views) {
    const missing = v.columns.filter((c) => !facts.stagingColumns.has(c));
    if (v.definitionBytes > MAX_VIEW_DEFINITION_BYTES) {
      problems.push(
        `view ${v.schema}.${v.view} has a definition of ${v.definitionBytes} bytes, more than the ${MAX_VIEW_DEFINITION_BYTES} a Redshift varchar holds, so the publish cannot re-create it over the new table; ` +
          `re-create it WITH NO SCHEMA BINDING (a late-binding view needs nothing) or shorten it, and re-run`,
      );
    } else if (missing.length > 0) {
      problems.push(
        `view ${v.schema}.${v.view} reads column${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of ${liveTable}, which the new table lacks; ` +
          `drop or change the view (or add the column to the pipeline's output) and re-run`,
      );
    } else if (v.owner !== facts.user) {
      problems.push(
        `view ${v.schema}.${v.view} is owned by ${v.owner || '(unknown)'}, not by "${facts.user}", so the publish cannot re-point it at the new table; ` +
          `run ALTER TABLE ${v.schema}.${v.view} OWNER TO "${facts.user}" as a superuser, or re-create it WITH NO SCHEMA BINDING, and re-run`,
      );
    }
  }
  for (const table of new Set(facts.referencingKeys.filter((k) => k.owner !== facts.user).map((k) => `${k.schema}.${k.table}|${k.owner}`))) {
    const [name, owner] = table.split('|');
    problems.push(
      `table ${name} has a foreign key referencing ${liveTable} and is owned by ${owner || '(unknown)'}, not by "${facts.user}", so the publish cannot ` +
        `re-point the key at the new table (and the old version could never be dropped); run ALTER TABLE ${name} OWNER TO "${facts.user}" as a superuser, ` +
        `or drop the foreign key, and re-run`,
    );
  }
  return problems.length === 0 ? undefined : `publish refused before the swap: ${problems.join('; ')}`;
}

/** The longest view definition the swap re-creates: varchar's limit, which the procedure holds it in. */
export const MAX_VIEW_DEFINITION_BYTES = 65_535;

/** What changed on the old version while the swap waited (a GRANT, REVOKE or comment issued then landed there). */
export interface CarryOverCorrections {
  /** Grants to apply to the new live table (no views, no keys, no defaults, no policies). */
  readonly apply: LiveTableFacts;
  /** Privileges the new live table got that the old version no longer has. */
  readonly revoke: readonly Grant[];
  readonly revokeColumns: readonly ColumnGrant[];
  /** Whether a comment differs: the comments are copied from the old version again. */
  readonly comments: boolean;
}

function privilegeKeys(grants: readonly Grant[]): Map<string, Grant> {
  const keys = new Map<string, Grant>();
  for (const g of grants) for (const p of g.privileges) keys.set(`${g.identityType}:${g.identity}:${p}`, { ...g, privileges: [p] });
  return keys;
}

function columnPrivilegeKeys(grants: readonly ColumnGrant[]): Map<string, ColumnGrant> {
  const keys = new Map<string, ColumnGrant>();
  for (const g of grants) for (const c of g.columns) keys.set(`${g.identityType}:${g.identity}:${g.privilege}:${c}`, { ...g, columns: [c] });
  return keys;
}

function sameMap(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}

/**
 * The old version's grants and comments as read after the swap
 * committed, against what the swap carried over: anything issued on the
 * live table while the swap waited for its locks reached the old version
 * (its name then), not the new table. Undefined when nothing differs.
 */
export function carryOverCorrections(applied: LiveTableFacts, oldVersion: LiveTableFacts): CarryOverCorrections | undefined {
  const had = privilegeKeys(applied.grants);
  const has = privilegeKeys(oldVersion.grants);
  const grants = [...has].filter(([key]) => !had.has(key)).map(([, g]) => g);
  const revoke = [...had].filter(([key]) => !has.has(key)).map(([, g]) => g);
  const hadColumns = columnPrivilegeKeys(applied.columnGrants);
  const hasColumns = columnPrivilegeKeys(oldVersion.columnGrants);
  const columnGrants = [...hasColumns].filter(([key]) => !hadColumns.has(key)).map(([, g]) => g);
  const revokeColumns = [...hadColumns].filter(([key]) => !hasColumns.has(key)).map(([, g]) => g);
  const comments = oldVersion.tableComment !== applied.tableComment || !sameMap(oldVersion.columnComments, applied.columnComments);
  if (grants.length + revoke.length + columnGrants.length + revokeColumns.length === 0 && !comments) return undefined;
  return {
    apply: {
      ...applied,
      grants,
      columnGrants,
      // A default cannot change on Redshift once its column exists (no ALTER COLUMN ... SET DEFAULT).
      defaults: new Map(),
      views: [],
      keys: [],
      incomingKeys: [],
      referencingKeys: [],
      rlsPolicies: [],
      rlsOn: false,
      maskingPolicies: [],
      policiesRead: false,
    },
    revoke,
    revokeColumns,
    comments,
  };
}
