// The out-of-band SQL: valid for Redshift (the gate finds nothing), and on a
// real database through the local Data API endpoint in Redshift mode: the
// fingerprint ignores row order and tells NULL from an empty string, any
// insert, delete or update changes it, and the swap's procedure refuses a
// changed table naming what it found, in the words Publish parses.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WarehouseError } from '../../../../domain/errors.ts';
import type { LiveBaseline } from '../../../../domain/live-watch/baseline.ts';
import { outOfBandRefusal } from '../../../../domain/live-watch/out-of-band.ts';
import { assertLiveUnchanged, carryOverRows, liveColumnsQuery, liveFingerprintQuery } from '../../../../domain/live-watch/sql/out-of-band.ts';
import { manifestInstall } from '../../../../domain/manifest/sql/manifest.ts';
import { checkSql } from '../../../../domain/redshift-sql/check.ts';
import type { Warehouse as Steps } from '../../../../functions/commons/warehouse.ts';
import { localWarehouse } from '../../../../local/aws-clients.ts';
import { useWarehouse, type Warehouse } from '../../../support/warehouse.ts';
import { pipeline, staging } from '../../sql/support.ts';

const COLUMNS = [
  'order_id bigint',
  'ordered_at timestamp without time zone',
  'amount numeric(12,2)',
  'paid boolean',
  'note character varying(10)',
  'doc bytea',
];
const TO = '2026-02-01T00:00:00.000Z';

describe('the generated SQL', () => {
  // The MD5 digest: what a baseline Plan recorded before the FNV_HASH one is checked with.
  const fingerprint = liveFingerprintQuery(pipeline, COLUMNS, undefined, 'md5').sql;
  const baseline: LiveBaseline = { columns: COLUMNS, rows: 3, checksum: '12', carryFrom: TO };

  it('passes the Redshift gate', () => {
    const statements = [
      liveColumnsQuery('analytics', 'orders').sql,
      fingerprint,
      liveFingerprintQuery(pipeline, COLUMNS, TO).sql,
      liveFingerprintQuery(pipeline, COLUMNS).sql,
      assertLiveUnchanged(pipeline, baseline),
      assertLiveUnchanged(pipeline, { ...baseline, rowHash: 'fnv' }),
      carryOverRows(pipeline, staging, COLUMNS, TO),
    ];
    expect(statements.flatMap((sql) => checkSql(sql))).toEqual([]);
  });

  it('hashes by FNV_HASH unless the baseline was recorded with the MD5 digest', () => {
    const fnv = liveFingerprintQuery(pipeline, COLUMNS).sql;
    expect(fnv).toContain('FNV_HASH(COALESCE("order_id", 0), -3750763034362895579)');
    expect(fnv).not.toContain('MD5');
    expect(fnv).not.toContain('"doc"');
    expect(assertLiveUnchanged(pipeline, { ...baseline, rowHash: 'fnv' })).toContain('FNV_HASH');
    expect(assertLiveUnchanged(pipeline, baseline)).toContain('MD5');
  });

  it('digests booleans by CASE, leaves binary columns out, quotes every name, and reads the live table once', () => {
    // A NULL boolean is neither branch: it digests as NULL, not as false.
    expect(fingerprint).toContain(`COALESCE('v' || CASE WHEN "paid" THEN 't' WHEN NOT "paid" THEN 'f' END, 'n')`);
    expect(fingerprint).toContain(`CAST("note" AS varchar(65535))`);
    expect(fingerprint).not.toContain('"doc"');
    expect(fingerprint.match(/FROM "analytics"\."orders"/g)).toHaveLength(1);
    expect(fingerprint).not.toMatch(/WHERE/);
  });

  it('with expected writers fingerprints only rows before the batch end, and carries over the rest', () => {
    expect(liveFingerprintQuery(pipeline, COLUMNS, TO).sql).toContain(
      `WHERE "ordered_at" IS NULL OR "ordered_at" < CAST('2026-02-01 00:00:00.000' AS timestamp)`,
    );
    expect(carryOverRows(pipeline, staging, COLUMNS, TO)).toBe(
      `INSERT INTO "analytics"."${staging}" ("order_id", "ordered_at", "amount", "paid", "note", "doc") SELECT "order_id", "ordered_at", "amount", "paid", "note", "doc" ` +
        `FROM "analytics"."orders" WHERE "ordered_at" >= CAST('2026-02-01 00:00:00.000' AS timestamp)`,
    );
  });
});

describe('on a real database through the Data API', () => {
  let wh: Warehouse;
  let steps: Steps;
  const fingerprintOf = async (carryFrom?: string, rowHash: 'fnv' | 'md5' = 'fnv') =>
    String((await steps.query(liveFingerprintQuery(pipeline, COLUMNS, carryFrom, rowHash), 'fp'))[0]!.fingerprint);
  const fingerprint = (carryFrom?: string) => fingerprintOf(carryFrom);
  const columns = async () => (await steps.query(liveColumnsQuery('analytics', 'orders'), 'cols')).map((r) => String(r.col));
  const ROWS = `(1, '2026-01-05 10:00', 10.50, true, 'a', NULL), (2, '2026-01-06 11:00', 20.00, false, NULL, NULL), (3, '2026-02-03 12:00', 5.25, NULL, '', NULL)`;

  beforeAll(async () => {
    wh = await useWarehouse('sql_out_of_band');
    steps = localWarehouse(wh.endpoint, wh.pg.database);
    await wh.query('CREATE SCHEMA analytics');
    for (const ddl of manifestInstall(new Date())) await steps.batch(ddl, 'manifest');
  });
  afterAll(() => wh?.close());
  // Every test starts from the same three rows in a table made afresh: some change its rows or its columns.
  beforeEach(async () => {
    await wh.query('DROP TABLE IF EXISTS analytics.orders');
    await wh.query('CREATE TABLE analytics.orders (order_id bigint, ordered_at timestamp, amount numeric(12,2), paid boolean, note varchar(10), doc bytea)');
    await wh.query(`INSERT INTO analytics.orders VALUES ${ROWS}`);
  });

  it('reads the columns as Plan records them', async () => {
    expect(await columns()).toEqual(COLUMNS);
  });

  it('counts the rows and does not depend on their order', async () => {
    const first = await fingerprint();
    expect(first).toMatch(/^3:-?[1-9]\d*$/);
    await wh.query('CREATE TABLE analytics.orders_copy AS SELECT * FROM analytics.orders');
    await wh.query('DELETE FROM analytics.orders');
    await wh.query('INSERT INTO analytics.orders SELECT * FROM analytics.orders_copy ORDER BY order_id DESC');
    await wh.query('DROP TABLE analytics.orders_copy');
    expect((await wh.query<{ order_id: string }>('SELECT order_id FROM analytics.orders')).map((r) => Number(r.order_id))).toEqual([3, 2, 1]);
    expect(await fingerprint()).toBe(first);
  });

  it.each(['fnv', 'md5'] as const)('changes with an update, a NULL made empty, an insert or a delete, and back when undone (%s)', async (rowHash) => {
    const fingerprint = (carryFrom?: string) => fingerprintOf(carryFrom, rowHash);
    const first = await fingerprint();
    const changes: [string, string][] = [
      ['UPDATE analytics.orders SET amount = 10.51 WHERE order_id = 1', 'UPDATE analytics.orders SET amount = 10.50 WHERE order_id = 1'],
      [`UPDATE analytics.orders SET note = '' WHERE order_id = 2`, 'UPDATE analytics.orders SET note = NULL WHERE order_id = 2'],
      ['UPDATE analytics.orders SET paid = NOT paid WHERE order_id = 1', 'UPDATE analytics.orders SET paid = NOT paid WHERE order_id = 1'],
      [`INSERT INTO analytics.orders VALUES (4, '2026-01-07', 1, true, 'x', NULL)`, 'DELETE FROM analytics.orders WHERE order_id = 4'],
    ];
    for (const [change, undo] of changes) {
      await wh.query(change);
      expect(await fingerprint(), change).not.toBe(first);
      await wh.query(undo);
      expect(await fingerprint(), undo).toBe(first);
    }
  });

  it('with a carry boundary counts only the rows before it', async () => {
    expect(await fingerprint(TO)).toMatch(/^2:/);
  });

  it('the swap procedure passes an unchanged table and refuses a changed one in words Publish parses', async () => {
    const [rows, checksum] = (await fingerprint()).split(':');
    const baseline: LiveBaseline = { columns: COLUMNS, rows: Number(rows), checksum: checksum!, rowHash: 'fnv' };
    const check = async () => steps.batch([assertLiveUnchanged(pipeline, baseline)], 'check');
    await check();
    // A baseline recorded before the FNV_HASH digest (no rowHash) is checked with the MD5 one it was taken with.
    const [, md5] = (await fingerprintOf(undefined, 'md5')).split(':');
    await steps.batch([assertLiveUnchanged(pipeline, { columns: COLUMNS, rows: Number(rows), checksum: md5! })], 'check-md5');

    await wh.query(`INSERT INTO analytics.orders VALUES (5, '2026-01-08', 1, true, 'y', NULL)`);
    const rowsRefusal = await check().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(rowsRefusal).toBeInstanceOf(WarehouseError);
    expect(outOfBandRefusal((rowsRefusal as Error).message)).toEqual({ rows: 4, checksum: expect.stringMatching(/^-?\d+$/) });
    await wh.query('DELETE FROM analytics.orders WHERE order_id = 5');

    await wh.query('ALTER TABLE analytics.orders ADD COLUMN extra int');
    const columnsRefusal = await check().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(outOfBandRefusal((columnsRefusal as Error).message)).toEqual({ columns: [...COLUMNS, 'extra integer'] });
  });
});
