import { describe, expect, it } from 'vitest';
import { definePipeline } from '../../../domain/define-pipeline.ts';
import { ValidationError } from '../../../domain/errors.ts';
import { checkMeasureColumns, withinTolerance } from '../../../domain/gate/tolerances.ts';
import { specWith } from '../fixtures.ts';

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
    [
      ['weight'],
      /^pipeline orders: checks\.measures names weight of analytics\.orders, which is double precision: sums of floating-point values depend on the order rows are added in/,
    ],
    [
      ['note'],
      /^pipeline orders: checks\.measures names note of analytics\.orders, which is character varying; a measure must be a number \(smallint, integer, bigint, numeric; real or double precision with a tolerance\)/,
    ],
  ])('refuses %j, naming the pipeline, the column and what to change', (measures, message) => {
    expect(() => checkMeasureColumns(withMeasures(measures), columns)).toThrow(ValidationError);
    expect(() => checkMeasureColumns(withMeasures(measures), columns)).toThrow(message);
  });
});

describe('floating-point measures and tolerances', () => {
  it('accepts a floating-point measure with a tolerance, and still refuses one without', () => {
    const tolerant = definePipeline(specWith({ checks: { measures: ['amount', { column: 'weight', tolerance: { relative: 1e-9 } }] } }));
    expect(() => checkMeasureColumns(tolerant, columns)).not.toThrow();
    expect(() => checkMeasureColumns(withMeasures(['weight']), columns)).toThrow(
      /declare it with a tolerance \(\{ column: 'weight', tolerance: \{ relative: 1e-9 \} \}\)/,
    );
  });

  it.each([
    ['100.00', '100.00', { absolute: '0' }, true],
    ['100.00', '100.40', { absolute: '0.50' }, true],
    ['100.00', '100.50', { absolute: '0.50' }, true],
    ['100.00', '100.51', { absolute: '0.50' }, false],
    ['1000000', '1000001', { relative: 1e-6 }, true],
    ['1000000', '1000002', { relative: 1e-6 }, false],
    ['1000000', '1000002', { absolute: '5', relative: 1e-9 }, true],
    ['1.5e+20', '1.5000000000000002e+20', { relative: 1e-9 }, true],
    ['1.5e+20', '1.6e+20', { relative: 1e-9 }, false],
    ['12.5', 'not a number', { absolute: '1000' }, false],
  ])('source %s, staging %s within %j: %s', (source, staging, tolerance, within) => {
    expect(withinTolerance(source, staging, tolerance)).toBe(within);
  });
});
