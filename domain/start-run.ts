/**
 * A scheduled run's start, decided without AWS: which pipeline, what the
 * execution is named, and what it is given. EventBridge Scheduler invokes
 * the StartRun function with `{"pipeline", "scheduledTime"}`; the function
 * starts the state machine under the name this returns.
 */
import { ValidationError } from './errors.ts';
import type { ExecutionInput } from './plan/plan.ts';
import { parseScheduledTime, scheduledRunName } from './run-name.ts';
import type { Pipeline } from './spec.ts';
import { echo } from './text.ts';
import { floorToGrain } from './time.ts';

export interface PlannedStart {
  readonly name: string;
  readonly input: ExecutionInput;
}

/**
 * The execution a scheduled invocation starts, from what the schedule sends
 * (lib/pipeline-schedules.ts): named after the pipeline and the time it was due,
 * `to` the last chunk boundary at or before it in the pipeline's zone. Every
 * delivery of one invocation asks for the same name and input, so Step Functions
 * starts it once. Why: docs/decisions/failure-handling.md ("Execution names")
 */
export function planScheduledStart(event: unknown, pipelines: readonly Pipeline[]): PlannedStart {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) {
    throw new ValidationError('the schedule sent no object: expected {"pipeline": ..., "scheduledTime": "<aws.scheduler.scheduled-time>"}');
  }
  const { pipeline: name, scheduledTime, ...extra } = event as Record<string, unknown>;
  if (Object.keys(extra).length > 0)
    throw new ValidationError(`the schedule sent unknown field(s): ${echo(Object.keys(extra).join(', '))} (allowed: pipeline, scheduledTime)`);
  const pipeline = pipelines.find((p) => p.name === name);
  if (!pipeline) throw new ValidationError(`unknown pipeline ${echo(name)}: the schedule names no deployed pipeline`);
  const due = parseScheduledTime(scheduledTime);
  const to = floorToGrain(due, pipeline.chunk.grain, pipeline.chunk.timezone);
  return { name: scheduledRunName(pipeline.name, due), input: { pipeline: pipeline.name, to: to.toISOString() } };
}
