import type { BatchRef } from '../../domain/batch.ts';
import { SpecChangedError, ValidationError } from '../../domain/errors.ts';
import { migrationPipeline, migrationSpecHash } from '../../domain/migration/migration.ts';
import type { Pipeline } from '../../domain/spec.ts';
import { echo } from '../../domain/text.ts';
import { pipelines } from '../../pipelines/index.ts';

/**
 * The spec a batch was planned with. Each step after Plan checks that the
 * deployed spec still hashes the same, so a deploy in the middle of a run
 * cannot mix two specs in one batch.
 */
export function frozenPipeline(batch: BatchRef, registry: readonly Pipeline[] = pipelines): Pipeline {
  if (typeof batch !== 'object' || batch === null || typeof batch.pipeline !== 'string') {
    throw new ValidationError('step input has no batch: expected {"batch": {"pipeline": ..., "batchId": ...}}');
  }
  const pipeline = registry.find((p) => p.name === batch.pipeline);
  if (!pipeline) throw new ValidationError(`unknown pipeline ${echo(batch.pipeline)}`);
  // A migration batch: the pipeline as its Plan ran it, with the live columns it read (BatchRef.live).
  if (pipeline.migration && batch.specHash === migrationSpecHash(pipeline)) {
    return migrationPipeline(
      pipeline,
      (batch.live?.columns ?? []).map((c) => c.split(' ')[0]!),
    );
  }
  if (pipeline.specHash !== batch.specHash) {
    throw new SpecChangedError(
      `pipeline ${pipeline.name} changed since batch ${batch.batchId} was planned (spec ${batch.specHash.slice(0, 12)} then, ${pipeline.specHash.slice(0, 12)} now): start a new run`,
    );
  }
  return pipeline;
}
