/** What Cleanup may drop: only tables derived from the live table's name, in its schema. */
import { ValidationError } from '../errors.ts';
import type { Pipeline } from '../spec.ts';
import { clip } from '../text.ts';

/** What a cleanup candidate is: an old version past retention, or the staging table of a failed or abandoned batch. */
export type RetiredKind = 'old_version' | 'staging';

export interface RetiredTable {
  readonly kind: RetiredKind;
  /** The table name without its schema. */
  readonly table: string;
  readonly batchId: string;
}

/**
 * A candidate as the manifest lists it (`schema.table` or a bare name),
 * checked to be one of the live table's retired versions or staging tables
 * (`<table>__...`): anything else is refused rather than dropped.
 */
export function retiredTable(pipeline: Pipeline, candidate: { readonly kind: unknown; readonly name: unknown; readonly batchId: unknown }): RetiredTable {
  const { schema, table } = pipeline.target;
  const full = String(candidate.name);
  const bare = full.startsWith(`${schema}.`) ? full.slice(schema.length + 1) : full;
  if (!bare.startsWith(`${table}__`)) {
    throw new ValidationError(`cleanup refused to drop ${clip(full)}: not a retired version or staging table of ${schema}.${table}`);
  }
  return { kind: candidate.kind === 'old_version' ? 'old_version' : 'staging', table: bare, batchId: String(candidate.batchId) };
}
