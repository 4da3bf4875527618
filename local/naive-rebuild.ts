/**
 * The rebuild most teams start with, kept as the demo's baseline: empty the
 * live table (or the days of a backfill), then insert day by day, every statement committing on its
 * own. Readers see every step, and a failure leaves the table half full.
 * (Do not copy this; it is what atomic-publish exists to replace.)
 */
import { qualifiedName } from '../domain/identifiers.ts';
import { timestampParam } from '../domain/sql/statement.ts';
import type { Warehouse } from '../functions/commons/warehouse.ts';
import { samplePipeline } from './sample-data.ts';

const DAY_MS = 86_400_000;

export async function naiveRebuild(
  warehouse: Warehouse,
  /** `only`: empty only those days (a backfill of some days in place) instead of the whole table. */
  target: { table: string; days: number; firstDay: Date; only?: boolean },
  /** Awaited after each step: a caller may hold the rebuild there (readers taking a read first). */
  onProgress: (done: number, total: number) => void | Promise<void>,
): Promise<{ failed: boolean; message: string }> {
  const pipeline = samplePipeline();
  const [schema, table] = target.table.split('.') as [string, string];
  const live = qualifiedName(schema, table);
  try {
    const lastDay = new Date(target.firstDay.getTime() + target.days * DAY_MS);
    await warehouse.execute(
      target.only
        ? {
            sql: `DELETE FROM ${live} WHERE ordered_at >= :start AND ordered_at < :end`,
            parameters: { start: timestampParam(target.firstDay), end: timestampParam(lastDay) },
          }
        : { sql: `DELETE FROM ${live}` },
      'naive:delete',
    );
    await onProgress(0, target.days);
    for (let day = 0; day < target.days; day++) {
      const start = new Date(target.firstDay.getTime() + day * DAY_MS);
      const end = new Date(start.getTime() + DAY_MS);
      await warehouse.execute(
        { sql: `INSERT INTO ${live} ${pipeline.sourceSql}`, parameters: { start: timestampParam(start), end: timestampParam(end) } },
        `naive:insert-day-${day + 1}`,
      );
      await onProgress(day + 1, target.days);
    }
    return { failed: false, message: 'completed' };
  } catch (error) {
    return { failed: true, message: (error as Error).message.replace(/^.*?failed: /, '') };
  }
}
