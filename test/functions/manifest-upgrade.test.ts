// The manifest's upgrades through the local Redshift Data API (Redshift
// mode): from version 4, the rollback columns are added to an existing
// publications table without touching its rows, and a second install (a
// replay, or a second Plan) adds nothing twice; from version 5, chunks
// loaded before keep their state under chunk_state; from version 10 to 11,
// the events of the publications made before are marked sent, not sent again,
// and batches get purpose, which what reads it reads before and after.
// Each test builds the version it upgrades from on a database of its own.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { batchPurposePresent, recentBatches } from '../../domain/manifest/sql/cli.ts';
import { MANIFEST_VERSION, manifestInstall } from '../../domain/manifest/sql/manifest.ts';
import { batchState } from '../../domain/publish/sql/swap.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import { type Warehouse as TestWarehouse, useWarehouse } from '../support/warehouse.ts';

let wh: TestWarehouse;
beforeEach(async () => {
  wh = await useWarehouse('manifest_upgrade');
});
afterEach(() => wh?.close());

const columns = async () =>
  (
    await wh.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'atomic_publish' AND table_name = 'publications' ORDER BY ordinal_position`,
    )
  ).map((c) => c.column_name);

describe('manifest version 5', () => {
  it('adds rollback_of and restored_at to a version 4 publications table once, keeping its rows', async () => {
    const warehouse = localWarehouse(wh.endpoint, wh.pg.database);
    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:install');
    // What version 4 left: the table without the two columns, and one publication.
    await wh.query(`ALTER TABLE atomic_publish.publications DROP COLUMN rollback_of, DROP COLUMN restored_at`);
    await wh.query(`DELETE FROM atomic_publish.manifest_version WHERE version >= 5`);
    await wh.query(
      `INSERT INTO atomic_publish.publications (pipeline, seq, batch_id, published_at, live_table, old_version_table)
       VALUES ('orders', 1, 'aaaaaaaaaaaaaaaa', '2026-01-01', 'analytics.orders', 'analytics.orders__prev_aaaaaaaaaaaaaaaa')`,
    );
    expect(await columns()).not.toContain('rollback_of');

    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:upgrade');
    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:again');

    const after = await columns();
    expect(after.filter((c) => c === 'rollback_of' || c === 'restored_at')).toEqual(['rollback_of', 'restored_at']);
    expect(await wh.query(`SELECT seq, batch_id, rollback_of, restored_at FROM atomic_publish.publications`)).toEqual([
      { seq: 1, batch_id: 'aaaaaaaaaaaaaaaa', rollback_of: null, restored_at: null },
    ]);
    expect(await wh.query(`SELECT version FROM atomic_publish.manifest_version WHERE version = $1`, [MANIFEST_VERSION])).toEqual([
      { version: MANIFEST_VERSION },
    ]);
  });
});

describe('manifest version 6', () => {
  it('keeps what version 5 recorded of chunks in chunk_state, and counts a chunk DONE once a load of its generation committed', async () => {
    const warehouse = localWarehouse(wh.endpoint, wh.pg.database);
    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:install');
    // What version 5 left: chunks whose state is in the chunks table itself.
    await wh.query('DROP VIEW atomic_publish.chunk_state');
    await wh.query('DROP TABLE atomic_publish.chunk_loads');
    await wh.query(`DELETE FROM atomic_publish.manifest_version WHERE version = 6`);
    await wh.query(
      `INSERT INTO atomic_publish.chunks (batch_id, chunk_index, interval_start, interval_end, status, attempt, rows_written, statement_id)
       VALUES ('b', 0, '2026-01-01', '2026-01-02', 'DONE', 1, 7, 'x'), ('b', 1, '2026-01-02', '2026-01-03', 'LOADING', 1, NULL, 'y'),
              ('b', 2, '2026-01-03', '2026-01-04', 'PENDING', 0, NULL, NULL)`,
    );

    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:upgrade');
    await wh.query(
      `INSERT INTO atomic_publish.chunk_loads (batch_id, chunk_index, generation, rows_written, loaded_at)
       VALUES ('b', 2, 0, 9, '2026-01-05'), ('b', 1, 0, 5, '2026-01-05')`,
    );

    expect(
      await wh.query(
        `SELECT chunk_index, status, generation, rows_written::int AS rows, loads::int AS loads FROM atomic_publish.chunk_state WHERE batch_id = 'b' ORDER BY chunk_index`,
      ),
    ).toEqual([
      { chunk_index: 0, status: 'DONE', generation: 1, rows: 7, loads: 0 },
      // A load of an older generation does not count.
      { chunk_index: 1, status: 'LOADING', generation: 1, rows: null, loads: 0 },
      { chunk_index: 2, status: 'DONE', generation: 0, rows: 9, loads: 1 },
    ]);
  });
});

describe('manifest version 11', () => {
  it('marks the events of the publications made before it sent, once: a publication made after it is left to its delivery', async () => {
    const warehouse = localWarehouse(wh.endpoint, wh.pg.database);
    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:install');
    // What version 10 left: publications without the delivery record, and no restatement numbers.
    await wh.query(`ALTER TABLE atomic_publish.publications DROP COLUMN event_sent_at, DROP COLUMN restatement`);
    await wh.query(`ALTER TABLE atomic_publish.batches DROP COLUMN restatement`);
    await wh.query(`DELETE FROM atomic_publish.manifest_version WHERE version >= 11`);
    await wh.query(
      `INSERT INTO atomic_publish.publications (pipeline, seq, batch_id, published_at, live_table, old_version_table)
       VALUES ('orders', 1, 'aaaaaaaaaaaaaaaa', '2026-01-01', 'analytics.orders', 'analytics.orders__prev_a'),
              ('orders', 2, 'bbbbbbbbbbbbbbbb', '2026-01-02', 'analytics.orders', 'analytics.orders__prev_b')`,
    );

    for (const ddl of manifestInstall(new Date('2026-02-01T00:00:00Z'))) await warehouse.batch(ddl, 'manifest-upgrade:upgrade');
    await wh.query(
      `INSERT INTO atomic_publish.publications (pipeline, seq, batch_id, published_at, live_table, old_version_table)
       VALUES ('orders', 3, 'cccccccccccccccc', '2026-02-02', 'analytics.orders', 'analytics.orders__prev_c')`,
    );
    for (const ddl of manifestInstall(new Date('2026-02-03T00:00:00Z'))) await warehouse.batch(ddl, 'manifest-upgrade:again');

    expect(await wh.query(`SELECT seq, to_char(event_sent_at, 'YYYY-MM-DD') AS sent FROM atomic_publish.publications ORDER BY seq`)).toEqual([
      { seq: 1, sent: '2026-02-01' },
      { seq: 2, sent: '2026-02-01' },
      { seq: 3, sent: null },
    ]);
    expect(await wh.query(`SELECT version FROM atomic_publish.manifest_version WHERE version = $1`, [MANIFEST_VERSION])).toEqual([
      { version: MANIFEST_VERSION },
    ]);
  });

  it('adds batches.purpose to a version 10 batches table, its rows NULL (publishing); the command line and Publish read both versions', async () => {
    const warehouse = localWarehouse(wh.endpoint, wh.pg.database);
    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:install');
    // What version 10 left: batches without purpose, and one batch.
    await wh.query('ALTER TABLE atomic_publish.batches DROP COLUMN purpose, DROP COLUMN restatement');
    await wh.query(
      'ALTER TABLE atomic_publish.publications DROP COLUMN event_sent_at, DROP COLUMN restatement, DROP COLUMN live_columns, DROP COLUMN live_fingerprint, DROP COLUMN live_rows_before',
    );
    await wh.query('DELETE FROM atomic_publish.manifest_version WHERE version = 11');
    await wh.query(
      `INSERT INTO atomic_publish.batches (batch_id, pipeline, mode, interval_start, interval_end, spec_hash, code_version, execution_id, status, attempt,
                                           base_publication, staging_table, chunk_count, started_at)
       VALUES ('aaaaaaaaaaaaaaaa', 'orders', 'swap', '2026-01-01', '2026-01-02', 'h', 'c', 'e', 'PUBLISHED', 1, 0, 'orders__stg_aaaaaaaaaaaaaaaa', 1, '2026-01-02')`,
    );
    const read = async () => {
      const present = Number((await warehouse.query(batchPurposePresent(), 'manifest-upgrade:purpose'))[0]?.present) > 0;
      return {
        present,
        batches: (await warehouse.query(recentBatches('orders', 5, present, false), 'manifest-upgrade:batches')).map((b) => [b.batch_id, b.purpose]),
        state: (await warehouse.query(batchState('aaaaaaaaaaaaaaaa'), 'manifest-upgrade:state')).map((b) => [b.status, b.purpose]),
      };
    };
    expect(await read()).toEqual({ present: false, batches: [['aaaaaaaaaaaaaaaa', null]], state: [['PUBLISHED', undefined]] });

    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:upgrade');
    for (const ddl of manifestInstall(new Date())) await warehouse.batch(ddl, 'manifest-upgrade:again');

    expect(await read()).toEqual({ present: true, batches: [['aaaaaaaaaaaaaaaa', null]], state: [['PUBLISHED', null]] });
    expect(await wh.query(`SELECT version FROM atomic_publish.manifest_version WHERE version = $1`, [MANIFEST_VERSION])).toEqual([
      { version: MANIFEST_VERSION },
    ]);
  });
});
