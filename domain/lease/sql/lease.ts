/**
 * The SQL of a pipeline's lease (`pipeline_leases`, one row per pipeline):
 * taken by Plan, released by the step that ends the execution (Cleanup,
 * Publish of a superseded batch, RecordFailure, CancelOrphans).
 */
import { sqlLiteral } from '../../identifiers.ts';
import { LEASES_LOCK } from '../../manifest/sql/manifest.ts';
import { MANIFEST as M, type Statement } from '../../sql/statement.ts';

export interface LeaseRequest {
  readonly pipeline: string;
  readonly executionId: string;
  readonly now: Date;
  readonly expiresAt: Date;
}

/**
 * One transaction: under LEASES_LOCK, an expired lease of the pipeline is
 * removed (taken over), then the lease inserted for this execution unless
 * one is held. Running it again in the holding execution (a retried Plan)
 * changes nothing. Whose lease it is afterwards is read by `leaseHolder`.
 */
export function acquireLease(request: LeaseRequest): string[] {
  const pipeline = sqlLiteral(request.pipeline);
  return [
    LEASES_LOCK,
    `DELETE FROM ${M}.pipeline_leases WHERE pipeline = ${pipeline} AND expires_at <= ${sqlLiteral(request.now)}`,
    `INSERT INTO ${M}.pipeline_leases (pipeline, execution_id, acquired_at, expires_at)
     SELECT ${pipeline}, ${sqlLiteral(request.executionId)}, ${sqlLiteral(request.now)}, ${sqlLiteral(request.expiresAt)}
      WHERE NOT EXISTS (SELECT 1 FROM ${M}.pipeline_leases WHERE pipeline = ${pipeline})`,
  ];
}

/** The pipeline's lease as it stands: no row when none is held. */
export function leaseHolder(pipeline: string): Statement {
  return {
    sql: `SELECT execution_id, acquired_at, expires_at FROM ${M}.pipeline_leases WHERE pipeline = :pipeline`,
    parameters: { pipeline },
  };
}

/** Releases whatever lease the execution holds (none: no row changes). */
export function releaseLease(executionId: string): Statement {
  return {
    sql: `DELETE FROM ${M}.pipeline_leases WHERE execution_id = :execution_id`,
    parameters: { execution_id: executionId },
    lock: LEASES_LOCK,
  };
}
