/**
 * Pipelines from their specs: validated by the spec's schema, defaults
 * applied (domain/spec.ts), and the source query checked inside the
 * statements Plan and LoadChunk build around it (domain/plan/source-sql.ts).
 * The declared pipelines (pipelines/index.ts), the local stand-ins, the
 * bench and the tests define theirs here, so all refuse the same specs.
 */
import { ValidationError } from './errors.ts';
import { checkSourceWrappings } from './plan/source-sql.ts';
import { type Pipeline, type PipelineSpec, validateSpec } from './spec.ts';

/** Validates a spec and applies its defaults; a rejection names the pipeline and every wrong field. */
export function definePipeline(spec: PipelineSpec): Pipeline {
  const pipeline = validateSpec(spec);
  checkSourceWrappings(pipeline);
  return pipeline;
}

/** Validates a list of specs and rejects duplicate names and shared target tables. */
export function definePipelines(specs: readonly PipelineSpec[]): Pipeline[] {
  const pipelines = specs.map(definePipeline);
  const seen = new Set<string>();
  const targets = new Map<string, string>();
  for (const pipeline of pipelines) {
    if (seen.has(pipeline.name)) throw new ValidationError(`pipeline ${pipeline.name}: name is used twice`);
    seen.add(pipeline.name);
    // The publish guard serializes publishers per pipeline: two pipelines on one table would race.
    const target = `${pipeline.target.schema}.${pipeline.target.table}`;
    const other = targets.get(target);
    if (other) throw new ValidationError(`pipeline ${pipeline.name}: target ${target} is already published by pipeline ${other}`);
    targets.set(target, pipeline.name);
  }
  return pipelines;
}
