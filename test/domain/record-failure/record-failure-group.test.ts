import { describe, expect, it } from 'vitest';
import type { BatchRef } from '../../../domain/batch.ts';
import type { RecordFailureEvent } from '../../../domain/record-failure/record-failure.ts';
import { failedGroup, groupFailureReport, type MemberFailureFacts } from '../../../domain/record-failure/record-failure-group.ts';

const member = (pipeline: string): BatchRef => ({
  pipeline,
  batchId: `b_${pipeline}`,
  specHash: 'h',
  liveTable: `analytics.${pipeline}`,
  from: '2026-01-01T00:00:00.000Z',
  to: '2026-01-09T00:00:00.000Z',
  stagingTable: `${pipeline}__stg_b_${pipeline}`,
  columns: ['order_id'],
  basePublication: 1,
});
const members = [member('customers'), member('orders')];
const error = { Error: 'CheckFailedError', Cause: JSON.stringify({ errorType: 'CheckFailedError', errorMessage: 'business_key_unique failed' }) };
const event = (state: RecordFailureEvent['state'], input: unknown = { group: 'sales' }): RecordFailureEvent => ({
  state,
  input,
  executionId: 'arn:aws:states:local:000000000000:execution:AtomicPublish:run-1',
  executionStartedAt: '2026-01-09T06:00:00.000Z',
});
const plan = { group: { name: 'sales', members: ['customers', 'orders'] }, members: members.map((batch) => ({ batch, chunks: [] })) };
const facts = (status: string): MemberFailureFacts[] =>
  members.map((batch) => ({ batch, status, live: { seq: 1, batchId: `old_${batch.pipeline}`, publishedAt: '2026-01-08 06:00:00' }, cancelled: 1 }));

describe('failedGroup', () => {
  it("finds the group and its members' batches in Plan's result, or the group's name in the input", () => {
    expect(failedGroup(event({ plan: plan as never, error }))).toEqual({ name: 'sales', members });
    expect(failedGroup(event({ error }, { group: 'sales', pipeline: 'orders' }))).toEqual({ name: 'sales', members: [] });
    expect(failedGroup(event({ error }, { pipeline: 'orders' }))).toBeUndefined();
  });
});

describe('groupFailureReport', () => {
  it('says every member is untouched, each live table with the publication it shows, and gives the input that resumes the group', () => {
    const report = groupFailureReport(event({ plan: plan as never, error }), { name: 'sales', members }, { members: facts('FAILED') });

    expect(report.subject).toBe('atomic-publish: group sales failed (CheckFailedError)');
    expect(report.message).toContain('Error:      CheckFailedError: business_key_unique failed');
    expect(report.message).toContain(
      "Live tables: untouched: nothing of the group was published; every member's live table shows what it showed before this run:",
    );
    expect(report.message).toContain(
      '  analytics.customers: publication 1 (batch old_customers, published at 2026-01-08 06:00:00 UTC); batch b_customers is FAILED',
    );
    expect(report.message).toContain('  analytics.orders: publication 1 (batch old_orders, published at 2026-01-08 06:00:00 UTC); batch b_orders is FAILED');
    expect(report.message).toContain("Statements: cancelled 2 still-running statement(s) of the members' batches.");
    expect(report.message).toContain('Re-run:     start an execution with input {"group":"sales","to":"2026-01-09T00:00:00.000Z"}');
    expect(report.cancelledStatements).toBe(2);
  });

  it('says every member was published when the group swap committed and a later step failed, and offers no re-run', () => {
    const report = groupFailureReport(event({ plan: plan as never, publish: {} as never, error }), { name: 'sales', members }, { members: facts('PUBLISHED') });

    expect(report.message).toContain('Live tables: published by this run, every member in one transaction (PublishGroup committed); a step after it failed:');
    expect(report.message).toContain('Next:       nothing to publish again');
    expect(report.message).not.toContain('Re-run:');
  });

  it('offers no re-run of the interval when the group swap was refused for a conflict', () => {
    const conflict = { Error: 'PublishConflictError', Cause: 'publish group sales: publish guard: ...' };
    const report = groupFailureReport(event({ plan: plan as never, error: conflict }), { name: 'sales', members }, { members: facts('FAILED') });

    expect(report.message).toContain('Live tables: untouched: nothing of the group was published');
    expect(report.message).toContain(
      'Next:       no re-run of this interval: a member was published since Plan, or holds newer data (the error names it). For the newest data start an execution with input {"group":"sales"}.',
    );
    expect(report.message).not.toContain('Re-run:');
  });

  it('says nothing was written when the run stopped in Plan', () => {
    const report = groupFailureReport(
      event({ error: { Error: 'ValidationError', Cause: 'unknown publish group "x"' } }, { group: 'x' }),
      { name: 'x', members: [] },
      { members: [] },
    );

    expect(report.subject).toBe('atomic-publish: group x failed (ValidationError)');
    expect(report.message).toContain("Live tables: untouched; the run stopped in Plan, before loading anything: no member's live table was written.");
    expect(report.message).toContain('Next:       correct the execution input');
  });
});
