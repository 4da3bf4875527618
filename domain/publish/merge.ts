/**
 * What publishMode `merge` and `modifiedColumn` need of the live table,
 * checked by Plan before anything is written (domain/plan/plan.ts liveTableColumns).
 */
import { ValidationError } from '../errors.ts';
import type { LiveColumn } from '../plan/live-column.ts';
import type { Pipeline } from '../spec.ts';

/** Types a version column may have: ordered by `>` the way versions grow (information_schema.columns.data_type). */
const VERSION_TYPES = [
  'smallint',
  'integer',
  'bigint',
  'numeric',
  'real',
  'double precision',
  'date',
  'timestamp without time zone',
  'timestamp with time zone',
];

/**
 * The live table holds `modifiedColumn` as a `timestamp without time zone`
 * (chunk boundaries are UTC instants, as for timeColumn), the merge's
 * version column in a type ordered as versions grow, and its soft-delete
 * column as a boolean. Throws a ValidationError naming the field and what
 * to change.
 */
export function checkMergeColumns(pipeline: Pipeline, columns: readonly LiveColumn[]): void {
  const { schema, table } = pipeline.target;
  const live = `${schema}.${table}`;
  const typeOf = (name: string) => columns.find((c) => c.name === name)?.dataType;
  const requireColumn = (field: string, column: string, accepted: readonly string[], wanted: string) => {
    const type = typeOf(column);
    if (type === undefined) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: ${field} ${column} is not a column of ${live}: add it to the live table (and the source query) or name another column`,
      );
    }
    if (!accepted.includes(type)) {
      throw new ValidationError(
        `pipeline ${pipeline.name}: ${field} ${column} of ${live} is ${type}; it must be ${wanted}: name another column or change its type`,
      );
    }
  };
  if (pipeline.modifiedColumn !== undefined) {
    requireColumn(
      'modifiedColumn',
      pipeline.modifiedColumn,
      ['timestamp without time zone'],
      'a timestamp without time zone holding UTC (the source modification time chunks are placed by)',
    );
  }
  if (pipeline.merge !== undefined) {
    requireColumn(
      'merge.versionColumn',
      pipeline.merge.versionColumn,
      VERSION_TYPES,
      'a number, date or timestamp whose value grows with each new version of a row',
    );
    if (pipeline.merge.softDeleteColumn !== undefined)
      requireColumn('merge.softDeleteColumn', pipeline.merge.softDeleteColumn, ['boolean'], 'a boolean (true: the row is deleted)');
  }
}
