// A live table as production ones are, for test/workflow/real-catalog*.test.ts
// (wide-pipeline.ts imported first): 30 columns, all commented (multi-line, with
// backslashes), a default, grants to a user, group, role and Identity Center name,
// column grants, an RLS policy, three masking policies, two bound views and a
// foreign key: more carry-over than 40 statements hold, so every swap goes through
// run_statements (docs/decisions/one-transaction-however-large.md). With `identity`,
// an IDENTITY column for the in-place paths (docs/decisions/identity-columns.md).
import { expect } from 'vitest';
import { Warehouse as DataApiWarehouse, DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { localTarget } from '../../local/aws-clients.ts';
import { ensureLocalUser, LOCAL_PIPELINE_USER, localUserPassword } from '../../local/database-users.ts';
import { withClient } from '../../local/pg-clients.ts';
import { addIdentityColumn, IDENTITY_COLUMN, SEED, STEP } from './identity-column.ts';
import { EXTRA_COLUMNS } from './wide-pipeline.ts';
import { LIVE, type Workflow } from './workflow.ts';

export const RESTRICTED = 'catalog_restricted';
export const COLUMN_READER = 'catalog_columns';
const GROUP = 'catalog_group';
const ROLE = 'catalog_role';
const IDC = 'AWSIDC:catalog.alice@example.com';
export const TABLE_COMMENT = 'Order lines, one row per line.\nAmounts in EUR; a path C:\\exports\\lines stays as written.';

const SAMPLE_COLUMNS = ['order_id', 'line_no', 'ordered_at', 'customer_id', 'product_id', 'quantity', 'amount', 'unit_price'];

const superuserOf = (wf: Workflow) => new DataApiWarehouse(wf.wh.client, localTarget(wf.wh.pg.database, wf.wh.pg.user), DEFAULT_POLL);

export async function countAs(wf: Workflow, user: string, sql: string): Promise<number> {
  return withClient({ ...wf.wh.pg, user, password: localUserPassword(wf.wh.pg, user) }, async (client) => Number((await client.query(sql)).rows[0]!.n));
}

const commentOf = (column: string, i: number) =>
  i % 10 === 0 ? `The ${column} of the line.\nSee C:\\docs\\${column}.md; it's "quoted".` : `the ${column} of the line`;

/** Everything of the live table but its rows, as the catalog shows it. */
export async function catalogOf(wf: Workflow): Promise<Record<string, unknown>> {
  const su = superuserOf(wf);
  const q = async (sql: string) => su.query({ sql }, 'catalog');
  return {
    defaults: await q(`SELECT column_name, column_default FROM information_schema.columns
                        WHERE table_schema = 'analytics' AND table_name = 'sales_order_lines' AND column_default IS NOT NULL ORDER BY 1`),
    comments: await q(`SELECT COALESCE(a.attname, '') AS col, d.description FROM pg_description d
                         JOIN pg_class c ON c.oid = d.objoid JOIN pg_namespace n ON n.oid = c.relnamespace
                         LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.objsubid AND d.objsubid > 0
                        WHERE n.nspname = 'analytics' AND c.relname = 'sales_order_lines' AND d.classoid = 'pg_class'::regclass ORDER BY 1`),
    grants: await q(`SELECT identity_type, identity_name, privilege_type FROM svv_relation_privileges
                      WHERE namespace_name = 'analytics' AND relation_name = 'sales_order_lines' ORDER BY 1, 2, 3`),
    columnGrants: await q(`SELECT identity_name, column_name, privilege_type FROM svv_column_privileges
                            WHERE namespace_name = 'analytics' AND relation_name = 'sales_order_lines' ORDER BY 1, 2, 3`),
    rls: await q(`SELECT polname, grantee, granteekind, is_rls_on FROM svv_rls_attached_policy
                   WHERE relschema = 'analytics' AND relname = 'sales_order_lines' ORDER BY 1, 2`),
    masking: await q(`SELECT policy_name, grantee, priority, input_columns, output_columns FROM svv_attached_masking_policy
                       WHERE schema_name = 'analytics' AND table_name = 'sales_order_lines' ORDER BY 1, 2`),
    keys: await q(`SELECT con.conname, pg_get_constraintdef(con.oid) AS def FROM pg_constraint con JOIN pg_class t ON t.oid = con.confrelid
                    WHERE t.relname = 'sales_order_lines' ORDER BY 1`),
    views: await q(`SELECT DISTINCT v.relname FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid JOIN pg_class v ON v.oid = r.ev_class
                     WHERE d.refobjid = 'analytics.sales_order_lines'::regclass AND v.oid <> d.refobjid ORDER BY 1`),
  };
}

/**
 * The sample (already arranged, with the wide source) given the wide live
 * table and the whole catalog, and with `identity` an IDENTITY(1000, 7)
 * column; what the catalog then is.
 */
export async function arrangeCatalog(wf: Workflow, options: { readonly identity?: boolean } = {}): Promise<Record<string, unknown>> {
  for (const user of [RESTRICTED, COLUMN_READER]) await ensureLocalUser(wf.wh.pg, user);
  await wf.query(`DO $$ BEGIN CREATE ROLE "${IDC}"; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`);
  for (const role of [GROUP, ROLE]) await wf.query(`DO $$ BEGIN CREATE ROLE ${role}; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`);
  for (const column of EXTRA_COLUMNS) await wf.query(`ALTER TABLE ${LIVE} ADD COLUMN ${column} integer`);
  if (options.identity === true) await wf.query(addIdentityColumn(LIVE));
  // PostgreSQL's own words for what Redshift has no statement for on an existing column.
  await wf.query(`ALTER TABLE ${LIVE} ALTER COLUMN quantity SET DEFAULT 1`);
  // Written as PostgreSQL reads a literal (a backslash is itself; Redshift's literals escape with it: docs/redshift.md).
  const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
  await wf.query(`COMMENT ON TABLE ${LIVE} IS ${literal(TABLE_COMMENT)}`);
  for (const [i, column] of [...SAMPLE_COLUMNS, ...EXTRA_COLUMNS].entries())
    await wf.query(`COMMENT ON COLUMN ${LIVE}.${column} IS ${literal(commentOf(column, i))}`);
  const setup = [
    `GRANT USAGE ON SCHEMA analytics TO ${RESTRICTED}, ${COLUMN_READER}, GROUP ${GROUP}, ROLE ${ROLE}, "${IDC}"`,
    `GRANT SELECT ON TABLE ${LIVE} TO ${RESTRICTED}, GROUP ${GROUP}, ROLE ${ROLE}, "${IDC}"`,
    `GRANT INSERT, UPDATE ON TABLE ${LIVE} TO GROUP ${GROUP}`,
    `GRANT DELETE ON TABLE ${LIVE} TO ROLE ${ROLE}`,
    `GRANT REFERENCES ON TABLE ${LIVE} TO "${IDC}"`,
    `GRANT SELECT (order_id, amount) ON TABLE ${LIVE} TO ${COLUMN_READER}`,
    `GRANT SELECT (extra_01, extra_02) ON TABLE ${LIVE} TO ${COLUMN_READER}`,
    `GRANT UPDATE (extra_03) ON TABLE ${LIVE} TO ${COLUMN_READER}`,
    `GRANT ROLE "sys:secadmin" TO "${LOCAL_PIPELINE_USER}"`,
    `CREATE RLS POLICY catalog_small_orders WITH (quantity int) USING (quantity <= 2)`,
    `ATTACH RLS POLICY catalog_small_orders ON TABLE ${LIVE} TO ${RESTRICTED}`,
    `ALTER TABLE ${LIVE} ROW LEVEL SECURITY ON`,
    `CREATE MASKING POLICY catalog_mask_amount WITH (amount numeric(12, 2)) USING (CAST(0 AS numeric(12, 2)))`,
    `CREATE MASKING POLICY catalog_mask_price WITH (unit_price numeric(12, 4)) USING (CAST(NULL AS numeric(12, 4)))`,
    `CREATE MASKING POLICY catalog_mask_extra WITH (extra_10 integer) USING (-1)`,
    ...[
      ['amount', 'catalog_mask_amount'],
      ['unit_price', 'catalog_mask_price'],
      ['extra_10', 'catalog_mask_extra'],
    ].flatMap(([column, policy], i) =>
      [`ROLE ${ROLE}`, RESTRICTED, `"${IDC}"`].map(
        (grantee, j) => `ATTACH MASKING POLICY ${policy} ON ${LIVE} (${column}) TO ${grantee} PRIORITY ${10 * (i + 1) + j}`,
      ),
    ),
    `CREATE VIEW analytics.catalog_amounts AS SELECT order_id, amount FROM ${LIVE}`,
    `CREATE VIEW analytics.catalog_days AS SELECT CAST(ordered_at AS date) AS day, COUNT(*) AS n FROM ${LIVE} GROUP BY 1`,
    `ALTER TABLE analytics.catalog_amounts OWNER TO "${LOCAL_PIPELINE_USER}"`,
    `ALTER TABLE analytics.catalog_days OWNER TO "${LOCAL_PIPELINE_USER}"`,
    `ALTER TABLE ${LIVE} ADD CONSTRAINT catalog_lines_pk PRIMARY KEY (order_id, line_no)`,
    `CREATE TABLE analytics.catalog_notes (order_id bigint, line_no int, CONSTRAINT catalog_notes_fk FOREIGN KEY (order_id, line_no) REFERENCES ${LIVE} (order_id, line_no))`,
    `ALTER TABLE analytics.catalog_notes OWNER TO "${LOCAL_PIPELINE_USER}"`,
  ];
  const su = superuserOf(wf);
  for (const sql of setup) await su.execute({ sql }, 'setup');
  const before = await catalogOf(wf);
  if (options.identity === true)
    expect(before.defaults).toContainEqual({ column_name: IDENTITY_COLUMN, column_default: expect.stringMatching(`'${SEED},${STEP}'::text`) });
  expect((before.comments as unknown[]).length).toBe(31);
  expect(before.comments).toContainEqual({ col: '', description: TABLE_COMMENT });
  expect((before.rls as unknown[]).length).toBe(1);
  expect((before.masking as unknown[]).length).toBe(9);
  expect((before.columnGrants as unknown[]).length).toBe(5);
  return before;
}

/** After a publish: every property as before, the restricted reader seeing only its rows and the column reader only its columns. */
export async function expectCatalogKept(wf: Workflow, before: Record<string, unknown>, rows: number): Promise<void> {
  expect(await catalogOf(wf)).toEqual(before);
  const all = `SELECT count(*) AS n FROM ${LIVE}`;
  expect(await countAs(wf, wf.wh.pg.user, all)).toBe(rows);
  // Restricted to its rows: as many as the superuser counts with the policy's own predicate.
  expect(await countAs(wf, RESTRICTED, all)).toBe(await countAs(wf, wf.wh.pg.user, `${all} WHERE quantity <= 2`));
  expect(await countAs(wf, RESTRICTED, all)).toBeLessThan(rows);
  // Its columns only; no rows, RLS being on and no policy attached to it (as on Redshift: t_rls_usage).
  expect(await countAs(wf, COLUMN_READER, `SELECT count(extra_01) AS n FROM ${LIVE}`)).toBe(0);
  await expect(countAs(wf, COLUMN_READER, `SELECT count(quantity) AS n FROM ${LIVE}`)).rejects.toThrow(/permission denied/);
}
