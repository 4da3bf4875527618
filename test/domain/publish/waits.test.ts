import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { DEFAULT_PUBLISH_WAITS, publishWaitsEnvironment, publishWaitsFromEnv } from '../../../domain/publish/waits.ts';

describe("Publish's waits", () => {
  it('default to 5 s for the locks and 60 s for older snapshots when nothing is set', () => {
    expect(publishWaitsFromEnv({})).toEqual({ lockWaitMs: 5_000, snapshotWaitMs: 60_000 });
    expect(publishWaitsEnvironment()).toEqual({});
    expect(publishWaitsFromEnv(publishWaitsEnvironment())).toEqual(DEFAULT_PUBLISH_WAITS);
  });

  it('round-trip through the environment the stack writes', () => {
    const env = publishWaitsEnvironment({ lockWaitMs: 250 });
    expect(env).toEqual({ PUBLISH_LOCK_WAIT_MS: '250' });
    expect(publishWaitsFromEnv(env)).toEqual({ lockWaitMs: 250, snapshotWaitMs: 60_000 });
  });

  it.each(['0', '-5', '1.5', 'soon', '600001'])('refuse %s ms, naming the variable', (text) => {
    expect(() => publishWaitsFromEnv({ PUBLISH_SNAPSHOT_WAIT_MS: text })).toThrow(ValidationError);
    expect(() => publishWaitsFromEnv({ PUBLISH_SNAPSHOT_WAIT_MS: text })).toThrow(/PUBLISH_SNAPSHOT_WAIT_MS must be a whole number of milliseconds/);
  });

  it('are checked when the stack is built, too', () => {
    expect(() => publishWaitsEnvironment({ lockWaitMs: 0 })).toThrow(/PUBLISH_LOCK_WAIT_MS/);
  });
});
