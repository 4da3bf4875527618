import { describe, expect, it } from 'vitest';
import { STOPPED_STATUSES, stoppedError } from '../../../domain/cancel-orphans/cancel-orphans.ts';

describe('stoppedError', () => {
  it('names how the execution stopped, as the manifest records it', () => {
    expect(stoppedError('ABORTED')).toMatch(/^ExecutionAborted: the execution was aborted/);
    expect(stoppedError('TIMED_OUT')).toMatch(/^ExecutionTimedOut: the execution timed out/);
  });

  it('refuses a status the rule never passes, naming the ones it does', () => {
    expect(STOPPED_STATUSES).toEqual(['ABORTED', 'TIMED_OUT']);
    expect(() => stoppedError('FAILED')).toThrow('an execution that ended FAILED has nothing to cancel (only ABORTED and TIMED_OUT are handled)');
  });
});
