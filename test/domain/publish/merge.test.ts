import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import type { LiveColumn } from '../../../domain/plan/live-column.ts';
import { liveTableColumns } from '../../../domain/plan/plan.ts';
import { pipelineWith } from '../fixtures.ts';

// Plan checks the live table through liveTableColumns before anything is
// written; these are the checks domain/publish/merge.ts adds to it.
const column = (name: string, dataType = 'integer'): LiveColumn => ({ name, dataType });
const live = [
  column('order_id'),
  column('ordered_at', 'timestamp without time zone'),
  column('amount', 'numeric'),
  column('updated_at', 'timestamp without time zone'),
  column('deleted', 'boolean'),
  column('note', 'character varying'),
];
const merge = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'updated_at', softDeleteColumn: 'deleted' }, modifiedColumn: 'updated_at' });

describe('the live columns a merge and a modification time need', () => {
  it('accepts a live table holding them in the right types', () => {
    expect(liveTableColumns(merge, live)).toEqual(live.map((c) => c.name));
  });

  it.each(['smallint', 'integer', 'bigint', 'numeric', 'double precision', 'date', 'timestamp with time zone'])(
    'accepts a version column of type %s',
    (dataType) => {
      const versioned = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'version' } });
      expect(() => liveTableColumns(versioned, [...live, column('version', dataType)])).not.toThrow();
    },
  );

  it.each([
    ['order_id', 'integer'],
    ['note', 'character varying'],
  ])('rejects a modifiedColumn %s of type %s: it must be a UTC timestamp', (name, type) => {
    const pipeline = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'updated_at' }, modifiedColumn: name });
    expect(() => liveTableColumns(pipeline, live)).toThrow(
      new ValidationError(
        `pipeline orders: modifiedColumn ${name} of analytics.orders is ${type}; it must be a timestamp without time zone holding UTC (the source modification time chunks are placed by): name another column or change its type`,
      ),
    );
  });

  it('rejects a modifiedColumn the live table does not have, saying to add it', () => {
    const pipeline = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'updated_at' }, modifiedColumn: 'changed_at' });
    expect(() => liveTableColumns(pipeline, live)).toThrow(
      new ValidationError(
        'pipeline orders: modifiedColumn changed_at is not a column of analytics.orders: add it to the live table (and the source query) or name another column',
      ),
    );
  });

  it('rejects a version column that does not order versions, and a soft-delete column that is not a boolean', () => {
    const text = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'note' } });
    expect(() => liveTableColumns(text, live)).toThrow(
      /^pipeline orders: merge\.versionColumn note of analytics\.orders is character varying; it must be a number, date or timestamp/,
    );
    const flag = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'updated_at', softDeleteColumn: 'note' } });
    expect(() => liveTableColumns(flag, live)).toThrow(
      /^pipeline orders: merge\.softDeleteColumn note of analytics\.orders is character varying; it must be a boolean/,
    );
    const missing = pipelineWith({ publishMode: 'merge', merge: { versionColumn: 'version' } });
    expect(() => liveTableColumns(missing, live)).toThrow(/^pipeline orders: merge\.versionColumn version is not a column of analytics\.orders/);
  });
});
