// A database of its own for an engine test of the SQL modules: the fixture
// pipeline's source (raw.order_events) and live table (analytics.orders),
// and the manifest, reached through the Data API in Redshift mode.
import { manifestInstall } from '../../../domain/manifest/sql/manifest.ts';
import type { Warehouse as Steps } from '../../../functions/commons/warehouse.ts';
import { localWarehouse } from '../../../local/aws-clients.ts';
import { useWarehouse, type Warehouse } from '../../support/warehouse.ts';

export async function useOrdersWarehouse(name: string): Promise<{ wh: Warehouse; steps: Steps }> {
  const wh = await useWarehouse(name);
  const steps = localWarehouse(wh.endpoint, wh.pg.database);
  await wh.query('CREATE SCHEMA raw; CREATE SCHEMA analytics');
  await wh.query('CREATE TABLE raw.order_events (order_id bigint, ordered_at timestamp, amount numeric(12,2))');
  await wh.query('CREATE TABLE analytics.orders (order_id bigint, ordered_at timestamp, amount numeric(12,2))');
  for (const ddl of manifestInstall(new Date())) await steps.batch(ddl, 'manifest');
  return { wh, steps };
}
