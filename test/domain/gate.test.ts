import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../domain/errors.ts';
import { checkMeasureColumns } from '../../domain/gate.ts';
import { definePipeline } from '../../domain/spec.ts';
import { specWith } from './fixtures.ts';

const columns = [
  { name: 'order_id', dataType: 'bigint' },
  { name: 'amount', dataType: 'numeric' },
  { name: 'quantity', dataType: 'integer' },
  { name: 'weight', dataType: 'double precision' },
  { name: 'note', dataType: 'character varying' },
];
const withMeasures = (measures: string[]) => definePipeline(specWith({ checks: { measures } }));

describe('checkMeasureColumns', () => {
  it('accepts exact numeric columns of the live table', () => {
    expect(() => checkMeasureColumns(withMeasures(['amount', 'quantity', 'order_id']), columns)).not.toThrow();
  });

  it.each([
    [['amount', 'discount'], /^pipeline orders: checks\.measures names discount, which is not a column of analytics\.orders: /],
    [['weight'], /^pipeline orders: checks\.measures names weight of analytics\.orders, which is double precision: sums of floating-point values depend on the order rows are added in/],
    [['note'], /^pipeline orders: checks\.measures names note of analytics\.orders, which is character varying; a measure must be a number \(smallint, integer, bigint, numeric\)/],
  ])('refuses %j, naming the pipeline, the column and what to change', (measures, message) => {
    expect(() => checkMeasureColumns(withMeasures(measures), columns)).toThrow(ValidationError);
    expect(() => checkMeasureColumns(withMeasures(measures), columns)).toThrow(message);
  });
});
