/** What Plan checks of the reconciliation gate's declared checks against the live table, before anything is written. */
import { ValidationError } from './errors.ts';
import type { LiveColumn } from './plan.ts';
import type { Pipeline } from './spec.ts';

/** Types a measure may have: exact numbers, whose sums do not depend on the order rows are added in. */
export const MEASURE_TYPES = ['smallint', 'integer', 'bigint', 'numeric'] as const;
const FLOATING = ['real', 'double precision'];

/** Every `checks.measures` column is a column of the live table of an exact numeric type. */
export function checkMeasureColumns(pipeline: Pipeline, columns: readonly LiveColumn[]): void {
  const { schema, table } = pipeline.target;
  const live = `${schema}.${table}`;
  for (const column of pipeline.checks.measures) {
    const type = columns.find((c) => c.name === column)?.dataType;
    if (type === undefined) {
      throw new ValidationError(`pipeline ${pipeline.name}: checks.measures names ${column}, which is not a column of ${live}: name a numeric column of the live table or remove it`);
    }
    if (FLOATING.includes(type)) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: checks.measures names ${column} of ${live}, which is ${type}: sums of floating-point values depend on the order rows are added in, so source and staging could differ without a difference in the data; name an exact numeric column (${MEASURE_TYPES.join(', ')}) or remove it (the content checksum still covers it)`,
      );
    }
    if (!(MEASURE_TYPES as readonly string[]).includes(type)) {
      throw new ValidationError(`pipeline ${pipeline.name}: checks.measures names ${column} of ${live}, which is ${type}; a measure must be a number (${MEASURE_TYPES.join(', ')}): name another column or remove it`);
    }
  }
}
