/** `plan`: a dry run. The chunks, the load's and the gate's SQL, what is published already, an estimate; reads the catalog and the manifest only. */

import { chunkCounts, gateAggregates } from '../domain/gate/sql/reconcile.ts';
import { liveColumnsQuery } from '../domain/live-watch/sql/out-of-band.ts';
import { insertIntervalSql } from '../domain/load-chunk/sql/load-chunk.ts';
import { batchProgress, publishedIntervals } from '../domain/manifest/sql/cli.ts';
import { batchIdFor, liveTableColumns, planChunks, stagingTableFor } from '../domain/plan/plan.ts';
import { doneChunks, findBatch, tableColumns } from '../domain/plan/sql/plan.ts';
import type { Context } from './context.ts';
import { ExitCode } from './errors.ts';
import { shortTime } from './layout.ts';
import { costPer1000Chunks, MEASURED_PER_CHUNK } from './prices.ts';
import { type CliIo, intervalOf, manifestPresent, num, pipelineNamed, prose, query, table, text } from './shared.ts';

export async function plan(ctx: Context, io: CliIo, name: string, opts: { from?: string; to?: string }): Promise<number> {
  const pipeline = pipelineNamed(name);
  const interval = intervalOf(pipeline, opts.from, opts.to);
  const chunks = planChunks(interval, pipeline);
  const batchId = batchIdFor(pipeline, interval);
  const { schema, table: liveTable } = pipeline.target;
  const columns = liveTableColumns(
    pipeline,
    (await query(ctx, tableColumns(schema, liveTable), 'plan:columns')).map((r) => ({ name: String(r.column_name), dataType: String(r.data_type) })),
  );
  const batch = {
    pipeline: pipeline.name,
    batchId,
    specHash: pipeline.specHash,
    liveTable: `${schema}.${liveTable}`,
    from: interval.from.toISOString(),
    to: interval.to.toISOString(),
    stagingTable: stagingTableFor(pipeline, batchId),
    columns,
    basePublication: 0,
  };
  const typed = (await query(ctx, liveColumnsQuery(schema, liveTable), 'plan:typed-columns')).map((r) => String(r.col));
  const gate = chunkCounts(pipeline, batch, gateAggregates(pipeline, typed));
  const manifest = await manifestPresent(ctx);
  const published = manifest ? await query(ctx, publishedIntervals(pipeline.name, interval), 'plan:published') : [];
  const existing = manifest ? (await query(ctx, findBatch(batchId), 'plan:batch'))[0] : undefined;
  const progress = existing ? (await query(ctx, batchProgress(batchId), 'plan:progress'))[0] : undefined;
  const loaded = new Set(
    existing ? (await query(ctx, doneChunks(batchId), 'plan:chunks')).filter((r) => r.status === 'DONE').map((r) => num(r.chunk_index)) : [],
  );
  const toLoad = chunks.length - num(progress?.done);
  const cost = costPer1000Chunks(MEASURED_PER_CHUNK);
  const estimate = {
    chunksToLoad: toLoad,
    stateTransitions: Math.ceil(toLoad * MEASURED_PER_CHUNK.transitions),
    dataApiRequests: Math.ceil(toLoad * MEASURED_PER_CHUNK.dataApiRequests),
    lambdaInvocations: Math.ceil(toLoad * MEASURED_PER_CHUNK.lambdaRequests),
    costUsd: Number(((toLoad * cost.total) / 1000).toFixed(6)),
  };
  const result = {
    pipeline: pipeline.name,
    mode: pipeline.publishMode,
    interval: { from: batch.from, to: batch.to },
    batchId,
    batchStatus: existing ? String(existing.status) : null,
    chunks: chunks.map((c) => ({ ...c, loaded: loaded.has(c.index) })),
    ...(pipeline.chunk.targetRows ? { mergedByTargetRows: true } : {}),
    sql: {
      load: { sql: insertIntervalSql(pipeline, batch), parameters: { start: chunks[0]!.start, end: chunks[0]!.end } },
      gate: { sql: gate.sql, parameters: gate.parameters ?? {} },
    },
    published: published.map((p) => ({
      seq: num(p.seq),
      batchId: text(p.batch_id),
      publishedAt: text(p.published_at),
      mode: text(p.publish_mode),
      from: text(p.interval_start),
      to: text(p.interval_end),
      rows: num(p.rows_published),
    })),
    estimate,
  };
  if (ctx.json) {
    io.stdout(JSON.stringify(result, null, 2));
    return ExitCode.OK;
  }
  // Sentences wrap at the output's width; the SQL is printed as it runs.
  const say = (line: string) => prose(io, line);
  const out: string[] = [];
  out.push(say(`Plan (dry run, nothing started): ${pipeline.name}, ${pipeline.publishMode}, ${batch.from} .. ${batch.to}`));
  out.push(
    say(
      `Batch ${batchId}${existing ? ` (already in the manifest: ${text(existing.status)}, ${num(progress?.done)} of ${chunks.length} chunk(s) loaded)` : ' (new)'}`,
    ),
  );
  out.push(
    say(
      `${chunks.length} chunk(s) of one ${pipeline.chunk.grain} in ${pipeline.chunk.timezone}${pipeline.chunk.targetRows ? ' (Plan merges adjacent ones up to chunk.targetRows)' : ''}:`,
    ),
  );
  const shown = chunks.length > 12 ? [...chunks.slice(0, 6), undefined, ...chunks.slice(-5)] : chunks;
  out.push(
    table(
      io,
      ['#', 'start', 'end', 'loaded'],
      shown.map((c) => (c ? [c.index, c.start, c.end, loaded.has(c.index) ? 'yes' : ''] : ['...', `${chunks.length - 11} more`, '', ''])),
    ),
  );
  out.push('', say(`The load of a chunk (LoadChunk; :start and :end, the first chunk's: ${chunks[0]!.start}, ${chunks[0]!.end}):`), result.sql.load.sql);
  out.push('', say(`The gate's statement (Reconcile; :start ${batch.from}, :end ${batch.to}):`), gate.sql);
  out.push('', published.length === 0 ? 'Published already: nothing of this interval.' : 'Published already (publications that wrote some of this interval):');
  if (published.length > 0) {
    out.push(
      table(
        io,
        ['#', 'batch', 'published at (UTC)', 'mode', 'interval (UTC)', 'rows'],
        result.published.map((p) => [p.seq, p.batchId, shortTime(p.publishedAt), p.mode, `${shortTime(p.from)} .. ${shortTime(p.to)}`, p.rows]),
      ),
    );
  }
  out.push(
    '',
    say(
      `Estimate (per-chunk figures of npm run bench): ${toLoad} chunk(s) to load, about ${estimate.stateTransitions} state transitions, ${estimate.dataApiRequests} Data API requests, ${estimate.lambdaInvocations} Lambda invocations, $${estimate.costUsd.toFixed(6)} at list price (warehouse time not included).`,
    ),
  );
  io.stdout(out.join('\n'));
  return ExitCode.OK;
}
