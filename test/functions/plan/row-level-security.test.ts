// Plan's refusal of a live table whose row-level security applies to the
// pipeline's user (functions/plan/batch.ts checkRowLevelSecurity), through
// the real SDK client and the local Data API, as the table's owner with
// and without sys:secadmin, and as a superuser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { Warehouse as DataApiWarehouse, DEFAULT_POLL } from '../../../functions/commons/warehouse.ts';
import { checkRowLevelSecurity } from '../../../functions/plan/batch.ts';
import { localTarget } from '../../../local/aws-clients.ts';
import { ensureLocalUser } from '../../../local/database-users.ts';
import { pipelineWith } from '../../domain/fixtures.ts';
import { useWarehouse, type Warehouse } from '../../support/warehouse.ts';

let wh: Warehouse;
const OWNER = 'plan_rls_owner';
const SECADMIN_OWNER = 'plan_rls_secadmin';
const as = (user: string) => new DataApiWarehouse(wh.client, localTarget(wh.pg.database, user), DEFAULT_POLL);
const name = (step: string) => `plan-rls:${step}`;
const check = (user: string, table: string) => checkRowLevelSecurity(as(user), pipelineWith({ target: { schema: 'public', table } }), name);

beforeAll(async () => {
  wh = await useWarehouse('plan_rls');
  for (const user of [OWNER, SECADMIN_OWNER]) await ensureLocalUser(wh.pg, user);
  const superuser = as(wh.pg.user);
  const setup = [
    `GRANT ROLE "sys:secadmin" TO ${SECADMIN_OWNER}`,
    `GRANT CREATE ON SCHEMA public TO ${OWNER}, ${SECADMIN_OWNER}`,
    ...[
      ['protected', OWNER],
      ['open', OWNER],
      ['secadmin_protected', SECADMIN_OWNER],
    ].flatMap(([table, owner]) => [
      `CREATE TABLE public.${table} (id int)`,
      `INSERT INTO public.${table} VALUES (1), (2)`,
      `ALTER TABLE public.${table} OWNER TO ${owner}`,
    ]),
  ];
  for (const sql of setup) await superuser.execute({ sql }, 'setup');
  await as(OWNER).execute({ sql: 'ALTER TABLE public.protected ROW LEVEL SECURITY ON' }, 'on');
  await as(SECADMIN_OWNER).execute({ sql: 'ALTER TABLE public.secadmin_protected ROW LEVEL SECURITY ON' }, 'on');
});
afterAll(() => wh?.close());

describe('checkRowLevelSecurity', () => {
  it('refuses the owner of a table with RLS on that holds neither superuser nor sys:secadmin, naming the table, the user and the fix', async () => {
    // Subject to the table's RLS, no policy attached to it: it sees none of the rows.
    expect(await as(OWNER).query({ sql: 'SELECT count(*) AS n FROM public.protected' }, 'count')).toEqual([{ n: 0 }]);
    const refused = check(OWNER, 'protected');
    await expect(refused).rejects.toBeInstanceOf(ValidationError);
    await expect(refused).rejects.toThrow(
      `public.protected has ROW LEVEL SECURITY ON, and its database user ${OWNER} is neither a superuser nor holds the role sys:secadmin: ` +
        "Redshift applies the table's RLS policies to it too (none attached: no rows)",
    );
    await expect(refused).rejects.toThrow(/Grant the role \(setup-sql --security-policies prints the statement\)\. Nothing was written$/);
  });

  it('passes a table with RLS off, and a table with RLS on for a user with sys:secadmin or a superuser', async () => {
    await expect(check(OWNER, 'open')).resolves.toBeUndefined();
    await expect(check(SECADMIN_OWNER, 'secadmin_protected')).resolves.toBeUndefined();
    await expect(check(wh.pg.user, 'protected')).resolves.toBeUndefined();
    expect(await as(SECADMIN_OWNER).query({ sql: 'SELECT count(*) AS n FROM public.secadmin_protected' }, 'count')).toEqual([{ n: 2 }]);
  });
});
