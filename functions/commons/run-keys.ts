/**
 * What every log line of an invocation carries, read once from the step's
 * input by the shared handler wrapper (handler.ts): the pipeline (or
 * group), the batch and its interval, the chunk a LoadChunk loads, and the
 * execution. Only names, ids and interval bounds: never a value of a row,
 * a parameter or a secret (docs/decisions/logs-and-traces.md, "What the logs
 * may carry").
 */

export interface RunKeys {
  pipeline?: string;
  group?: string;
  batchId?: string;
  /** The batch's interval, [batchFrom, batchTo). */
  batchFrom?: string;
  batchTo?: string;
  /** LoadChunk's chunk: its index and interval [chunkStart, chunkEnd). */
  chunkIndex?: number;
  chunkStart?: string;
  chunkEnd?: string;
  /** A window's index (PlanWindow, a child execution of LoadWindows). */
  window?: number;
  /** The execution's ARN (`$$.Execution.Id`; a window's child execution has its own). */
  executionId?: string;
  /** The execution's name: the ARN's last part. */
  executionName?: string;
}

type Json = Record<string, unknown>;

const object = (value: unknown): Json | undefined => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined);
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const integer = (value: unknown): number | undefined => (typeof value === 'number' && Number.isInteger(value) ? value : undefined);

/** An execution's name from its ARN (`arn:...:execution:<state machine>[/<map>]:<name>`). */
export function executionNameOf(arn: string): string | undefined {
  const parts = arn.split(':');
  return parts.length >= 8 && parts[5] === 'execution' ? parts[parts.length - 1] : undefined;
}

/**
 * The keys found in a step's input, whatever step it is: `batch` (every
 * step after Plan), `chunk` (LoadChunk), `window` (PlanWindow), `input`
 * (Plan and RecordFailure: the execution input), `state.plan.batch`
 * (RecordFailure after Plan), `group` (PublishGroup), `detail`
 * (CancelOrphans' status change), `executionId`. Absent or malformed
 * parts give no key; this never throws (a bad input is the step's to refuse).
 */
export function runKeysOf(event: unknown): RunKeys {
  const e = object(event) ?? {};
  const input = object(e.input);
  const batch = object(e.batch) ?? object(object(object(e.state)?.plan)?.batch);
  const chunk = object(e.chunk);
  const window = object(e.window);
  const detail = object(e.detail);
  const executionId = text(e.executionId) ?? text(detail?.executionArn);
  const keys: RunKeys = {
    pipeline: text(batch?.pipeline) ?? text(input?.pipeline) ?? text(e.pipeline),
    group: text(e.group) ?? text(input?.group),
    batchId: text(batch?.batchId),
    batchFrom: text(batch?.from),
    batchTo: text(batch?.to),
    chunkIndex: integer(chunk?.index),
    chunkStart: text(chunk?.start),
    chunkEnd: text(chunk?.end),
    window: integer(window?.index),
    executionId,
    executionName: text(detail?.name) ?? (executionId ? executionNameOf(executionId) : undefined),
  };
  return Object.fromEntries(Object.entries(keys).filter(([, value]) => value !== undefined)) as RunKeys;
}
