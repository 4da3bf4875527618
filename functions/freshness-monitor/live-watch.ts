import { type CloudWatchClient, type MetricDatum, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { inRequests } from '../../domain/freshness-monitor/freshness.ts';
import { LiveWatchError, type LiveWatchResult, liveDifferences, type RecordedLive } from '../../domain/live-watch/live-watch.ts';
import { publicationAndLease, recordedLive } from '../../domain/live-watch/sql/live-watch.ts';
import { liveColumnsQuery, liveFingerprintQuery } from '../../domain/live-watch/sql/out-of-band.ts';
import { DimensionName, METRICS_NAMESPACE, MetricName } from '../../domain/names.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { parseWarehouseTime } from '../../domain/time.ts';
import { pipelines as registry } from '../../pipelines/index.ts';
import { logger } from '../commons/powertools.ts';
import type { Warehouse } from '../commons/warehouse.ts';

export interface LiveWatchOptions {
  readonly warehouse: Warehouse;
  readonly cloudWatch: CloudWatchClient;
  /** The metrics' timestamp, and the instant a lease must outlast to count as held. */
  readonly now: Date;
  /** @default every pipeline of pipelines/index.ts */
  readonly pipelines?: readonly Pipeline[];
}

export interface LiveWatchReport {
  /** By pipeline: compared (matches, drifted) or skipped; pipelines with the watch off are absent. */
  readonly watched: Record<string, LiveWatchResult>;
}

async function watchOne(pipeline: Pipeline, warehouse: Warehouse, now: Date): Promise<LiveWatchResult> {
  const name = (what: string) => `atomic-publish:${pipeline.name}:live-watch:${what}`;
  const state = async (what: string) => {
    const [row] = await warehouse.query(publicationAndLease(pipeline.name, now), name(what));
    return { seq: Number(row?.seq ?? 0), leased: Number(row?.leased ?? 0) > 0 };
  };
  const before = await state('lease');
  if (before.leased) return { outcome: 'skipped', reason: 'a run holds its lease: it is about to change the live table' };
  if (before.seq === 0) return { outcome: 'skipped', reason: 'never published' };
  const [row] = await warehouse.query(recordedLive(pipeline.name), name('recorded'));
  if (row?.live_columns == null)
    return {
      outcome: 'skipped',
      reason: `publication ${row?.seq ?? before.seq} recorded nothing of the live table (a group, view or migration publish, the watch off then, or before manifest version 11)`,
    };
  const recorded: RecordedLive = {
    seq: Number(row.seq),
    columns: String(row.live_columns) === '' ? [] : String(row.live_columns).split(';'),
    fingerprint: row.live_fingerprint == null ? undefined : String(row.live_fingerprint),
    rowsBefore: row.live_rows_before == null ? undefined : parseWarehouseTime(String(row.live_rows_before)).toISOString(),
  };
  const { schema, table } = pipeline.target;
  const columns = (await warehouse.query(liveColumnsQuery(schema, table), name('columns'))).map((r) => String(r.col));
  let fingerprint: string | undefined;
  if (recorded.fingerprint !== undefined && columns.join(';') === recorded.columns.join(';')) {
    const [fp] = await warehouse.query(liveFingerprintQuery(pipeline, recorded.columns, recorded.rowsBefore), name('fingerprint'));
    fingerprint = String(fp?.fingerprint ?? '0:0');
  }
  // A publish that committed while the table was read would make the comparison one of two versions.
  const after = await state('recheck');
  if (after.seq !== recorded.seq || after.leased) return { outcome: 'skipped', reason: 'a run started or published while the live table was read' };
  const differences = liveDifferences(recorded, { columns, ...(fingerprint === undefined ? {} : { fingerprint }) });
  return differences.length === 0 ? { outcome: 'matches', seq: recorded.seq } : { outcome: 'drifted', seq: recorded.seq, differences };
}

/**
 * The live watch: per pipeline with `outOfBand.watch`, one after the other, the
 * live table's columns and fingerprint against those of its latest publication;
 * LiveDrift 1 (drifted) or 0 written per pipeline compared. One whose lease is held,
 * never published, or recorded nothing is skipped (no datapoint); differences are
 * logged as counts, checksums and column names, never values. One it cannot read
 * is logged and skipped, then the invocation fails with LiveWatchError. docs/decisions/live-watch.md
 */
export async function watchLive(options: LiveWatchOptions): Promise<LiveWatchReport> {
  const watched: Record<string, LiveWatchResult> = {};
  const failures: { pipeline: string; error: string }[] = [];
  const data: MetricDatum[] = [];
  for (const pipeline of (options.pipelines ?? registry).filter((p) => p.outOfBand.watch)) {
    try {
      const result = await watchOne(pipeline, options.warehouse, options.now);
      watched[pipeline.name] = result;
      if (result.outcome === 'skipped') {
        logger.info('live table not compared', { pipeline: pipeline.name, reason: result.reason });
        continue;
      }
      data.push({
        MetricName: MetricName.LiveDrift,
        Dimensions: [{ Name: DimensionName.Pipeline, Value: pipeline.name }],
        Timestamp: options.now,
        Value: result.outcome === 'drifted' ? 1 : 0,
        Unit: 'Count',
      });
      if (result.outcome === 'drifted') {
        logger.warn('live table drifted since its publication', { pipeline: pipeline.name, publication: result.seq, differences: result.differences });
      } else {
        logger.info('live table matches its publication', { pipeline: pipeline.name, publication: result.seq });
      }
    } catch (error) {
      failures.push({ pipeline: pipeline.name, error: `${(error as Error)?.name ?? 'Error'}: ${(error as Error)?.message ?? String(error)}` });
      logger.error('live table not watched', { pipeline: pipeline.name, error: error as Error });
    }
  }
  for (const request of inRequests(data)) {
    await options.cloudWatch.send(new PutMetricDataCommand({ Namespace: METRICS_NAMESPACE, MetricData: request }));
  }
  if (failures.length > 0) throw new LiveWatchError(failures);
  return { watched };
}
