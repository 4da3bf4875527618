// What a workflow test reads back after Reconcile: the recorded check results
// of a batch's latest attempt, and the sample source's figures of a day.

import { definePipeline } from '../../domain/define-pipeline.ts';
import { batchIdFor, resolveInterval } from '../../domain/plan/plan.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';
import { inputFor, type Workflow } from './workflow.ts';

const sampleIndex = pipelines.findIndex((p) => p.name === salesOrderLines.name);
const sampleAsShipped = pipelines[sampleIndex]!;

/** The sample pipeline with these checks, deployed as a new spec would be (the functions read this list); restoreSample undoes it. */
export function deploySampleChecks(checks: PipelineSpec['checks']): void {
  pipelines[sampleIndex] = definePipeline({ ...salesOrderLines, checks });
}

/** The batch id of a run up to sample day `day` of the sample pipeline as deployed now. */
export function sampleBatchId(day: number): string {
  const pipeline = pipelines[sampleIndex]!;
  return batchIdFor(pipeline, resolveInterval(inputFor(day), pipeline, new Date()));
}

export function restoreSample(): void {
  pipelines[sampleIndex] = sampleAsShipped;
}

export interface RecordedCheck {
  check_name: string;
  passed: boolean;
  observed: string;
  details: string;
}

/** Sample day n's start as the warehouse's timestamp text (`2026-01-04T00:00:00`). */
export const dayStart = (n: number) => sampleDay(n).toISOString().slice(0, 19);

/** The check results of the batch's latest attempt, by check name. */
export async function latestChecks(wf: Workflow, batchId: string): Promise<Map<string, RecordedCheck>> {
  const rows = await wf.query<RecordedCheck>(
    `SELECT check_name, passed, observed, details FROM atomic_publish.check_results
      WHERE batch_id = $1 AND attempt = (SELECT MAX(attempt) FROM atomic_publish.check_results WHERE batch_id = $1)`,
    [batchId],
  );
  return new Map(rows.map((c) => [c.check_name, c]));
}

/** The source's amount total over sample day n, as the warehouse writes it. */
export async function sourceAmountOfDay(wf: Workflow, n: number): Promise<string> {
  const [row] = await wf.query<{ total: string }>('SELECT SUM(amount) AS total FROM source.sales_order_lines WHERE ordered_at >= $1 AND ordered_at < $2', [
    dayStart(n),
    dayStart(n + 1),
  ]);
  return row!.total;
}
