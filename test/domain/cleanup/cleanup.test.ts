import { describe, expect, it } from 'vitest';
import { retiredTable } from '../../../domain/cleanup/cleanup.ts';
import { ValidationError } from '../../../domain/errors.ts';
import { pipelineWith } from '../fixtures.ts';

const orders = pipelineWith();

describe('retiredTable', () => {
  it('takes a schema-qualified old version of the live table apart', () => {
    expect(retiredTable(orders, { kind: 'old_version', name: 'analytics.orders__prev_0123456789abcdef', batchId: 'b1' })).toEqual({
      kind: 'old_version',
      table: 'orders__prev_0123456789abcdef',
      batchId: 'b1',
    });
  });

  it('takes a bare staging table name as it is', () => {
    expect(retiredTable(orders, { kind: 'staging', name: 'orders__stg_0123456789abcdef', batchId: 'b2' })).toMatchObject({
      kind: 'staging',
      table: 'orders__stg_0123456789abcdef',
    });
  });

  it.each([
    ['the live table itself', 'analytics.orders'],
    ['another table of the schema', 'analytics.customers__prev_1'],
    ['a table of another schema', 'other.orders__prev_1'],
  ])('refuses to drop %s', (_what, name) => {
    expect(() => retiredTable(orders, { kind: 'old_version', name, batchId: 'b1' })).toThrow(
      new ValidationError(`cleanup refused to drop ${name}: not a retired version or staging table of analytics.orders`),
    );
  });
});
