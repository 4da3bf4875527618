// A transaction of any size in one BatchExecuteStatement: the carry-over
// statements past the Data API's 40 go as CALLs of run_statements, in
// order; on a real database through the local endpoint in Redshift mode,
// the procedure runs every one of them inside the batch's transaction, and
// a refusal of any of them refuses the whole batch before anything runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WarehouseError } from '../../../../domain/errors.ts';
import { manifestInstall } from '../../../../domain/manifest/sql/manifest.ts';
import { type FactRow, liveTableFacts } from '../../../../domain/publish/dependents.ts';
import {
  decodeStatements,
  encodeStatements,
  fitsOneBatch,
  isCarryOver,
  RUN_STATEMENTS_BYTES,
  runStatementsCalls,
  withinOneBatch,
} from '../../../../domain/publish/sql/one-transaction.ts';
import { dependentsFacts } from '../../../../domain/publish/sql/swap.ts';
import { checkSql } from '../../../../domain/redshift-sql/check.ts';
import { MAX_BATCH_STATEMENTS, MAX_SQL_BYTES } from '../../../../domain/sql/statement.ts';
import type { Warehouse as Steps } from '../../../../functions/commons/warehouse.ts';
import { localWarehouse } from '../../../../local/aws-clients.ts';
import { useWarehouse, type Warehouse } from '../../../support/warehouse.ts';

const keys = (table: string, n: number, prefix = 'k') =>
  Array.from({ length: n }, (_, i) => `ALTER TABLE "public"."${table}" ADD CONSTRAINT "${prefix}${String(i).padStart(2, '0')}" UNIQUE (id)`);
const argumentOf = (call: string) => decodeStatements(call.slice(call.indexOf("('") + 2, -2).replaceAll("''", "'"));

describe('withinOneBatch', () => {
  it('leaves a transaction that fits one batch as it is', () => {
    const statements = ['LOCK "public"."t"', ...keys('t', 30)];
    expect(withinOneBatch(statements)).toEqual(statements);
  });

  it('packs each run of carry-over statements past 40 into run_statements, keeping every other statement and the order', () => {
    const statements = [
      'SET LOCAL statement_timeout TO 5000',
      'LOCK "public"."t"',
      'ALTER TABLE "public"."t" RENAME TO "t_old"',
      ...keys('t', 30),
      "CALL \"atomic_publish\".copy_comments('public', 't_old', 't')",
      ...keys('u', 20),
      'UPDATE x SET y = 1',
    ];
    const fitted = withinOneBatch(statements);
    expect(fitsOneBatch(fitted)).toBe(true);
    expect(fitted.map((s) => (s.includes('run_statements') ? argumentOf(s) : [s])).flat()).toEqual(statements);
    expect(fitted.filter((s) => s.includes('.run_statements('))).toHaveLength(2);
    expect(fitted[0]).toBe(statements[0]);
    expect(fitted.at(-1)).toBe('UPDATE x SET y = 1');
  });

  it('splits a long run into calls whose argument fits the procedure, and passes the Redshift gate', () => {
    const long = Array.from(
      { length: 120 },
      (_, i) => `GRANT SELECT ON TABLE "public"."t" TO ${Array.from({ length: 60 }, (_, j) => `"user_${i}_${j}"`).join(', ')}`,
    );
    const calls = runStatementsCalls(long);
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.flatMap(argumentOf)).toEqual(long);
    for (const call of calls) expect(Buffer.byteLength(encodeStatements(argumentOf(call)))).toBeLessThanOrEqual(RUN_STATEMENTS_BYTES);
    expect(calls.flatMap((sql) => checkSql(sql))).toEqual([]);
  });

  it('reads lengths in characters, so names of any script round-trip', () => {
    const statements = ['GRANT SELECT ON TABLE "public"."t" TO "AWSIDC:zoë@例え.jp"', 'GRANT SELECT ON TABLE "public"."t" TO "o\'neil:1"'];
    expect(decodeStatements(encodeStatements(statements))).toEqual(statements);
    expect(() => decodeStatements('12:too short')).toThrow(/malformed/);
  });

  it('moves only statements a procedure may run whose text a literal carries', () => {
    expect(isCarryOver('GRANT SELECT ON TABLE "a"."b" TO x')).toBe(true);
    expect(isCarryOver('ATTACH MASKING POLICY "m" ON "a"."b" ("c") TO x PRIORITY 10')).toBe(true);
    expect(isCarryOver('ALTER TABLE "a"."b" ROW LEVEL SECURITY ON')).toBe(true);
    expect(isCarryOver('ALTER TABLE "a"."b" RENAME TO "c"')).toBe(false);
    expect(isCarryOver('SET LOCAL statement_timeout TO 0')).toBe(false);
    expect(isCarryOver('LOCK "a"."b"')).toBe(false);
    expect(isCarryOver('GRANT SELECT ON TABLE "a"."b" TO "back\\slash"')).toBe(false);
  });

  it('leaves a transaction over the byte limit over it: the callers refuse it', () => {
    const huge = Array.from({ length: 50 }, (_, i) => `GRANT SELECT ON TABLE "public"."t" TO "${'x'.repeat(2_500)}${i}"`);
    expect(huge.reduce((n, s) => n + s.length, 0)).toBeGreaterThan(MAX_SQL_BYTES);
    expect(fitsOneBatch(withinOneBatch(huge))).toBe(false);
  });
});

describe('run_statements on the local engine', () => {
  let wh: Warehouse;
  let steps: Steps;
  beforeAll(async () => {
    wh = await useWarehouse('sql_one_transaction');
    steps = localWarehouse(wh.endpoint, wh.pg.database);
    for (const ddl of manifestInstall(new Date())) await steps.batch(ddl, 'manifest');
    await steps.batch(['CREATE TABLE public.packed (id int)', 'CREATE TABLE public.marks (note varchar(20))'], 'setup');
  });
  afterAll(() => wh?.close());

  const declaredKeys = async () =>
    liveTableFacts((await steps.query(dependentsFacts('public', 'packed', 'packed'), 'facts')) as unknown as FactRow[]).keys.map((k) => k.name);

  it('runs a 60-statement transaction as one batch: every key declared, in one commit', async () => {
    const statements = withinOneBatch(["INSERT INTO public.marks VALUES ('packed')", ...keys('packed', 59)]);
    expect(statements.length).toBeLessThanOrEqual(MAX_BATCH_STATEMENTS);

    await steps.batch(statements, 'packed');

    expect(await declaredKeys()).toEqual(keys('packed', 59).map((_, i) => `k${String(i).padStart(2, '0')}`));
    expect(await wh.query('SELECT note FROM public.marks')).toEqual([{ note: 'packed' }]);
  });

  it('refuses the whole batch when Redshift would refuse one packed statement, and writes nothing', async () => {
    // Redshift has no CHECK constraint (https://docs.aws.amazon.com/redshift/latest/dg/r_ALTER_TABLE.html).
    const refused = 'ALTER TABLE "public"."packed" ADD CONSTRAINT "positive" CHECK (id > 0)';
    const statements = withinOneBatch([
      "INSERT INTO public.marks VALUES ('refused')",
      'ALTER TABLE "public"."packed" DROP CONSTRAINT "k00"',
      refused,
      ...keys('packed', 40, 'r'),
    ]);
    expect(statements.some((s) => s.includes('run_statements'))).toBe(true);
    const keysBefore = await declaredKeys();

    const error = await steps.batch(statements, 'refused').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WarehouseError);
    expect((error as Error).message).toMatch(/CHECK|not supported/i);

    expect(await wh.query(`SELECT note FROM public.marks WHERE note = 'refused'`)).toEqual([]);
    expect(await declaredKeys()).toEqual(keysBefore);
  });
});
