/**
 * Plan's side of the pipeline lease (one execution per pipeline at a time). A
 * lease names its execution; a refused taker asks Step Functions whether it
 * still runs and takes over the lease of one that ended, clearing what it left
 * (functions/commons/ended-execution.ts). A running holder of the same batch
 * ends the taker at once; of another, makes it wait, then page.
 * Why: docs/decisions/leases-of-ended-executions.md
 */
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { endedError } from '../../domain/cancel-orphans/cancel-orphans.ts';
import { batchOfExecution } from '../../domain/cancel-orphans/sql/cancel-orphans.ts';
import { optionalEnv } from '../../domain/env.ts';
import { PipelineBusyError } from '../../domain/errors.ts';
import { acquireLease, leaseHolder } from '../../domain/lease/sql/lease.ts';
import { parseWarehouseTime } from '../../domain/time.ts';
import { clearEndedExecution } from '../commons/ended-execution.ts';
import { logger } from '../commons/powertools.ts';
import { stepFunctions } from '../commons/step-functions.ts';
import type { Warehouse } from '../commons/warehouse.ts';
import { DEFAULT_LEASE_WAIT_SECONDS, PlanEnv } from './env.ts';

/** The lease of an execution started without `leaseSeconds`: the state machine's default timeout. */
export const DEFAULT_LEASE_SECONDS = 12 * 3600;

/** What Plan needs of its event to take a lease. */
export interface LeaseEvent {
  /** `$$.Execution.StartTime`. */
  readonly startedAt?: string;
  /** `$$.Execution.Id`: the execution ARN the lease names. */
  readonly executionId?: string;
  /** The state machine's timeout: the lease lasts until Step Functions itself would end the execution. */
  readonly leaseSeconds?: number;
}

/** Another execution, still running, holds the lease: this one wrote nothing. */
export interface PipelineBusy {
  readonly pipeline: string;
  readonly heldBy: string;
  /** What Step Functions says of the holder (RUNNING; UNKNOWN when it could not be asked). */
  readonly holderStatus: string;
  /** When the holder took the lease (UTC). */
  readonly since: string;
  readonly expiresAt: string;
  /** The batch the holder runs, when it has recorded one. */
  readonly holderBatch?: string;
  /** The holder runs this very batch: it publishes it. */
  readonly sameBatch: boolean;
  /**
   * true: this run waits (LeaseHeld, LeaseWait, then Plan again). false:
   * it ends here (PipelineBusy): the holder runs the same batch, or this
   * run is one that does not wait (a rollback: the version it would put
   * back is chosen when it plans, so it is started again by its operator).
   */
  readonly wait: boolean;
  readonly message: string;
}

/** The execution's time-out, from the state machine (`leaseSeconds`) or its default. */
export function timeoutSecondsOf(event: LeaseEvent): number {
  return Number.isFinite(event.leaseSeconds) && Number(event.leaseSeconds) > 0 ? Number(event.leaseSeconds) : DEFAULT_LEASE_SECONDS;
}

/** LEASE_WAIT_SECONDS, or its default. */
export function leaseWaitSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const raw = optionalEnv(PlanEnv.LEASE_WAIT_SECONDS, env);
  const seconds = raw === undefined ? DEFAULT_LEASE_WAIT_SECONDS : Number(raw);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : DEFAULT_LEASE_WAIT_SECONDS;
}

/** Takes of a lease that was released between the take and the read, before the run waits as for a holder. */
const MAX_TAKES = 3;

/**
 * Takes the pipeline's lease for the execution, lasting until the state
 * machine's timeout would end it (so it never needs renewing). An expired
 * lease, or one whose execution has ended, is taken over. Returns who
 * holds it when a running execution does; throws PipelineBusyError when
 * this run has waited LEASE_WAIT_SECONDS for a holder of another batch.
 * An execution without an id (a direct invocation) takes none.
 */
export async function takeLease(
  warehouse: Warehouse,
  pipeline: string,
  event: LeaseEvent,
  name: (step: string) => string,
  batchId?: string,
  options: { readonly wait?: boolean } = {},
): Promise<PipelineBusy | undefined> {
  const executionId = event.executionId ?? '';
  if (!executionId) return undefined;
  const started = event.startedAt && !Number.isNaN(Date.parse(event.startedAt)) ? new Date(event.startedAt) : new Date();
  const acquire = async () => {
    // A holder that releases the lease between the take and the read leaves no row: the lease is free, take it again.
    for (let attempt = 1; ; attempt++) {
      const now = new Date();
      await warehouse.batch(
        acquireLease({ pipeline, executionId, now, expiresAt: new Date(started.getTime() + timeoutSecondsOf(event) * 1000) }),
        name('lease'),
      );
      const [holder] = await warehouse.query(leaseHolder(pipeline), name('lease-holder'));
      if (holder !== undefined || attempt >= MAX_TAKES) return holder;
    }
  };
  let holder = await acquire();
  if (String(holder?.execution_id ?? '') === executionId) return undefined;
  let holderStatus = await executionStatus(String(holder?.execution_id));
  if (!['RUNNING', 'PENDING_REDRIVE', 'UNKNOWN'].includes(holderStatus.status)) {
    const ended = String(holder?.execution_id);
    // Conditional on the ended execution still owning each thing: a second taker changes nothing.
    const cleared = await clearEndedExecution(warehouse, ended, endedError(holderStatus.status, executionId), name('take-over'));
    logger.warn('pipeline lease of an ended execution taken over', { pipeline, endedExecution: ended, status: holderStatus.status, batches: cleared.batches });
    holder = await acquire();
    if (String(holder?.execution_id ?? '') === executionId) return undefined;
    holderStatus = await executionStatus(String(holder?.execution_id));
  }
  const heldBy = String(holder?.execution_id ?? '');
  if (heldBy === '') {
    // Released again and again between take and read: taken by others in turn; wait, as for a holder.
    return {
      pipeline,
      heldBy: '(none)',
      holderStatus: 'UNKNOWN',
      since: '',
      expiresAt: '',
      sameBatch: false,
      wait: options.wait !== false,
      message: `the lease of pipeline ${pipeline} changed hands while this run took it; this run wrote nothing${options.wait === false ? ' and ends here' : ' and tries again'}.`,
    };
  }
  const since = utc(holder?.acquired_at);
  const expiresAt = utc(holder?.expires_at);
  const holderBatches = (await warehouse.query(batchOfExecution(heldBy), name('lease-holder-batch'))).map((row) => String(row.batch_id));
  const sameBatch = batchId !== undefined && holderBatches.includes(batchId);
  const who =
    `pipeline ${pipeline} is being run by execution ${heldBy} (${holderStatus.status === 'UNKNOWN' ? `Step Functions could not be asked of it: ${holderStatus.reason}` : holderStatus.status}), ` +
    `which holds its lease since ${since} UTC (until ${expiresAt} UTC)${holderBatches.length > 0 ? `, running batch ${holderBatches.join(', ')}` : ''}`;
  const waited = (Date.now() - started.getTime()) / 1000;
  if (sameBatch) {
    return {
      pipeline,
      heldBy,
      holderStatus: holderStatus.status,
      since,
      expiresAt,
      holderBatch: batchId,
      sameBatch,
      wait: false,
      message: `${who}: the same batch as this run, which ends here having written nothing; that execution publishes it.`,
    };
  }
  const holding = {
    pipeline,
    heldBy,
    holderStatus: holderStatus.status,
    since,
    expiresAt,
    ...(holderBatches[0] === undefined ? {} : { holderBatch: holderBatches[0] }),
    sameBatch,
  };
  if (options.wait === false) {
    return { ...holding, wait: false, message: `${who}; this run wrote nothing and ends here. Start it again once that execution has ended.` };
  }
  const limit = leaseWaitSeconds();
  if (waited >= limit) {
    throw new PipelineBusyError(
      `${who}; this run, of another batch${batchId ? ` (${batchId})` : ''}, waited ${Math.round(waited)} s for the lease (LEASE_WAIT_SECONDS ${limit}) and wrote nothing. ` +
        'Next: if that execution is stuck, stop it (aws stepfunctions stop-execution --execution-arn <its ARN>): its lease is released and the next run takes over; then start this run again.',
    );
  }
  return {
    ...holding,
    wait: true,
    message: `${who}; this run, of another batch, waits for the lease (Plan again after LeaseWait; ${Math.round(waited)} of ${limit} s spent) and has written nothing.`,
  };
}

function utc(value: unknown): string {
  if (value === undefined || value === null) return '';
  const parsed = value instanceof Date ? value : parseWarehouseTime(String(value));
  return Number.isNaN(parsed.getTime())
    ? String(value)
    : parsed
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, '');
}

/**
 * What Step Functions says of an execution: its status (RUNNING,
 * SUCCEEDED, FAILED, TIMED_OUT, ABORTED, PENDING_REDRIVE), GONE when it
 * knows no such execution (ExecutionDoesNotExist: never started, or past
 * its retention), or UNKNOWN when it could not be asked (no permission,
 * unreachable, another state machine's ARN): the caller then assumes it runs.
 */
async function executionStatus(executionArn: string, env: NodeJS.ProcessEnv = process.env): Promise<{ status: string; reason?: string }> {
  try {
    const described = await stepFunctions(env).send(new DescribeExecutionCommand({ executionArn }));
    return { status: String(described.status) };
  } catch (error) {
    const e = error as Error;
    if (e?.name === 'ExecutionDoesNotExist') return { status: 'GONE' };
    return { status: 'UNKNOWN', reason: `${e?.name ?? 'Error'}: ${e?.message ?? String(error)}` };
  }
}
