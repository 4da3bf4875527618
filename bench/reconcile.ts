/**
 * What Reconcile's reading costs, as a ratio to one plain per-day COUNT(*) and
 * measure sums over the source plus one over staging, through the same endpoint in
 * the same run; beside it, for scale, the gate's variants (counts only, the time
 * column in the key, `checks.drift`'s NULL counts and live pass) and bare passes
 * (the key grouping, COUNT(*), every column): docs/develop.md#bench. The batch is
 * set up directly (manifest, chunks, staging by one INSERT ... SELECT), so only the reading is timed.
 */
import type { BatchRef } from '../domain/batch.ts';
import { definePipeline } from '../domain/define-pipeline.ts';
import { liveDriftCounts, nullCountAggregates } from '../domain/gate/sql/drift.ts';
import { chunkCounts, gateAggregates } from '../domain/gate/sql/reconcile.ts';
import { qualifiedName, quoteIdent } from '../domain/identifiers.ts';
import { liveColumnsQuery } from '../domain/live-watch/sql/out-of-band.ts';
import { planChunks, stagingTableFor } from '../domain/plan/plan.ts';
import { grainKey, startBatch } from '../domain/plan/sql/plan.ts';
import type { Pipeline } from '../domain/spec.ts';
import { timestampParam } from '../domain/sql/statement.ts';
import type { Warehouse } from '../functions/commons/warehouse.ts';
import { ensureManifest } from '../functions/plan/batch.ts';
import { renderTable } from '../local/table.ts';
import { salesOrderLines } from '../pipelines/sales-order-lines.ts';
import { median } from './stats.ts';

export interface ReconcileBenchOptions {
  /** The Data API warehouse of the bench database, as a superuser. */
  readonly warehouse: Warehouse;
  readonly pipeline: Pipeline;
  readonly from: Date;
  readonly to: Date;
  readonly repeat: number;
}

export interface ReconcileBench {
  /** Gate / baseline, medians. */
  readonly reconcileRatio: number;
  /** The medians the ratio comes from, ms. */
  readonly baselineMs: number;
  readonly gateMs: number;
  readonly table: string;
}

const BATCH_ID = 'benchreconcile00';

export async function benchReconcile(opts: ReconcileBenchOptions): Promise<ReconcileBench> {
  const { warehouse, pipeline } = opts;
  const interval = { from: opts.from, to: opts.to };
  const chunks = planChunks(interval, pipeline);
  const stagingTable = stagingTableFor(pipeline, BATCH_ID);
  const staging = qualifiedName(pipeline.target.schema, stagingTable);
  const range = { start: timestampParam(interval.from), end: timestampParam(interval.to) };

  await ensureManifest(warehouse, 'bench:reconcile:manifest');
  await warehouse.execute({ sql: `DROP TABLE IF EXISTS ${staging}` }, 'bench:reconcile:drop');
  await warehouse.batch(
    startBatch({ batchId: BATCH_ID, pipeline, interval, codeVersion: 'bench', executionId: '', basePublication: 0, stagingTable, chunks, now: new Date() }),
    'bench:reconcile:start',
  );
  await warehouse.execute({ sql: `INSERT INTO ${staging} ${pipeline.sourceSql}\n`, parameters: range }, 'bench:reconcile:fill');
  await warehouse.execute({ sql: `ANALYZE ${staging}` }, 'bench:reconcile:analyze');
  const batch: BatchRef = {
    pipeline: pipeline.name,
    batchId: BATCH_ID,
    specHash: pipeline.specHash,
    liveTable: `${pipeline.target.schema}.${pipeline.target.table}`,
    from: interval.from.toISOString(),
    to: interval.to.toISOString(),
    stagingTable,
    columns: [],
    basePublication: 0,
  };

  const t = quoteIdent(pipeline.timeColumn);
  const timed = async (run: () => Promise<unknown>) => {
    const started = performance.now();
    await run();
    return performance.now() - started;
  };
  const measures = { ...salesOrderLines.checks, measures: ['quantity', 'amount'] };
  const plain = (from: string) =>
    `SELECT ${grainKey(pipeline, `s.${t}`)} AS k, COUNT(*) AS n, ${measures.measures.map((m) => `SUM(s.${quoteIdent(m)}) AS ${quoteIdent(`sum_${m}`)}`).join(', ')}
       FROM ${from} WHERE s.${t} >= :start AND s.${t} < :end GROUP BY 1`;
  const baseline = () =>
    timed(async () => {
      await warehouse.query({ sql: plain(`(${pipeline.sourceSql}\n) AS s`), parameters: range }, 'bench:reconcile:plain-source');
      await warehouse.query({ sql: plain(`${staging} AS s`), parameters: range }, 'bench:reconcile:plain-staging');
    });
  const counts = () =>
    timed(async () => {
      await warehouse.query(
        { sql: `SELECT COUNT(*) AS n FROM (${pipeline.sourceSql}\n) AS s WHERE s.${t} >= :start AND s.${t} < :end`, parameters: range },
        'bench:reconcile:count-source',
      );
      await warehouse.query({ sql: `SELECT COUNT(*) AS n FROM ${staging}` }, 'bench:reconcile:count-staging');
    });
  // What Reconcile reads (functions/reconcile/index.ts): staging's columns, then the one statement.
  const gated = definePipeline({ ...salesOrderLines, checks: measures });
  const gateOf = (p: Pipeline, statement: string) => async () => {
    const columns = (await warehouse.query(liveColumnsQuery(p.target.schema, stagingTable), `${statement}-columns`)).map((r) => String(r.col));
    return warehouse.query(chunkCounts(p, batch, gateAggregates(p, columns)), statement);
  };
  const gate = () => timed(gateOf(gated, 'bench:reconcile:gate'));
  const names = (await warehouse.query(liveColumnsQuery(pipeline.target.schema, stagingTable), 'bench:reconcile:names')).map(
    (r) => String(r.col).split(' ')[0]!,
  );
  const nullsGate = () =>
    timed(async () => {
      const columns = (await warehouse.query(liveColumnsQuery(gated.target.schema, stagingTable), 'bench:reconcile:gate-nulls-columns')).map((r) =>
        String(r.col),
      );
      return warehouse.query(chunkCounts(gated, batch, [...gateAggregates(gated, columns), ...nullCountAggregates(names)]), 'bench:reconcile:gate-nulls');
    });
  // Every column read, nothing hashed: what a content check must read at the least.
  const readAll = (from: string) =>
    `SELECT ${grainKey(pipeline, `s.${t}`)} AS k, COUNT(*) AS n, ${names.map((c, i) => `MAX(s.${quoteIdent(c)}) AS ap_m${i}`).join(', ')}
       FROM ${from} WHERE s.${t} >= :start AND s.${t} < :end GROUP BY 1`;
  const everyColumn = () =>
    timed(async () => {
      await warehouse.query({ sql: readAll(`(${pipeline.sourceSql}\n) AS s`), parameters: range }, 'bench:reconcile:every-column-source');
      await warehouse.query({ sql: readAll(`${staging} AS s`), parameters: range }, 'bench:reconcile:every-column-staging');
    });
  const livePass = () => timed(() => warehouse.query(liveDriftCounts(pipeline, batch, names), 'bench:reconcile:live-drift'));
  const countsOnly = () => timed(() => warehouse.query(chunkCounts(pipeline, batch), 'bench:reconcile:counts-only'));
  const keyed = definePipeline({ ...salesOrderLines, checks: measures, businessKey: [...salesOrderLines.businessKey, pipeline.timeColumn] });
  const keyedGate = () => timed(gateOf(keyed, 'bench:reconcile:gate-key-with-time'));
  const keyPass = () =>
    timed(() =>
      warehouse.query(
        {
          sql: `SELECT COUNT(*) AS n FROM (SELECT 1 AS one FROM ${staging} GROUP BY ${pipeline.businessKey.map(quoteIdent).join(', ')} HAVING COUNT(*) > 1) AS d`,
        },
        'bench:reconcile:key-pass',
      ),
    );

  // One warm-up of each (cache), then the repetitions, interleaved.
  await baseline();
  await gate();
  await countsOnly();
  await keyedGate();
  await keyPass();
  await counts();
  await everyColumn();
  const countStarMs: number[] = [];
  const everyMs: number[] = [];
  await nullsGate();
  await livePass();
  const nullsMs: number[] = [];
  const liveMs: number[] = [];
  const baselineMs: number[] = [];
  const gateMs: number[] = [];
  const countsMs: number[] = [];
  const keyedMs: number[] = [];
  const keyMs: number[] = [];
  for (let i = 0; i < opts.repeat; i++) {
    baselineMs.push(await baseline());
    gateMs.push(await gate());
    countsMs.push(await countsOnly());
    keyedMs.push(await keyedGate());
    keyMs.push(await keyPass());
    countStarMs.push(await counts());
    everyMs.push(await everyColumn());
    nullsMs.push(await nullsGate());
    liveMs.push(await livePass());
  }
  await warehouse.execute({ sql: `DROP TABLE IF EXISTS ${staging}` }, 'bench:reconcile:cleanup');

  const b = median(baselineMs);
  const g = median(gateMs);
  const c = median(countsMs);
  const k = median(keyMs);
  const kt = median(keyedMs);
  const cs = median(countStarMs);
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  const table = renderTable(
    ['reconcile (median)', 'time', 'ratio to the baseline'],
    [
      ['baseline: per-day COUNT(*) and sums of 2 measures of the source + the same of staging', ms(b), '1.00x'],
      [`gate: per-chunk counts, checksums and sums of 2 measures of ${chunks.length} chunks, outside rows, duplicate keys`, ms(g), `${(g / b).toFixed(2)}x`],
      ['counts only: the gate without checksums and sums', ms(c), `${(c / b).toFixed(2)}x`],
      ['gate, business key holding the time: key checked per chunk in the same pass', ms(kt), `${(kt / b).toFixed(2)}x`],
      ['for scale: the business-key uniqueness pass over staging alone', ms(k), `${(k / b).toFixed(2)}x`],
      ['for scale: COUNT(*) of the source + COUNT(*) of staging', ms(cs), `${(cs / b).toFixed(2)}x`],
      [
        `for scale: per-day COUNT(*) and MAX of each of the ${names.length} columns, each side (every column read, nothing hashed)`,
        ms(median(everyMs)),
        `${(median(everyMs) / b).toFixed(2)}x`,
      ],
      [
        `gate with the NULL counts of all ${names.length} columns (checks.drift.nullRate): same passes`,
        ms(median(nullsMs)),
        `${(median(nullsMs) / b).toFixed(2)}x`,
      ],
      [
        `live side of checks.drift: rows and NULL counts of ${names.length} columns per chunk, one pass over live`,
        ms(median(liveMs)),
        `${(median(liveMs) / b).toFixed(2)}x`,
      ],
    ],
    ['l', 'r', 'r'],
  );
  return { reconcileRatio: g / b, baselineMs: b, gateMs: g, table: `${table}\n` };
}
