/** What Plan checks of the reconciliation gate's declared checks against the live table, before anything is written; and the measures' tolerances. */

import { ValidationError } from '../errors.ts';
import type { LiveColumn } from '../plan/live-column.ts';
import type { Pipeline } from '../spec.ts';
import type { MeasureTolerance } from './config.ts';
import { decimalDifference } from './decimal.ts';

/** Types a measure may have: exact numbers, whose sums do not depend on the order rows are added in. */
export const MEASURE_TYPES = ['smallint', 'integer', 'bigint', 'numeric'] as const;
const FLOATING = ['real', 'double precision'];

/** `absolute 0.01, relative 1e-9`: a tolerance as the check's text names it. */
export function toleranceText(tolerance: MeasureTolerance): string {
  return [tolerance.absolute === undefined ? '' : `absolute ${tolerance.absolute}`, tolerance.relative === undefined ? '' : `relative ${tolerance.relative}`]
    .filter(Boolean)
    .join(', ');
}

/**
 * True when the sums (decimal texts as the warehouse returns them, or
 * floating-point texts such as `1.5e+20`) differ by no more than the
 * tolerance allows; exactly equal always passes. The difference is exact
 * where both are decimals, then compared as a number: a tolerance is not
 * exact arithmetic.
 */
export function withinTolerance(source: string, staging: string, tolerance: MeasureTolerance): boolean {
  const exact = decimalDifference(source, staging);
  if (exact !== undefined && /^-?[0.]*$/.test(exact)) return true;
  const difference = Math.abs(exact === undefined ? Number(source) - Number(staging) : Number(exact));
  if (Number.isNaN(difference)) return false;
  return (
    (tolerance.absolute !== undefined && difference <= Number(tolerance.absolute)) ||
    (tolerance.relative !== undefined && difference <= tolerance.relative * Math.abs(Number(source)))
  );
}

/** Every `checks.measures` column is a column of the live table of a numeric type; floating-point only with a tolerance. */
export function checkMeasureColumns(pipeline: Pipeline, columns: readonly LiveColumn[]): void {
  const { schema, table } = pipeline.target;
  const live = `${schema}.${table}`;
  for (const column of pipeline.checks.measures) {
    const type = columns.find((c) => c.name === column)?.dataType;
    if (type === undefined) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: checks.measures names ${column}, which is not a column of ${live}: name a numeric column of the live table or remove it`,
      );
    }
    if (FLOATING.includes(type)) {
      if (pipeline.checks.measureTolerances?.[column] !== undefined) continue;
      throw new ValidationError(
        `pipeline ${pipeline.name}: checks.measures names ${column} of ${live}, which is ${type}: sums of floating-point values depend on the order rows are added in, so source and staging could differ without a difference in the data; declare it with a tolerance ({ column: '${column}', tolerance: { relative: 1e-9 } }), name an exact numeric column (${MEASURE_TYPES.join(', ')}) or remove it (the content checksum still covers it)`,
      );
    }
    if (!(MEASURE_TYPES as readonly string[]).includes(type)) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: checks.measures names ${column} of ${live}, which is ${type}; a measure must be a number (${MEASURE_TYPES.join(', ')}; ${FLOATING.join(' or ')} with a tolerance): name another column or remove it`,
      );
    }
  }
}
