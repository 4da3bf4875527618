import { describe, expect, it } from 'vitest';
import {
  AtomicPublishError,
  CheckFailedError,
  PublishConflictError,
  SpecChangedError,
  TransientWarehouseError,
  ValidationError,
  WarehouseError,
} from '../../domain/errors.ts';

describe('errors', () => {
  it.each([
    [ValidationError, 'ValidationError'],
    [TransientWarehouseError, 'TransientWarehouseError'],
    [WarehouseError, 'WarehouseError'],
    [CheckFailedError, 'CheckFailedError'],
    [PublishConflictError, 'PublishConflictError'],
    [SpecChangedError, 'SpecChangedError'],
  ])('%o carries the fixed name %s that a Step Functions Catch matches', (ErrorClass, name) => {
    const error = new ErrorClass('boom');

    expect(error.name).toBe(name);
    expect(error).toBeInstanceOf(AtomicPublishError);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toBe(`${name}: boom`);
  });

  it('keeps the cause it was given', () => {
    const cause = new Error('socket hang up');

    const error = new TransientWarehouseError('warehouse unreachable', { cause });

    expect(error.cause).toBe(cause);
  });
});
