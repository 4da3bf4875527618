/**
 * The SQL of the freshness monitor: when the live data was published. The
 * newest event time in live is EmitMetrics' query (domain/emit-metrics/sql/emit-metrics.ts).
 */
import { MANIFEST as M, type Statement } from '../../sql/statement.ts';

/**
 * When the publication whose data is live was made: the newest publication
 * that is neither a rollback (`rollback_of`) nor rolled back. A rollback
 * puts back data published earlier, so it does not make the table fresher:
 * after one, the age is that of the publication restored. NULL when the
 * pipeline never published.
 */
export function livePublishedAt(pipeline: string): Statement {
  return {
    sql: `SELECT MAX(published_at) AS published_at FROM ${M}.publications
           WHERE pipeline = :pipeline AND rollback_of IS NULL AND rolled_back_at IS NULL`,
    parameters: { pipeline },
  };
}
