// Imported first by a test file (before workflow.ts): the sample pipeline
// with a source that also produces EXTRA_COLUMNS (30 columns in all), for
// a live table as wide as production ones (test/support/real-catalog.ts),
// in that file's module graph. Vitest gives each test file its own
// modules, so other files keep the sample's eight columns.

import { definePipeline } from '../../domain/define-pipeline.ts';
import type { PipelineSpec } from '../../domain/spec.ts';
import { pipelines } from '../../pipelines/index.ts';
import { salesOrderLines } from '../../pipelines/sales-order-lines.ts';

/** The 22 columns the wide source adds to the sample's 8. */
export const EXTRA_COLUMNS = Array.from({ length: 22 }, (_, i) => `extra_${String(i + 1).padStart(2, '0')}`);

/** The sample pipeline's spec with a source that also produces EXTRA_COLUMNS. */
export function widened(spec: PipelineSpec): PipelineSpec {
  const extras = EXTRA_COLUMNS.map((c, i) => `CAST(quantity + ${i + 1} AS integer) AS ${c}`).join(', ');
  const sourceSql = spec.sourceSql.replace('AS unit_price', `AS unit_price, ${extras}`);
  if (sourceSql === spec.sourceSql) throw new Error('the sample source query no longer ends its select list with unit_price');
  return { ...spec, sourceSql };
}

/** Replaces the sample pipeline of this module graph with `spec`. */
export function replaceSample(spec: PipelineSpec): void {
  pipelines[pipelines.findIndex((p) => p.name === salesOrderLines.name)] = definePipeline(spec);
}

replaceSample(widened(salesOrderLines));
