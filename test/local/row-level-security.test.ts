// Redshift's row-level security, masking catalog, column privileges and
// role and group grants through the local endpoint and the real SDK
// client: RLS attachments enforced as PostgreSQL policies, the SVV views
// listing what was attached.
// https://docs.aws.amazon.com/redshift/latest/dg/t_rls.html
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Warehouse as DataApiWarehouse, DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { localTarget } from '../../local/aws-clients.ts';
import { ensureLocalUser } from '../../local/database-users.ts';
import { useWarehouse, type Warehouse } from '../support/warehouse.ts';

let wh: Warehouse;
const READER = 'rls_reader';
const UNATTACHED = 'rls_unattached';
const SECADMIN_USER = 'rls_secadmin';
const OWNER = 'rls_owner';
const IDC = 'AWSIDC:rls.alice@example.com';
const as = (user: string) => new DataApiWarehouse(wh.client, localTarget(wh.pg.database, user), DEFAULT_POLL);
let superuser: DataApiWarehouse;

beforeAll(async () => {
  wh = await useWarehouse('rls');
  for (const user of [READER, UNATTACHED, SECADMIN_USER, OWNER]) await ensureLocalUser(wh.pg, user);
  // An IAM Identity Center user's name: a delimited identifier with a colon, an @ and dots.
  await wh.query(`DO $$ BEGIN CREATE ROLE "${IDC}" LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`);
  superuser = as(wh.pg.user);
  const setup = [
    'DROP ROLE IF EXISTS rls_analysts',
    'CREATE ROLE rls_analysts',
    `GRANT ROLE rls_analysts TO ${READER}`,
    `GRANT ROLE "sys:secadmin" TO ${SECADMIN_USER}`,
    `CREATE TABLE public.sales (id int, region varchar(10), amount int)`,
    `GRANT CREATE ON SCHEMA public TO ${OWNER}`,
    `ALTER TABLE public.sales OWNER TO ${OWNER}`,
    `INSERT INTO public.sales VALUES (1, 'east', 10), (2, 'west', 20), (3, 'east', 30)`,
    `GRANT SELECT ON public.sales TO ${READER}, ${UNATTACHED}, "${SECADMIN_USER}"`,
  ];
  for (const sql of setup) await superuser.execute({ sql }, 'setup');
});
afterAll(() => wh?.close());

const count = async (user: string) => Number((await as(user).query({ sql: 'SELECT count(*) AS n FROM public.sales' }, 'count'))[0]!.n);

describe('row-level security', () => {
  it('shows a reader attached through a role its rows only, an unattached user and the owner none, sys:secadmin all', async () => {
    await as(SECADMIN_USER).execute({ sql: `CREATE RLS POLICY east_only WITH (region varchar(10)) AS s USING (s.region = 'east')` }, 'create');
    await as(SECADMIN_USER).query({ sql: 'ATTACH RLS POLICY east_only ON TABLE public.sales TO ROLE rls_analysts' }, 'attach');
    await as(OWNER).execute({ sql: 'ALTER TABLE public.sales ROW LEVEL SECURITY ON' }, 'on');
    expect(await count(READER)).toBe(2);
    expect(await count(UNATTACHED)).toBe(0);
    // The owner is subject too (t_rls_ownership: only superusers and sys:secadmin ignore RLS): no policy attached to it, no rows;
    // its INSERT is not (t_rls_usage), and its DELETE finds none of the rows.
    expect(await count(OWNER)).toBe(0);
    await as(OWNER).execute({ sql: `INSERT INTO public.sales VALUES (4, 'west', 40)` }, 'insert');
    await as(OWNER).execute({ sql: 'DELETE FROM public.sales' }, 'delete');
    expect(await count(SECADMIN_USER)).toBe(4);
    expect(await count(wh.pg.user)).toBe(4);

    const attached = { sql: `SELECT relschema, relname, polname, grantee, granteekind, is_rls_on FROM svv_rls_attached_policy ORDER BY relname, grantee` };
    expect(await as(SECADMIN_USER).query(attached, 'attached')).toEqual([
      { relschema: 'public', relname: 'sales', polname: 'east_only', grantee: 'rls_analysts', granteekind: 'role', is_rls_on: true },
    ]);
    // A second grantee extends the attachment.
    await as(SECADMIN_USER).execute({ sql: `ATTACH RLS POLICY east_only ON public.sales TO ${UNATTACHED}` }, 'attach 2');
    expect(await count(UNATTACHED)).toBe(2);
    await as(SECADMIN_USER).execute({ sql: `DETACH RLS POLICY east_only ON public.sales FROM ${UNATTACHED}` }, 'detach');
    expect(await count(UNATTACHED)).toBe(0);

    // The attachment follows a rename.
    await as(OWNER).execute({ sql: 'ALTER TABLE public.sales RENAME TO sales_renamed' }, 'rename');
    expect(await as(SECADMIN_USER).query(attached, 'renamed')).toEqual([
      { relschema: 'public', relname: 'sales_renamed', polname: 'east_only', grantee: 'rls_analysts', granteekind: 'role', is_rls_on: true },
    ]);
    const relation = { sql: `SELECT relschema, relname, is_rls_on FROM svv_rls_relation` };
    expect(await as(SECADMIN_USER).query(relation, 'relation')).toEqual([{ relschema: 'public', relname: 'sales_renamed', is_rls_on: true }]);
    // Visible to all users, each its own tables'.
    expect(await as(OWNER).query(relation, 'owner')).toEqual([{ relschema: 'public', relname: 'sales_renamed', is_rls_on: true }]);
    expect(await as(READER).query(relation, 'reader')).toEqual([]);
    expect(Number((await as(READER).query({ sql: 'SELECT count(*) AS n FROM public.sales_renamed' }, 'c'))[0]!.n)).toBe(2);
    await as(OWNER).execute({ sql: 'ALTER TABLE public.sales_renamed RENAME TO sales' }, 'rename back');
    expect(
      await as(SECADMIN_USER).query({ sql: `SELECT polname, polalias, polatts, polqual FROM svv_rls_policy WHERE polname = 'east_only'` }, 'policy'),
    ).toEqual([{ polname: 'east_only', polalias: 's', polatts: '[{"colname":"region","type":"varchar(10)"}]', polqual: "s.region = 'east'" }]);
  });

  it('refuses a policy statement from a user without sys:secadmin, and malformed or PostgreSQL-only forms', async () => {
    await expect(as(READER).execute({ sql: `CREATE RLS POLICY nope USING (true)` }, 'denied')).rejects.toThrow(/sys:secadmin/);
    await superuser.execute({ sql: 'CREATE RLS POLICY for_admins USING (true)' }, 'create');
    await expect(superuser.execute({ sql: `ATTACH RLS POLICY for_admins ON public.sales TO ${SECADMIN_USER}` }, 'secadmin')).rejects.toThrow(
      /cannot attach RLS policy/,
    );
    await expect(superuser.execute({ sql: `ATTACH RLS POLICY for_admins ON public.sales TO "${wh.pg.user}"` }, 'superuser')).rejects.toThrow(
      /cannot attach RLS policy/,
    );
    await superuser.execute({ sql: 'DROP RLS POLICY for_admins' }, 'drop');
    await expect(as(SECADMIN_USER).execute({ sql: `ATTACH RLS POLICY east_only public.sales TO PUBLIC` }, 'bad')).rejects.toThrow(/r_ATTACH_RLS_POLICY/);
    await expect(superuser.execute({ sql: `ALTER TABLE public.sales ROW LEVEL SECURITY MAYBE` }, 'bad')).rejects.toThrow(/r_ALTER_TABLE/);
    await expect(superuser.execute({ sql: 'DETACH RLS POLICY east_only ON public.sales' }, 'bad')).rejects.toThrow(/r_DETACH_RLS_POLICY/);
    await expect(superuser.execute({ sql: `ALTER TABLE public.sales ENABLE ROW LEVEL SECURITY` }, 'pg')).rejects.toThrow(
      /ENABLE ROW LEVEL SECURITY is not supported/,
    );
    await expect(superuser.execute({ sql: `CREATE POLICY p ON public.sales USING (true)` }, 'pg')).rejects.toThrow(/CREATE POLICY is not supported/);
  });
});

describe('a policy and its tables', () => {
  it('goes from the views when its table is dropped; DROP RLS POLICY needs CASCADE while it is attached', async () => {
    const admin = as(SECADMIN_USER);
    await superuser.execute({ sql: 'CREATE TABLE public.doomed (id int)' }, 'table');
    await superuser.execute({ sql: 'CREATE TABLE public.kept (id int)' }, 'table');
    await admin.execute({ sql: 'CREATE RLS POLICY small_ids WITH (id int) USING (id < 10)' }, 'create');
    await admin.execute({ sql: 'ATTACH RLS POLICY small_ids ON public.doomed, public.kept TO PUBLIC' }, 'attach');
    const attached = { sql: `SELECT relname, grantee, granteekind FROM svv_rls_attached_policy WHERE polname = 'small_ids' ORDER BY relname` };
    expect(await admin.query(attached, 'both')).toEqual([
      { relname: 'doomed', grantee: 'public', granteekind: 'public' },
      { relname: 'kept', grantee: 'public', granteekind: 'public' },
    ]);
    await superuser.execute({ sql: 'DROP TABLE public.doomed' }, 'drop');
    expect(await admin.query(attached, 'one')).toEqual([{ relname: 'kept', grantee: 'public', granteekind: 'public' }]);
    await expect(admin.execute({ sql: 'DROP RLS POLICY small_ids' }, 'restrict')).rejects.toThrow(/attached/);
    await admin.execute({ sql: 'DROP RLS POLICY IF EXISTS small_ids CASCADE' }, 'cascade');
    expect(await admin.query(attached, 'none')).toEqual([]);
    expect(await superuser.query({ sql: `SELECT count(*)::int AS n FROM pg_policies WHERE tablename = 'kept' AND policyname = 'small_ids'` }, 'pg')).toEqual([
      { n: 0 },
    ]);
  });
});

describe('a lookup table of a policy', () => {
  it('cannot be dropped or renamed while the policy refers to it', async () => {
    const admin = as(SECADMIN_USER);
    await superuser.execute({ sql: 'CREATE TABLE public.allowed_regions (region varchar(10))' }, 'table');
    await admin.execute(
      { sql: 'CREATE RLS POLICY by_lookup WITH (region varchar(10)) USING (region IN (SELECT region FROM public.allowed_regions))' },
      'create',
    );
    await expect(superuser.execute({ sql: 'DROP TABLE public.allowed_regions' }, 'drop')).rejects.toThrow(/RLS policy by_lookup depends on it/);
    await expect(superuser.execute({ sql: 'ALTER TABLE public.allowed_regions RENAME TO regions' }, 'rename')).rejects.toThrow(
      /RLS policy by_lookup depends on it/,
    );
    await admin.execute({ sql: 'DROP RLS POLICY by_lookup' }, 'drop policy');
    await superuser.execute({ sql: 'DROP TABLE public.allowed_regions' }, 'drop');
  });
});

describe('masking policies', () => {
  it('lists an attachment with its priority in svv_attached_masking_policy', async () => {
    await superuser.execute({ sql: 'CREATE TABLE public.cards (id int, card varchar(20))' }, 'table');
    await as(SECADMIN_USER).execute({ sql: `CREATE MASKING POLICY mask_card WITH (card varchar(20)) USING ('XXXX')` }, 'create');
    await as(SECADMIN_USER).execute({ sql: `ATTACH MASKING POLICY mask_card ON public.cards(card) TO ROLE rls_analysts PRIORITY 20` }, 'attach');
    const sql = `SELECT policy_name, schema_name, table_name, grantee, grantee_type, priority, input_columns, output_columns FROM svv_attached_masking_policy`;
    expect(await as(SECADMIN_USER).query({ sql }, 'attached')).toEqual([
      {
        policy_name: 'mask_card',
        schema_name: 'public',
        table_name: 'cards',
        grantee: 'rls_analysts',
        grantee_type: 'role',
        priority: 20,
        input_columns: '["card"]',
        output_columns: '["card"]',
      },
    ]);
    await expect(as(READER).execute({ sql: `ATTACH MASKING POLICY mask_card ON public.cards(card) TO PUBLIC` }, 'denied')).rejects.toThrow(/sys:secadmin/);
  });
});

describe('grants to users, groups, roles and column grants', () => {
  it('show in svv_relation_privileges and svv_column_privileges', async () => {
    const setup = [
      'DROP GROUP IF EXISTS rls_group',
      'CREATE GROUP rls_group',
      'DROP ROLE IF EXISTS "Mixed Case Role"',
      'CREATE ROLE "Mixed Case Role"',
      'CREATE TABLE public.granted (a int, b int, c int)',
      `GRANT SELECT ON TABLE public.granted TO ${READER}, GROUP rls_group, ROLE "Mixed Case Role", "${IDC}"`,
      `GRANT SELECT (a, b) ON TABLE public.granted TO ROLE rls_analysts`,
    ];
    for (const sql of setup) await superuser.execute({ sql }, 'setup');
    const relation = { sql: `SELECT identity_name, identity_type FROM svv_relation_privileges WHERE relation_name = 'granted' ORDER BY identity_name` };
    const byName = (a: { identity_name?: unknown }, b: { identity_name?: unknown }) => (String(a.identity_name) < String(b.identity_name) ? -1 : 1);
    expect((await superuser.query(relation, 'relation')).sort(byName)).toEqual(
      [
        { identity_name: IDC, identity_type: 'user' },
        { identity_name: 'Mixed Case Role', identity_type: 'role' },
        { identity_name: READER, identity_type: 'user' },
        { identity_name: 'rls_group', identity_type: 'role' },
      ].sort(byName),
    );
    const columns = {
      sql: `SELECT namespace_name, relation_name, column_name, privilege_type, identity_name, identity_type FROM svv_column_privileges WHERE relation_name = 'granted' ORDER BY column_name`,
    };
    expect(await superuser.query(columns, 'columns')).toEqual(
      ['a', 'b'].map((column_name) => ({
        namespace_name: 'public',
        relation_name: 'granted',
        column_name,
        privilege_type: 'SELECT',
        identity_name: 'rls_analysts',
        identity_type: 'role',
      })),
    );
  });
});
