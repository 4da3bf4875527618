/**
 * How a LoadChunk attempt learns of a load it must wait for instead of
 * submitting: the statement an earlier attempt left running (its
 * LoadStillRunningError, caught into `stillRunning` by the workflow), or one an
 * ended execution left running (Plan lists them once per batch). Pure.
 * Why: docs/decisions/loading.md ("Two requests per chunk")
 */
import type { ChunkToLoad } from './sql/load-chunk.ts';

/** LoadStillRunningError's message: the statement id travels in it to the next attempt. */
export function stillRunningMessage(chunk: number, statementId: string, seconds: number): string {
  return `chunk ${chunk}'s load ${statementId} still runs after ${seconds} s; the workflow waits for it`;
}

const STILL_RUNNING = /'s load (\S+) still runs after /;

/**
 * The statement a caught LoadStillRunningError names: the Catch's
 * `{Error, Cause}`, Cause being the Lambda's `{"errorType", "errorMessage", ...}`
 * as JSON. Undefined for anything else.
 */
export function stillRunningStatement(caught: unknown): string | undefined {
  const { Error: error, Cause: cause } = (caught ?? {}) as { Error?: unknown; Cause?: unknown };
  if (error !== 'LoadStillRunningError' || typeof cause !== 'string') return undefined;
  let message: unknown = cause;
  try {
    message = (JSON.parse(cause) as { errorMessage?: unknown }).errorMessage;
  } catch {
    // A Cause that is not JSON is the message itself.
  }
  return typeof message === 'string' ? STILL_RUNNING.exec(message)?.[1] : undefined;
}

/** A running load as ListStatements shows it. */
export interface RunningLoad {
  readonly id: string;
  readonly name: string;
}

/**
 * The chunks to load, each with the id of its generation's load still
 * running, if any (`running`): matched by the statement name LoadChunk gives
 * every load of a chunk's generation.
 */
export function withRunningLoads(chunks: readonly ChunkToLoad[], running: readonly RunningLoad[], nameOf: (chunk: ChunkToLoad) => string): ChunkToLoad[] {
  if (running.length === 0) return [...chunks];
  const byName = new Map(running.map((r) => [r.name, r.id]));
  return chunks.map((c) => {
    const id = byName.get(nameOf(c));
    return id === undefined ? c : { ...c, running: id };
  });
}
