// RecordFailure's domain: reading the Catch's error and the alert an
// on-call engineer gets.
import { describe, expect, it } from 'vitest';
import { SNS_SUBJECT_MAX_CHARACTERS } from '../../../domain/aws-limits.ts';
import type { BatchRef } from '../../../domain/batch.ts';
import {
  describeError,
  type FailedState,
  failureFacts,
  failureReport,
  MAX_ALERT_MESSAGE_BYTES,
  type RecordFailureEvent,
} from '../../../domain/record-failure/record-failure.ts';

const batch: BatchRef = {
  pipeline: 'orders',
  batchId: 'b-0001',
  specHash: 'abc123',
  liveTable: 'analytics.orders',
  from: '2026-01-01T00:00:00.000Z',
  to: '2026-01-02T00:00:00.000Z',
  stagingTable: 'orders__stage_b_0001',
  columns: ['event_time', 'customer_id', 'amount'],
  basePublication: 4,
};

// Plan's and Publish's results as the state carries them.
const plan = {
  alreadyPublished: false,
  maxConcurrency: 4,
  chunks: [{ index: 0, start: batch.from, end: batch.to }],
  chunkCount: 1,
  batch,
};

const publish = {
  publication: 5,
  publishedAt: '2026-01-02T00:10:00.000Z',
  liveTable: 'analytics.orders',
  oldVersionTable: 'orders__old_4',
  rowsPublished: 1234,
  alreadyPublished: false,
};

const lambdaCause = (errorType: string, errorMessage: string) =>
  JSON.stringify({ errorType, errorMessage, trace: [`${errorType}: ${errorMessage}`, '    at handler (index.js:1:1)'] });

/** An event as the state machine builds it: the execution input beside the state (it never rides in the state). */
const eventWith = ({ input, ...state }: FailedState & { input?: unknown }): RecordFailureEvent => ({
  state,
  ...(input === undefined ? {} : { input }),
  executionId: 'arn:aws:states:eu-central-1:111122223333:execution:atomic-publish:run-1',
  executionStartedAt: '2026-01-02T00:00:05.000Z',
});

describe('describeError', () => {
  it('takes the message from a Lambda-style JSON Cause and the name from Error', () => {
    expect(describeError({ Error: 'WarehouseError', Cause: lambdaCause('WarehouseError', 'load chunk 0 failed: ERROR: division by zero') })).toEqual({
      name: 'WarehouseError',
      message: 'load chunk 0 failed: ERROR: division by zero',
    });
  });

  it('keeps a plain-text Cause as the message', () => {
    expect(describeError({ Error: 'States.Timeout', Cause: 'the task timed out after 900 seconds' })).toEqual({
      name: 'States.Timeout',
      message: 'the task timed out after 900 seconds',
    });
  });

  it('keeps a JSON Cause without errorMessage as text', () => {
    const cause = JSON.stringify({ reason: 'something else' });

    expect(describeError({ Error: 'States.Runtime', Cause: cause })).toEqual({ name: 'States.Runtime', message: cause });
  });

  it.each([undefined, {}, { Error: 'OnlyAName' }])('falls back to the name when there is no Cause (%j)', (error) => {
    const described = describeError(error);

    expect(described.message).toBe(described.name);
    expect(described.name).toBe(error?.Error ?? 'UnknownError');
  });
});

describe('failureReport', () => {
  it('subject is printable ASCII of less than 100 characters naming the pipeline and the error', () => {
    const report = failureReport(eventWith({ plan, error: { Error: 'CheckFailedError', Cause: lambdaCause('CheckFailedError', 'counts differ') } }), {
      recorded: true,
    });

    expect(report.subject).toBe('atomic-publish: orders failed (CheckFailedError)');
    expect(report.subject).toMatch(/^[\x20-\x7e]{1,99}$/);
    expect(report).toMatchObject({ pipeline: 'orders', batchId: 'b-0001', errorName: 'CheckFailedError', recorded: true });
  });

  it('subject stays ASCII and under 100 characters for a long, non-ASCII pipeline and error name', () => {
    const report = failureReport(eventWith({ input: { pipeline: `bestellungen_${'ä'.repeat(60)}` }, error: { Error: `Fehler→${'x'.repeat(80)}` } }), {
      recorded: false,
    });

    expect(report.subject).toMatch(/^[\x20-\x7e]+$/);
    expect(report.subject.length).toBeLessThan(100);
    expect(report.subject.endsWith('...')).toBe(true);
    expect(report.subject).toContain('atomic-publish: bestellungen_');
  });

  it('a failure in Plan says nothing was loaded and offers no re-run', () => {
    const report = failureReport(
      eventWith({ input: { pipeline: 'orders' }, error: { Error: 'ValidationError', Cause: lambdaCause('ValidationError', 'to must be after from') } }),
      { recorded: false },
    );

    expect(report.subject).toBe('atomic-publish: orders failed (ValidationError)');
    expect(report.message).toContain('atomic-publish: pipeline orders failed');
    expect(report.message).toContain('Error:      ValidationError: to must be after from');
    expect(report.message).toContain('Live table: untouched; the run stopped in Plan, before loading anything.');
    expect(report.message).toContain('Manifest:   not updated (no batch was created)');
    expect(report.message).not.toContain('Re-run:');
    expect(report.message).not.toContain('Staging:');
    expect(report.batchId).toBeUndefined();
  });

  it('a failure with no pipeline at all still reads sensibly', () => {
    const report = failureReport(eventWith({ error: { Error: 'States.Runtime', Cause: 'bad input' } }), { recorded: false });

    expect(report.subject).toBe('atomic-publish: run failed (States.Runtime)');
    expect(report.message).toContain('pipeline (unknown) failed');
    expect(report.pipeline).toBeUndefined();
  });

  it('a load failure names the live table as untouched, keeps the staging table and gives a re-run input', () => {
    const report = failureReport(
      eventWith({
        input: { pipeline: 'orders' },
        plan,
        error: { Error: 'WarehouseError', Cause: lambdaCause('WarehouseError', 'load chunk 0 failed: ERROR: division by zero') },
      }),
      { recorded: true, batchStatus: 'FAILED', latestPublication: 4 },
    );

    expect(report.message).toContain('Batch:      b-0001, interval 2026-01-01T00:00:00.000Z to 2026-01-02T00:00:00.000Z');
    expect(report.message).toContain('Live table: analytics.orders untouched; readers still see publication 4.');
    expect(report.message).toContain('Staging:    orders__stage_b_0001 is kept for diagnosis');
    expect(report.message).toContain('Manifest:   batch and attempt marked FAILED in atomic_publish.batches / batch_attempts');
    expect(report.message).toContain(`Execution:  ${eventWith({}).executionId} (started 2026-01-02T00:00:05.000Z)`);
    const rerun = /Re-run:     start an execution with input (\{.*?\});/.exec(report.message);
    expect(rerun).not.toBeNull();
    expect(JSON.parse(rerun![1]!)).toEqual({ pipeline: 'orders', to: '2026-01-02T00:00:00.000Z' });
  });

  it('a load failure of a first batch says readers see the version before atomic-publish, and reports an unwritten manifest', () => {
    const report = failureReport(
      eventWith({ plan: { ...plan, batch: { ...batch, basePublication: 0 } }, error: { Error: 'TransientWarehouseError', Cause: 'busy' } }),
      { recorded: false, recordError: 'warehouse unreachable' },
    );

    expect(report.message).toContain('readers still see the version before atomic-publish.');
    expect(report.message).toContain('Manifest:   not updated (warehouse unreachable)');
  });

  it('a failure after publishing says the live table was published and offers no re-run', () => {
    const report = failureReport(
      eventWith({ input: { pipeline: 'orders' }, plan, publish, error: { Error: 'Lambda.Unknown', Cause: 'metrics step crashed' } }),
      {
        recorded: false,
        batchStatus: 'PUBLISHED',
        ownPublication: 5,
        latestPublication: 5,
      },
    );

    expect(report.message).toContain('Live table: analytics.orders was published by this batch (publication 5); a step after publishing failed.');
    expect(report.message).toContain('Manifest:   the batch is PUBLISHED and was left as it is');
    expect(report.message).not.toContain('untouched');
    expect(report.message).not.toContain('Staging:');
    expect(report.message).not.toContain('Re-run:');
    expect(report.batchId).toBe('b-0001');
  });

  it('a Publish that failed but whose swap committed anyway is reported as published, from the manifest', () => {
    const report = failureReport(eventWith({ plan, error: { Error: 'Sandbox.Timedout', Cause: 'Task timed out' } }), {
      recorded: false,
      batchStatus: 'PUBLISHED',
      ownPublication: 5,
      latestPublication: 5,
    });

    expect(report.message).toContain('was published by this batch (publication 5)');
    expect(report.message).not.toContain('untouched');
    expect(report.message).not.toContain('Re-run:');
  });

  it('a batch another batch overtook is reported as superseded, with the live publication and no re-run', () => {
    const report = failureReport(
      eventWith({
        plan,
        error: { Error: 'PublishConflictError', Cause: lambdaCause('PublishConflictError', 'publish guard: pipeline orders is at publication 6') },
      }),
      { recorded: true, batchStatus: 'FAILED', latestPublication: 6 },
    );

    expect(report.message).toContain(
      'Live table: analytics.orders shows publication 6, published by another batch; this batch was not published and is superseded',
    );
    expect(report.message).not.toContain('untouched');
    expect(report.message).not.toContain('Re-run:');
  });

  it('a spec change asks for a new run instead of resuming the batch', () => {
    const report = failureReport(eventWith({ plan, error: { Error: 'SpecChangedError', Cause: 'pipeline orders changed' } }), {
      recorded: true,
      batchStatus: 'FAILED',
      latestPublication: 4,
    });

    expect(report.message).toContain('Re-run:     start a new run: the pipeline spec changed, so it plans a new batch.');
    expect(report.message).not.toContain('it resumes this batch');
  });

  it('an out-of-band change says readers see the live table with the change in it, and to re-run once someone has decided', () => {
    const report = failureReport(
      eventWith({
        plan,
        error: { Error: 'OutOfBandChangeError', Cause: lambdaCause('OutOfBandChangeError', 'out-of-band change: analytics.orders was changed') },
      }),
      { recorded: true, batchStatus: 'FAILED', latestPublication: 4 },
    );

    expect(report.subject).toBe('atomic-publish: orders failed (OutOfBandChangeError)');
    expect(report.message).toContain('Live table: analytics.orders untouched by this batch; readers still see publication 4 with the out-of-band change in it');
    expect(report.message).toContain(
      `Re-run:     once someone has decided about the change (into the source, or the writer declared expected with outOfBand.expectedWriters), ` +
        `start an execution with input {"pipeline":"orders","to":"2026-01-02T00:00:00.000Z"}: its fresh Plan takes the live table as it is then as its base`,
    );
  });
});

describe('failureReport on the statements the batch left running', () => {
  const loadFailure = eventWith({ plan, error: { Error: 'WarehouseError', Cause: 'chunk 0 failed' } });

  it('says how many were cancelled, of which chunks, and that a re-run reloads them', () => {
    const report = failureReport(loadFailure, {
      recorded: true,
      batchStatus: 'FAILED',
      latestPublication: 4,
      orphans: { cancelled: [1, 2], stillRunning: [] },
    });
    expect(report.message).toContain('Statements: cancelled 2 still-running statement(s) of this batch (the INSERTs of chunk(s) 1, 2; a re-run reloads them).');
    expect(report.cancelledStatements).toBe(2);
  });

  it('names those that could not be cancelled and may still run', () => {
    const report = failureReport(loadFailure, { recorded: true, batchStatus: 'FAILED', orphans: { cancelled: [3], stillRunning: [5, 7] } });
    expect(report.message).toContain('2 could not be cancelled and may still run (chunk(s) 5, 7; a re-run waits for them).');
    expect(report.cancelledStatements).toBe(1);
  });

  it('says when none was running, bounds a long list of chunks, and reports why it could not look', () => {
    expect(failureReport(loadFailure, { recorded: true, orphans: { cancelled: [], stillRunning: [] } }).message).toContain(
      'Statements: no statement of this batch was left running.',
    );
    const many = failureReport(loadFailure, { recorded: true, orphans: { cancelled: Array.from({ length: 1000 }, (_, i) => i), stillRunning: [] } });
    expect(many.message).toContain(
      'cancelled 1000 still-running statement(s) of this batch (the INSERTs of chunk(s) 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 and 980 more;',
    );
    const unreachable = failureReport(loadFailure, { recorded: false, recordError: 'ECONNREFUSED', orphanError: 'warehouse unreachable (ECONNREFUSED)' });
    expect(unreachable.message).toContain(
      "Statements: could not look for statements left running (warehouse unreachable (ECONNREFUSED)); see the Data API's ListStatements.",
    );
    expect(unreachable.cancelledStatements).toBe(0);
  });

  it('has no statements line for a run that failed before a batch existed', () => {
    expect(failureReport(eventWith({ error: { Error: 'ValidationError', Cause: 'bad input' } }), { recorded: false }).message).not.toContain('Statements:');
  });
});

describe('failureReport bounds', () => {
  const MEGABYTES = 3 * 1024 * 1024;
  const bytes = (text: string) => Buffer.byteLength(text, 'utf8');

  it('keeps the message under 64 KB for a megabytes-long plain-text Cause and a huge input, and still says what to do', () => {
    const huge = { pipeline: 'orders', to: '2026-01-02', payload: 'p'.repeat(MEGABYTES) };
    const event = eventWith({ input: huge, plan, error: { Error: 'WarehouseError', Cause: `ERROR: ${'€'.repeat(MEGABYTES)}` } });

    const report = failureReport(event, { recorded: true, batchStatus: 'FAILED', latestPublication: 4 });

    expect(bytes(report.message)).toBeLessThanOrEqual(MAX_ALERT_MESSAGE_BYTES);
    expect(report.message).toMatch(/^Error: {6}WarehouseError: ERROR: €+\.\.\. \(\d+ bytes in all\)$/m);
    expect(report.message).toContain('Live table: analytics.orders untouched; readers still see publication 4.');
    expect(report.message).toContain('Re-run:     start an execution with input');
    expect(report.subject).toBe('atomic-publish: orders failed (WarehouseError)');
  });

  it('keeps the message under 64 KB for a Lambda-style Cause whose errorMessage is megabytes long', () => {
    const event = eventWith({
      input: { pipeline: 'orders' },
      error: { Error: 'ValidationError', Cause: lambdaCause('ValidationError', 'v'.repeat(MEGABYTES)) },
    });

    const report = failureReport(event, { recorded: false });

    expect(bytes(report.message)).toBeLessThanOrEqual(MAX_ALERT_MESSAGE_BYTES);
    expect(report.message).toContain('Live table: untouched; the run stopped in Plan, before loading anything.');
  });

  it('keeps the message and the subject bounded for a megabyte-long error name, pipeline name and manifest error', () => {
    const event = eventWith({ input: { pipeline: 'n'.repeat(MEGABYTES) }, plan, error: { Error: 'E'.repeat(MEGABYTES), Cause: 'c'.repeat(MEGABYTES) } });

    const report = failureReport(event, { recorded: false, recordError: 'r'.repeat(MEGABYTES) });

    expect(bytes(report.message)).toBeLessThanOrEqual(MAX_ALERT_MESSAGE_BYTES);
    expect(report.message).toMatch(/^Manifest: {3}not updated \(r+\.\.\. \(\d+ bytes in all\)\)$/m);
    expect(report.subject).toMatch(/^[\x20-\x7e]+$/);
    expect(report.subject.length).toBeLessThanOrEqual(SNS_SUBJECT_MAX_CHARACTERS);
    expect(report.errorName.length).toBeLessThan(200);
  });

  it.each([null, 0, '', 'orders', [1, 2]])('reads sensibly when the execution input was %j', (input) => {
    const report = failureReport(eventWith({ input, error: { Error: 'ValidationError', Cause: 'execution input must be a JSON object' } }), {
      recorded: false,
    });

    expect(report.subject).toBe('atomic-publish: run failed (ValidationError)');
    expect(report.message).toContain('Error:      ValidationError: execution input must be a JSON object');
    expect(report.pipeline).toBeUndefined();
  });

  it('builds an alert from a state that is not an object at all', () => {
    const report = failureReport({ ...eventWith({}), state: null as unknown as FailedState }, { recorded: false });

    expect(report.subject).toBe('atomic-publish: run failed (UnknownError)');
    expect(report.message).toContain('Live table: untouched; the run stopped in Plan, before loading anything.');
  });
});

describe('describeError with odd shapes', () => {
  it.each([
    ['a Cause that is not a string', { Error: 'States.Runtime', Cause: { nested: true } }, { name: 'States.Runtime', message: 'States.Runtime' }],
    ['an empty Error', { Error: '', Cause: 'boom' }, { name: 'UnknownError', message: 'boom' }],
    ['an errorMessage that is not a string', { Error: 'X', Cause: JSON.stringify({ errorMessage: 42 }) }, { name: 'X', message: '{"errorMessage":42}' }],
    ['not an object', 'broken', { name: 'UnknownError', message: 'UnknownError' }],
  ])('copes with %s', (_what, error, expected) => {
    expect(describeError(error)).toEqual(expected);
  });
});

describe('failureFacts', () => {
  it('reads the batch status, its own publication and the latest publication from the rows read back', () => {
    expect(failureFacts(false, { status: 'PUBLISHED', seq: 5 }, { seq: 5 })).toEqual({
      recorded: false,
      batchStatus: 'PUBLISHED',
      ownPublication: 5,
      latestPublication: 5,
    });
  });

  it('leaves out what the manifest does not have: no batch row, no publication of its own, none at all', () => {
    expect(failureFacts(true, undefined, undefined)).toEqual({ recorded: true, latestPublication: 0 });
    expect(failureFacts(true, { status: 'FAILED', seq: null }, { seq: 3 })).toEqual({ recorded: true, batchStatus: 'FAILED', latestPublication: 3 });
  });
});

describe('what readers see now and what to do next', () => {
  const live = { seq: 4, batchId: 'b-0000', publishedAt: '2026-01-01 06:00:00' };

  it('names the live publication by batch and time, and says to re-run with the input that resumes the batch', () => {
    const report = failureReport(eventWith({ plan, error: { Error: 'WarehouseError', Cause: 'ERROR: division by zero' } }), {
      recorded: true,
      batchStatus: 'FAILED',
      latestPublication: 4,
      livePublication: live,
      liveTablePresent: true,
    });

    expect(report.message).toContain(
      'Live table: analytics.orders untouched; readers still see publication 4 (batch b-0000, published at 2026-01-01 06:00:00 UTC).',
    );
    expect(report.message).toContain(`Next:       fix the cause the error names, then start an execution with input {"pipeline":"orders","to":"${batch.to}"}.`);
    expect(report.message).not.toContain('Catalog:');
  });

  it('says the batch IS live and that nothing needs publishing again when a step after Publish failed', () => {
    const report = failureReport(eventWith({ plan, error: { Error: 'WarehouseError', Cause: 'metrics' } }), {
      recorded: false,
      batchStatus: 'PUBLISHED',
      ownPublication: 5,
      latestPublication: 5,
      livePublication: { seq: 5, batchId: batch.batchId, publishedAt: '2026-01-02 00:10:00' },
    });

    expect(report.message).toContain(
      `Live table: analytics.orders was published by this batch (publication 5, published at 2026-01-02 00:10:00 UTC); a step after publishing failed.`,
    );
    expect(report.message).toMatch(/^Next: {7}nothing to publish again: readers see this batch\./m);
  });

  it.each([
    ['ValidationError', /^Next: {7}correct the execution input/m],
    [
      'MissingPrivilegeError',
      /^Next: {7}have a superuser run the setup SQL the error names \(npm run setup-sql -- --pipeline orders\), then start an execution with input \{"pipeline":"orders"\}\.$/m,
    ],
    [
      'TransientWarehouseError',
      /^Next: {7}the warehouse kept failing after every retry .*once that has ended, start an execution with input \{"pipeline":"orders"\}\.$/m,
    ],
  ])('a failure in Plan (%s) says what to do next, with the execution input where a re-run can help', (name, next) => {
    const report = failureReport(eventWith({ input: { pipeline: 'orders' }, error: { Error: name, Cause: 'x' } }), { recorded: false, latestPublication: 0 });

    expect(report.message).toContain('Live table: untouched; the run stopped in Plan, before loading anything. Readers see the version before atomic-publish.');
    expect(report.message).toMatch(next);
  });

  it("reports the batch the execution created when the state lost Plan's result", () => {
    const report = failureReport(eventWith({ input: { pipeline: 'orders' }, error: { Error: 'Sandbox.Timedout', Cause: 'Task timed out' } }), {
      recorded: true,
      latestPublication: 4,
      livePublication: live,
      executionBatch: { batchId: 'b-0001', status: 'FAILED' },
    });

    expect(report.message).toContain('Batch:      b-0001, created by this execution in Plan (its result was lost); now FAILED');
    expect(report.message).toContain('Readers see publication 4 (batch b-0000, published at 2026-01-01 06:00:00 UTC).');
    expect(report.message).toMatch(
      /^Next: {7}a step outran its time limit; .*start an execution with input \{"pipeline":"orders"\}: a statement it left running is waited for, not run again\.$/m,
    );
  });

  it('warns when the catalog has no live table at all', () => {
    const report = failureReport(eventWith({ plan, error: { Error: 'WarehouseError', Cause: 'x' } }), {
      recorded: true,
      latestPublication: 4,
      liveTablePresent: false,
    });

    expect(report.message).toMatch(/^Catalog: {4}the live table analytics\.orders is NOT in the catalog: readers get "relation does not exist"\./m);
  });

  it('reads the live publication from the manifest row', () => {
    expect(failureFacts(true, undefined, { seq: 4, batch_id: 'b-0000', published_at: '2026-01-01 06:00:00' })).toEqual({
      recorded: true,
      latestPublication: 4,
      livePublication: live,
    });
  });
});
