// The manifest's upgrade from version 4 to 5 through the local Redshift
// Data API (Redshift mode): the rollback columns are added to an existing
// publications table without touching its rows, and a second install (a
// replay, or a second Plan) adds nothing twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANIFEST_VERSION, manifestDdl } from '../../domain/sql/manifest.ts';
import { localWarehouse } from '../../local/aws-clients.ts';
import { useWarehouse, type Warehouse as TestWarehouse } from '../support/warehouse.ts';

let wh: TestWarehouse;
beforeAll(async () => {
  wh = await useWarehouse('manifest_upgrade');
});
afterAll(() => wh?.close());

const columns = async () =>
  (
    await wh.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'atomic_publish' AND table_name = 'publications' ORDER BY ordinal_position`,
    )
  ).map((c) => c.column_name);

describe('manifest version 5', () => {
  it('adds rollback_of and restored_at to a version 4 publications table once, keeping its rows', async () => {
    const warehouse = localWarehouse(wh.endpoint, wh.pg.database);
    await warehouse.batch(manifestDdl(new Date()), 'manifest-upgrade:install');
    // What version 4 left: the table without the two columns, and one publication.
    await wh.query(`ALTER TABLE atomic_publish.publications DROP COLUMN rollback_of, DROP COLUMN restored_at`);
    await wh.query(`DELETE FROM atomic_publish.manifest_version WHERE version = 5`);
    await wh.query(
      `INSERT INTO atomic_publish.publications (pipeline, seq, batch_id, published_at, live_table, old_version_table)
       VALUES ('orders', 1, 'aaaaaaaaaaaaaaaa', '2026-01-01', 'analytics.orders', 'analytics.orders__prev_aaaaaaaaaaaaaaaa')`,
    );
    expect(await columns()).not.toContain('rollback_of');

    await warehouse.batch(manifestDdl(new Date()), 'manifest-upgrade:upgrade');
    await warehouse.batch(manifestDdl(new Date()), 'manifest-upgrade:again');

    const after = await columns();
    expect(after.filter((c) => c === 'rollback_of' || c === 'restored_at')).toEqual(['rollback_of', 'restored_at']);
    expect(await wh.query(`SELECT seq, batch_id, rollback_of, restored_at FROM atomic_publish.publications`)).toEqual([
      { seq: 1, batch_id: 'aaaaaaaaaaaaaaaa', rollback_of: null, restored_at: null },
    ]);
    expect(await wh.query(`SELECT version FROM atomic_publish.manifest_version WHERE version = $1`, [MANIFEST_VERSION])).toEqual([{ version: 5 }]);
  });
});
