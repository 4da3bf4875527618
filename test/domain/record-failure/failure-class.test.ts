import { describe, expect, it } from 'vitest';
import { failureClass } from '../../../domain/record-failure/failure-class.ts';

describe("the class of a failed run, for the pipeline's alarms", () => {
  it.each([
    ['the gate blocked the batch', { errorName: 'CheckFailedError', reconciled: false, published: false }, 'ReconcileFailed'],
    [
      'Publish refused an out-of-band change (drift, not also a publish failure)',
      { errorName: 'OutOfBandChangeError', reconciled: true, published: false },
      'OutOfBandChange',
    ],
    ['Publish failed after the gate passed', { errorName: 'WarehouseError', reconciled: true, published: false }, 'PublishFailed'],
    ['a publish lost to a newer batch', { errorName: 'PublishConflictError', reconciled: false, published: false }, 'PublishFailed'],
    ['a load failed before the gate', { errorName: 'WarehouseError', reconciled: false, published: false }, undefined],
    ['bad input', { errorName: 'ValidationError', reconciled: false, published: false }, undefined],
    ['a step after the publish committed', { errorName: 'TransientWarehouseError', reconciled: true, published: true }, undefined],
  ])('%s', (_what, facts, expected) => {
    expect(failureClass(facts)).toBe(expected);
  });
});
