import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { PIPELINE, type Workflow } from './workflow.ts';

/**
 * A scheduled run at 07:00 on sample day `day`: Step Functions passes the
 * execution's start time to Plan ($$.Execution.StartTime), which decides
 * the interval; the run gives it the morning it simulates (and a lease
 * long enough to reach from then to now). `pipeline`: the sample's by default.
 */
export async function scheduledRunOn(wf: Workflow, day: number, name: string, pipeline: string = PIPELINE.name): Promise<ExecutionResult> {
  const startedAt = new Date(sampleDay(day).getTime() + 7 * 3_600_000).toISOString();
  wf.faults.Plan = (input, next) => next({ ...(input as object), startedAt, leaseSeconds: 400 * 86_400 });
  try {
    return await wf.run({ pipeline }, name);
  } finally {
    wf.reset();
  }
}

/** The intervals of the last `count` publications of `mode`, oldest first. */
export async function lastIntervals(wf: Workflow, mode: string, count: number): Promise<{ interval_start: Date; interval_end: Date }[]> {
  const intervals = await wf.query<{ interval_start: Date; interval_end: Date }>(
    `SELECT interval_start, interval_end FROM atomic_publish.publications WHERE publish_mode = $1 ORDER BY seq`,
    [mode],
  );
  return intervals.slice(-count);
}

/** What lastIntervals gives after scheduled runs on days 36, 37 and 38 with a lookback of one day. */
export const THREE_SCHEDULED_RUNS = [
  { interval_start: sampleDay(34), interval_end: sampleDay(36) },
  { interval_start: sampleDay(35), interval_end: sampleDay(37) },
  { interval_start: sampleDay(36), interval_end: sampleDay(38) },
];
