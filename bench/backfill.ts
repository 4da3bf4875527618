/**
 * What a backfill of some days costs against a full rebuild: the same
 * pipeline, published by replace-intervals (its spec as a redeploy would
 * ship it), loading BACKFILL_DAYS of the bench's days, once per repetition
 * on days not replaced yet (a replay of a published batch does nothing).
 */

import { definePipeline } from '../domain/define-pipeline.ts';
import type { LocalRunner } from '../local/runner.ts';
import { sampleDay } from '../local/sample-data.ts';
import { pipelines } from '../pipelines/index.ts';
import { salesOrderLines } from '../pipelines/sales-order-lines.ts';

/** Days a backfill replaces: a tenth of the bench's 60. */
export const BACKFILL_DAYS = 6;

export async function benchBackfill(options: { runner: LocalRunner; days: number; repeat: number }): Promise<number[]> {
  const { runner, days, repeat } = options;
  const index = pipelines.findIndex((p) => p.name === salesOrderLines.name);
  const swap = pipelines[index]!;
  pipelines[index] = definePipeline({ ...salesOrderLines, publishMode: 'replace-intervals' });
  try {
    const runMs: number[] = [];
    for (let i = 0; i < repeat; i++) {
      const to = days - i * BACKFILL_DAYS;
      const input = { pipeline: swap.name, from: sampleDay(to - BACKFILL_DAYS).toISOString(), to: sampleDay(to).toISOString() };
      const t = performance.now();
      const result = await runner.run(input);
      runMs.push(performance.now() - t);
      if (result.status !== 'SUCCEEDED') throw new Error(`backfill run failed: ${result.error}: ${result.cause}`);
    }
    return runMs;
  } finally {
    pipelines[index] = swap;
  }
}
