// Migrating the live table to a new DDL while a writer appends a row every few
// milliseconds throughout (across a killed first execution and the resumed one):
// every committed row ends in the new table exactly once, with the history, the
// DDL's columns, encodings and keys, grants and a view carried over; the old table
// is retained and a rollback restores it; a replay changes nothing; a DDL dropping
// a column a view reads is refused first. Why: docs/decisions/migrating-a-live-table.md
import '../support/migration-pipeline.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipelines } from '../../domain/define-pipeline.ts';
import { quoteUser } from '../../domain/identifiers.ts';
import { migrationSpecHash } from '../../domain/migration/migration.ts';
import { batchIdFor, previousVersionTableFor, stagingTableFor } from '../../domain/plan/plan.ts';
import { defineGroups } from '../../domain/publish/groups.ts';
import { warehouseFromEnv } from '../../functions/commons/warehouse.ts';
import type { PlanEvent } from '../../functions/plan/batch.ts';
import { planGroup } from '../../functions/plan/group.ts';
import { plan } from '../../functions/plan/index.ts';
import { localHandlerEnvironment } from '../../local/aws-clients.ts';
import { ensureLocalUser, LOCAL_PIPELINE_USER } from '../../local/database-users.ts';
import { newClient } from '../../local/pg-clients.ts';
import { ReaderPool } from '../../local/readers.ts';
import type { RunningExecution } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { deployMigration, MIGRATION_DDL, migratingSpec } from '../support/migration-pipeline.ts';
import { suiteTargetKind } from '../support/target-kind.ts';
import { until } from '../support/until.ts';
import {
  caughtError,
  caughtMessage,
  inputFor,
  LIVE,
  loadedChunks,
  PIPELINE,
  planOf,
  stateEvents,
  type UseWorkflowOptions,
  useFork,
  useWorkflowFixture,
  type Workflow,
} from '../support/workflow.ts';

const TO_DAY = 8;
const INPUT = { pipeline: PIPELINE.name, migrate: true, to: sampleDay(TO_DAY).toISOString() };
const BATCH_ID = batchIdFor({ ...PIPELINE, specHash: migrationSpecHash(PIPELINE) }, { from: new Date(PIPELINE.historyStart), to: sampleDay(TO_DAY) });
const PREVIOUS = `analytics.${previousVersionTableFor(PIPELINE, BATCH_ID)}`;
const VIEW = 'analytics.order_quantities';
const READER = 'mig_reader';
/** The writer's order ids start here, above every sample order. */
const WRITER_BASE = 900_000_000;
/** The row committed while the swap waits for its lock. */
const LATE_ORDER = 800_000_000;

/**
 * Another system appending order lines to the live table by name, one
 * autocommitted INSERT at a time on its own connection, at or after the
 * migration's watermark; it records each row once its INSERT has returned
 * (committed).
 */
class Writer {
  readonly committed: { orderId: number; orderedAt: string }[] = [];
  readonly errors: string[] = [];
  private running = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly client: pg.Client) {}

  start(): void {
    this.running = true;
    this.loop = (async () => {
      for (let n = 0; this.running; n++) {
        const orderId = WRITER_BASE + n;
        const orderedAt = new Date(sampleDay(TO_DAY).getTime() + n * 1000).toISOString().slice(0, 19).replace('T', ' ');
        try {
          await this.client.query(
            `INSERT INTO ${LIVE} (order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price)
             VALUES ($1, 1, $2::timestamp, 7, 3, 1, 10.00, 10.0000)`,
            [orderId, orderedAt],
          );
          this.committed.push({ orderId, orderedAt });
        } catch (error) {
          this.errors.push((error as Error).message);
        }
        // A few milliseconds between rows: pacing, not ordering (the test waits for observed counts).
        await sleep(3);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

const columns = async (wf: Workflow, table: string) =>
  (
    await wf.query<{ c: string }>(
      `SELECT column_name || ' ' || data_type || COALESCE('(' || character_maximum_length || ')', '') ||
              CASE WHEN data_type = 'numeric' THEN '(' || numeric_precision || ',' || numeric_scale || ')' ELSE '' END AS c
         FROM information_schema.columns WHERE table_schema = 'analytics' AND table_name = $1 ORDER BY ordinal_position`,
      [table.split('.')[1]],
    )
  ).map((r) => r.c);

/** Count and fingerprint of a set of writer rows, the same expression over the live table and over what the writer committed. */
const WRITER_FINGERPRINT = `SELECT count(*)::int AS rows, count(DISTINCT order_id)::int AS distinct_ids,
                                  md5(COALESCE(string_agg(order_id || '|' || ordered_at, ',' ORDER BY order_id), '')) AS digest`;

/** Catch-up transactions still to fail (as a lock wait that gave up would), by the endpoint; armed by the migration's arrangement. */
let failingCatchUps = 0;
const CATCH_UP_FAULT: UseWorkflowOptions = {
  statementError: ({ name, index }) =>
    name?.includes(':publish:catch-up:') && index === 0 && failingCatchUps > 0
      ? (failingCatchUps--, 'ERROR: canceling statement due to statement timeout')
      : undefined,
};

/** The sample with a reader, a column comment and a bound view; the live table's columns then. */
async function arrangeWarehouse(wf: Workflow): Promise<{ before: { columns: string[] } }> {
  await wf.sample({ rowsPerDay: 10, sourceDays: 12, liveDays: TO_DAY });
  await ensureLocalUser(wf.wh.pg, READER);
  for (const sql of [
    `GRANT USAGE ON SCHEMA analytics TO ${quoteUser(READER)}`,
    `GRANT SELECT ON ${LIVE} TO ${quoteUser(READER)}`,
    `COMMENT ON COLUMN ${LIVE}.quantity IS 'Units ordered'`,
    // A bound view, owned by the pipeline user, read by the reader.
    `CREATE VIEW ${VIEW} AS SELECT order_id, line_no, quantity FROM ${LIVE}`,
    `ALTER TABLE ${VIEW} OWNER TO ${quoteUser(LOCAL_PIPELINE_USER)}`,
    `GRANT SELECT ON ${VIEW} TO ${quoteUser(READER)}`,
  ]) {
    await wf.query(sql);
  }
  return { before: { columns: await columns(wf, LIVE) } };
}

/** The spec of the sample pipeline the calling describe runs with, deployed in its beforeAll; afterwards the file's default again (with the migration). */
function useDeployed(spec: Parameters<typeof deployMigration>[0]): void {
  beforeAll(() => deployMigration(spec));
  afterAll(() => deployMigration('migration'));
}

const prepared = useWorkflowFixture('wf_migration', arrangeWarehouse);
let before: { columns: string[] };
beforeAll(() => {
  ({ before } = prepared.arranged);
});

describe('before the migration', () => {
  useDeployed('migration');
  const wf = useForkPerTest(prepared);

  it('refuses a normal run: the source query produces the new columns, the live table does not have them yet', async () => {
    const result = await wf.run(inputFor(TO_DAY), 'normal-before-migration');
    expect(result.status).toBe('FAILED');
    expect(caughtError(result)?.Error).toBe('ValidationError');
    expect(caughtMessage(result)).toContain(`run the migration first: start an execution with input {"pipeline":"sales_order_lines","migrate":true}`);
    expect(await wf.tableExists('atomic_publish.publications')).toBe(false);
  });

  it('refuses a publish group run with the pipeline among its members, naming the migration input', async () => {
    // Named to sort after the sample pipeline, whose member check comes first (the mirror has no live table).
    const mirror = {
      ...migratingSpec,
      name: 'sales_order_lines_mirror',
      target: { schema: 'analytics', table: 'sales_order_lines_mirror' },
      migration: undefined,
    };
    const registry = definePipelines([migratingSpec, mirror]);
    const declared = defineGroups([{ name: 'sales', members: [PIPELINE.name, mirror.name] }], registry);
    const env = localHandlerEnvironment(wf.wh.endpoint, wf.wh.pg.database, { pollMaxDelayMs: 100 }, suiteTargetKind());
    const event: PlanEvent = { input: { group: 'sales', to: INPUT.to }, executionId: 'group-before-migration' };
    await expect(planGroup(event, warehouseFromEnv(env), registry, declared)).rejects.toThrow(
      /sales_order_lines: analytics\.sales_order_lines does not have the columns of migration\.ddl yet.*run the migration first/,
    );
    expect(await wf.schemaExists('atomic_publish')).toBe(false);
  });

  it('refuses, before writing anything, a DDL that drops a column a bound view reads, naming the view, the column and what to change', async () => {
    const ddl = MIGRATION_DDL.replace('quantity integer NOT NULL ENCODE az64,', '');
    const registry = definePipelines([{ ...migratingSpec, migration: { ddl } }]);
    const tables = await wf.derivedTables();
    const env = localHandlerEnvironment(wf.wh.endpoint, wf.wh.pg.database, { pollMaxDelayMs: 100 }, suiteTargetKind());
    const event: PlanEvent = { input: INPUT, executionId: 'bad-ddl' };
    await expect(plan(event, warehouseFromEnv(env), registry)).rejects.toThrow(
      /migration refused before anything was written: view analytics\.order_quantities reads column quantity of analytics\.sales_order_lines, which migration\.ddl drops; keep the column in migration\.ddl, or change the view .*WITH NO SCHEMA BINDING/,
    );
    expect(await wf.derivedTables()).toEqual(tables);
    expect(await wf.schemaExists('atomic_publish')).toBe(false);
    expect(await columns(wf, LIVE)).toEqual(before.columns);
  });
});

describe('before the migration, a live row the copy would miss', () => {
  useDeployed('migration');
  const wf = useFork(prepared);
  it('refuses the migration before writing anything, with the count and what to do', async () => {
    const early = `INSERT INTO ${LIVE} (order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price)
                   VALUES (700000000, 1, '2025-12-31 23:00:00', 1, 1, 1, 1.00, 1.0000)`;
    await wf.query(early);
    try {
      const env = localHandlerEnvironment(wf.wh.endpoint, wf.wh.pg.database, { pollMaxDelayMs: 100 }, suiteTargetKind());
      await expect(plan({ input: INPUT, executionId: 'early-row' }, warehouseFromEnv(env))).rejects.toThrow(
        /1 row\(s\) of analytics\.sales_order_lines have no ordered_at or one before historyStart 2026-01-01T00:00:00Z, .*move historyStart back \(or delete those rows\)/,
      );
      expect(await wf.schemaExists('atomic_publish')).toBe(false);
    } finally {
      await wf.query(`DELETE FROM ${LIVE} WHERE order_id = 700000000`);
    }
  });
});

/**
 * The migration, arranged once: the pipeline published before the spec
 * with the migration was deployed, then a writer appending throughout and
 * readers polling while a first execution is stopped part way and a second
 * resumes and publishes it.
 */
async function migrate(wf: Workflow) {
  const { before } = await arrangeWarehouse(wf);
  // The live table as the pipeline last published it, before the spec with the migration was deployed.
  deployMigration('before');
  let published;
  try {
    published = await wf.run(inputFor(TO_DAY), 'normal-before-deploy');
  } finally {
    deployMigration('migration');
  }
  if (published.status !== 'SUCCEEDED') throw new Error(`the publish before the migration failed: ${published.error}: ${published.cause}`);

  const writerClient = newClient(wf.wh.pg);
  await writerClient.connect();
  const writer = new Writer(writerClient);
  const readers = new ReaderPool(wf.wh.pg, 2, { pauseMs: 2, keyExpression: `CASE WHEN order_id < ${LATE_ORDER} THEN 1 ELSE 0 END` });
  try {
    writer.start();
    await until(() => writer.committed.length >= 5, 'the writer committing its first rows');
    readers.watch(LIVE, 'migrating');
    await readers.readAll();

    // The first execution is stopped once chunk 1's copy has committed; the
    // loads of later chunks die with it (as a Lambda invocation stopped
    // with its execution), so the batch is left part copied.
    let execution: RunningExecution | undefined;
    let stopped!: () => void;
    const stop = new Promise<void>((resolve) => (stopped = resolve));
    wf.faults.LoadChunk = async (input, next) => {
      const index = (input as { chunk: { index: number } }).chunk.index;
      if (index > 1) {
        await stop;
        throw new Error('stopped with its execution');
      }
      const output = await next(input);
      if (index === 1) {
        execution!.abort();
        stopped();
      }
      return output;
    };
    execution = await wf.start(INPUT, 'migrate-killed');
    const killed = await execution.result;
    await wf.quiesce();
    wf.reset();
    const doneBeforeResume = (
      await wf.query<{ chunk_index: number }>(`SELECT chunk_index FROM atomic_publish.chunk_state WHERE batch_id = $1 AND status = 'DONE' ORDER BY 1`, [
        BATCH_ID,
      ])
    ).map((r) => r.chunk_index);

    // A row committed while the swap waits for its lock on the live table,
    // after the swap's snapshot was taken (by its lock on the view): a
    // transaction of another writer holds the row uncommitted until the
    // swap is seen waiting, then commits.
    let gated = false;
    wf.faults.Publish = async (input, next) => {
      // Only the first invocation: a retry finds the batch published.
      if (gated) return next(input);
      gated = true;
      const late = newClient(wf.wh.pg);
      await late.connect();
      try {
        await late.query('BEGIN');
        await late.query(
          `INSERT INTO ${LIVE} (order_id, line_no, ordered_at, customer_id, product_id, quantity, amount, unit_price)
           VALUES ($1, 1, $2::timestamp, 7, 3, 1, 10.00, 10.0000)`,
          [LATE_ORDER, INPUT.to.slice(0, 19)],
        );
        const publishing = next(input);
        await until(
          async () =>
            (await wf.query(`SELECT 1 FROM pg_locks WHERE relation = '${LIVE}'::regclass AND mode = 'AccessExclusiveLock' AND NOT granted`)).length > 0,
          'the swap waiting for its lock on the live table',
        );
        await late.query('COMMIT');
        return await publishing;
      } finally {
        await late.end();
      }
    };
    const committedBefore = writer.committed.length;
    failingCatchUps = 1;
    const resumed = await wf.run(INPUT, 'migrate-resumed');
    const catchUpsLeft = failingCatchUps;
    wf.reset();
    // Rows the writer commits after the swap go into the new table by name.
    await until(() => writer.committed.length >= committedBefore + 40, 'the writer committing rows after the run');
    await writer.stop();
    const reads = await readers.close();
    return { before, killed, resumed, doneBeforeResume, catchUpsLeft, writer: { committed: writer.committed, errors: writer.errors }, reads };
  } finally {
    failingCatchUps = 0;
    await writer.stop();
    await writerClient.end();
    await readers.close();
  }
}

describe('a migration with a writer appending throughout, killed once and resumed', () => {
  useDeployed('migration');
  const migrated = useWorkflowFixture('wf_migration_migrated', migrate, CATCH_UP_FAULT);
  const wf = useFork(migrated);
  let arranged: Awaited<ReturnType<typeof migrate>>;
  let killed: (typeof arranged)['killed'];
  let resumed: (typeof arranged)['resumed'];
  let doneBeforeResume: number[];
  let writer: (typeof arranged)['writer'];
  let reads: (typeof arranged)['reads'];
  beforeAll(() => {
    arranged = migrated.arranged;
    ({ killed, resumed, doneBeforeResume, writer, reads } = arranged);
  });

  it('stopped the first execution with some chunks copied and nothing published', async () => {
    expect(killed.status).toBe('ABORTED');
    expect(doneBeforeResume.length).toBeGreaterThan(0);
    expect(doneBeforeResume.length).toBeLessThan(TO_DAY);
  });

  it('resumed the same batch, copying only the chunks not yet done, and published', () => {
    expect(resumed.status, `${resumed.error}: ${resumed.cause}`).toBe('SUCCEEDED');
    expect(planOf(resumed).batch.batchId).toBe(BATCH_ID);
    const reloaded = loadedChunks(resumed);
    expect(reloaded.length).toBeGreaterThan(0);
    for (const chunk of doneBeforeResume) expect(reloaded).not.toContain(chunk);
  });

  it('lost none of the writer rows: every committed row is in the new table exactly once (count and fingerprint)', async () => {
    expect(writer.errors).toEqual([]);
    const live = (await wf.query(`${WRITER_FINGERPRINT} FROM ${LIVE} WHERE order_id >= $1`, [WRITER_BASE]))[0];
    const committed = (
      await wf.query(`${WRITER_FINGERPRINT} FROM unnest($1::bigint[], $2::timestamp[]) AS w(order_id, ordered_at)`, [
        writer.committed.map((r) => r.orderId),
        writer.committed.map((r) => r.orderedAt),
      ])
    )[0];
    expect(committed).toMatchObject({ rows: writer.committed.length, distinct_ids: writer.committed.length });
    expect(live).toEqual(committed);
    // Every row that reached the old table at or after the watermark reached the new one.
    expect(
      await wf.query(
        `SELECT o.order_id FROM ${PREVIOUS} o WHERE o.ordered_at >= $1::timestamp AND NOT EXISTS (SELECT 1 FROM ${LIVE} l WHERE l.order_id = o.order_id AND l.line_no = o.line_no)`,
        [INPUT.to.slice(0, 19)],
      ),
    ).toEqual([]);
  });

  it('retried Publish once when the catch-up failed after the swap had committed, and the retry caught up', () => {
    expect(arranged.catchUpsLeft).toBe(0);
    expect(stateEvents(resumed, 'StateRetried', 'Publish')).toHaveLength(1);
  });

  it('caught up the row committed while the swap waited for its lock: it reached the old table, and the new one once', async () => {
    const count = async (table: string) => (await wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE order_id = $1`, [LATE_ORDER]))[0]!.n;
    expect(await count(PREVIOUS)).toBe(1);
    expect(await count(LIVE)).toBe(1);
  });

  it('copied the history: the rows before the watermark are those of the retained old table', async () => {
    const history = (table: string) => wf.fingerprint(`(SELECT * FROM ${table} WHERE order_id < ${LATE_ORDER}) AS h`);
    const copied = await history(LIVE);
    expect(copied.rows).toBe(TO_DAY * 10);
    expect(copied).toEqual(await history(PREVIOUS));
    expect(await wf.query(`SELECT count(*)::int AS n FROM ${LIVE} WHERE channel IS NULL OR channel <> 'web'`)).toEqual([{ n: 0 }]);
  });

  it('gave the new table the DDL: columns and types, encodings, distribution and sort keys, primary key', async () => {
    expect(await columns(wf, LIVE)).toEqual([
      'order_id bigint',
      'line_no integer',
      'ordered_at timestamp without time zone',
      'customer_id integer',
      'product_id integer',
      'quantity integer',
      'amount numeric(14,2)',
      'unit_price numeric(12,4)',
      'channel character varying(16)',
    ]);
    const catalog = await wf.query(
      `SELECT column_name, encoding, distkey, sortkey FROM local_redshift.svv_redshift_columns
        WHERE schema_name = 'analytics' AND table_name = 'sales_order_lines' ORDER BY ordinal_position`,
    );
    expect(catalog).toEqual([
      { column_name: 'order_id', encoding: 'az64', distkey: false, sortkey: 2 },
      { column_name: 'line_no', encoding: 'az64', distkey: false, sortkey: 0 },
      { column_name: 'ordered_at', encoding: 'raw', distkey: false, sortkey: 1 },
      { column_name: 'customer_id', encoding: 'az64', distkey: true, sortkey: 0 },
      { column_name: 'product_id', encoding: 'az64', distkey: false, sortkey: 0 },
      { column_name: 'quantity', encoding: 'az64', distkey: false, sortkey: 0 },
      { column_name: 'amount', encoding: 'az64', distkey: false, sortkey: 0 },
      { column_name: 'unit_price', encoding: 'az64', distkey: false, sortkey: 0 },
      { column_name: 'channel', encoding: 'zstd', distkey: false, sortkey: 0 },
    ]);
    expect(
      await wf.query(`SELECT diststyle, sortkey1, sortkey_num FROM local_redshift.svv_table_info WHERE schema = 'analytics' AND "table" = 'sales_order_lines'`),
    ).toEqual([{ diststyle: 'KEY(customer_id)', sortkey1: 'ordered_at', sortkey_num: 2 }]);
    expect(
      await wf.query(`SELECT local_redshift.pg_get_constraintdef(oid) AS def FROM local_redshift.pg_constraint WHERE conrelid = '${LIVE}'::regclass`),
    ).toEqual([{ def: 'PRIMARY KEY (order_id, line_no)' }]);
  });

  it('carried over the grants, the column comment and the bound view, which now reads the new table', async () => {
    expect(await wf.query(`SELECT has_table_privilege($1, '${LIVE}', 'SELECT') AS ok`, [READER])).toEqual([{ ok: true }]);
    expect(await wf.query(`SELECT col_description('${LIVE}'::regclass, 6) AS c`)).toEqual([{ c: 'Units ordered' }]);
    const count = async (table: string) => (await wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;
    expect(await count(VIEW)).toBe(await count(LIVE));
    expect(
      await wf.query(
        `SELECT DISTINCT d.refobjid::regclass::text AS reads FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid
          WHERE r.ev_class = '${VIEW}'::regclass AND d.refobjid <> '${VIEW}'::regclass`,
      ),
    ).toEqual([{ reads: LIVE }]);
  });

  it("retained the old table, with its old columns, as the publication's old version", async () => {
    expect(await columns(wf, PREVIOUS)).toEqual(before.columns);
    expect((await wf.publications())[1]).toMatchObject({ batch_id: BATCH_ID, old_version_table: PREVIOUS });
  });

  it('kept readers reading throughout: no error, and every read saw the whole history (old table or new, never a hole)', () => {
    expect(reads.filter((r) => r.error)).toEqual([]);
    expect(reads.length).toBeGreaterThan(10);
    for (const read of reads) expect(read.keySum, `${read.phase} read of reader ${read.reader}`).toBe(String(TO_DAY * 10));
    // The writer's rows only grow in number from one read to the next, but
    // for those committed in the moment between the swap's snapshot and its
    // lock, which reach the new table by the catch-up right after it (docs/decisions/migrating-a-live-table.md).
  });

  // What the migration left, then acted on: each test on a copy of its own.
  describe('afterwards', () => {
    const wf = useForkPerTest(migrated);

    it('a replay changes nothing', async () => {
      const live = await wf.fingerprint(LIVE);
      const replay = await wf.run(INPUT, 'migrate-replay');
      expect(replay.status, `${replay.error}: ${replay.cause}`).toBe('SUCCEEDED');
      expect(planOf(replay).alreadyPublished).toBe(true);
      expect(await wf.fingerprint(LIVE)).toEqual(live);
      expect(await wf.publications()).toHaveLength(2);
      expect(await wf.tableExists(`analytics.${stagingTableFor(PIPELINE, BATCH_ID)}`)).toBe(false);
    });

    it('after it, a normal run loads the source into a table LIKE the new one, which keeps its encodings and keys', async () => {
      const result = await wf.run(inputFor(TO_DAY + 1), 'normal-after-migration');
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect((await wf.fingerprint(LIVE)).rows).toBe((TO_DAY + 1) * 10);
      expect(
        await wf.query(
          `SELECT diststyle, sortkey1, sortkey_num FROM local_redshift.svv_table_info WHERE schema = 'analytics' AND "table" = 'sales_order_lines'`,
        ),
      ).toEqual([{ diststyle: 'KEY(customer_id)', sortkey1: 'ordered_at', sortkey_num: 2 }]);
      expect(await columns(wf, LIVE)).toContain('channel character varying(16)');
    });

    it('a later migration run finds nothing to migrate and writes nothing', async () => {
      const tables = await wf.derivedTables();
      const result = await wf.run({ ...INPUT, to: sampleDay(TO_DAY + 1).toISOString() }, 'migrate-again');
      expect(result.status).toBe('FAILED');
      expect(caughtMessage(result)).toContain('already has the columns of migration.ddl: nothing to migrate');
      expect(await wf.derivedTables()).toEqual(tables);
    });

    it('a rollback to the batch published before the migration puts the old table back: old columns, the rows it held, the view on it', async () => {
      const [first] = await wf.publications();
      const held = await wf.fingerprint(PREVIOUS);
      const result = await wf.run({ pipeline: PIPELINE.name, rollback: { to: first!.batch_id } }, 'rollback-migration');
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      expect(await columns(wf, LIVE)).toEqual(before.columns);
      expect(await wf.fingerprint(LIVE)).toEqual(held);
      const count = async (table: string) => (await wf.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n;
      expect(await count(VIEW)).toBe(await count(LIVE));
      expect(await wf.query(`SELECT has_table_privilege($1, '${LIVE}', 'SELECT') AS ok`, [READER])).toEqual([{ ok: true }]);
      // The spec still declares the migration: normal runs are refused until it runs again.
      const normal = await wf.run(inputFor(TO_DAY + 1), 'normal-after-rollback');
      expect(caughtMessage(normal)).toContain('run the migration first');
    });

    it("with snapshotReaders 'in-place', a rollback to before the migration renames the old table back: its columns differ from live's", async () => {
      const [first] = await wf.publications();
      const held = await wf.fingerprint(PREVIOUS);
      deployMigration('migration', { snapshotReaders: 'in-place' });
      try {
        const result = await wf.run({ pipeline: PIPELINE.name, rollback: { to: first!.batch_id } }, 'rollback-migration-in-place');
        expect(result.status, `${result.error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
      } finally {
        deployMigration('migration');
      }
      expect(await columns(wf, LIVE)).toEqual(before.columns);
      expect(await wf.fingerprint(LIVE)).toEqual(held);
      // Renamed back, not rewritten: the old version is the live table again.
      expect(await wf.tableExists(PREVIOUS)).toBe(false);
    });
  });
});

describe('a migration that renames a column', () => {
  const wf = useFork(prepared);
  beforeAll(async () => {
    // The live table as the pipeline published it before any migration was deployed.
    deployMigration('before');
    try {
      const published = await wf.run(inputFor(TO_DAY), 'normal-before-renaming');
      expect(published.status, `${published.error}: ${published.cause}`).toBe('SUCCEEDED');
    } finally {
      deployMigration('migration');
    }
  });
  useDeployed('renaming');

  it('copies its values under the new name', async () => {
    const input = { ...INPUT, to: sampleDay(TO_DAY + 1).toISOString() };
    const old = await wf.query(`SELECT count(*)::int AS n, sum(unit_price)::text AS total FROM ${LIVE}`);
    const result = await wf.run(input, 'migrate-renaming');
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    expect(await columns(wf, LIVE)).toContain('price_per_unit numeric(12,4)');
    expect(await columns(wf, LIVE)).not.toContain('unit_price numeric(12,4)');
    expect(await wf.query(`SELECT count(*)::int AS n, sum(price_per_unit)::text AS total FROM ${LIVE}`)).toEqual(old);
  });
});
