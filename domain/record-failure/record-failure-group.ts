/**
 * The alert of a failed publish group run: the group, the error, and what
 * every member's live table shows now by the manifest (untouched, or
 * published by the group's one transaction), and what to do.
 */
import { type BatchRef, BatchStatus } from '../batch.ts';
import { boundedErrorMessage } from '../errors.ts';
import { MANIFEST_SCHEMA } from '../sql/statement.ts';
import { clip, clipUtf8 } from '../text.ts';
import { describeError, type FailureReport, MAX_ALERT_MESSAGE_BYTES, type RecordFailureEvent, subjectLine } from './record-failure.ts';

/** What the manifest says about one member after the failure was recorded. */
export interface MemberFailureFacts {
  readonly batch: BatchRef;
  /** The member's batch status now (undefined: the manifest could not be read). */
  readonly status?: string;
  /** Its latest publication: what its live table shows. */
  readonly live?: { readonly seq: number; readonly batchId: string; readonly publishedAt: string };
  /** Statements of the batch this failure cancelled. */
  readonly cancelled: number;
}

export interface GroupFailureFacts {
  readonly members: readonly MemberFailureFacts[];
  /** When the run stopped in Plan: the batches Plan had started for it already (found by execution), as they are now. */
  readonly planBatches?: readonly { readonly batchId: string; readonly pipeline: string; readonly status: string }[];
  /** Why the manifest could not be read or written. */
  readonly recordError?: string;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The group a failed execution ran: from Plan's result, else from the input. */
export function failedGroup(event: RecordFailureEvent): { name: string; members: readonly BatchRef[] } | undefined {
  const plan: unknown = event?.state?.plan;
  if (isObject(plan) && isObject(plan.group) && Array.isArray(plan.members)) {
    const members = (plan.members as unknown[]).flatMap((m) => (isObject(m) && isObject(m.batch) ? [m.batch as unknown as BatchRef] : []));
    return { name: clip(String(plan.group.name), 128), members };
  }
  const input = event?.input;
  if (isObject(input) && 'group' in input) return { name: clip(String(input.group), 128), members: [] };
  return undefined;
}

function liveLine(member: MemberFailureFacts): string {
  const live = member.live
    ? `publication ${member.live.seq} (batch ${member.live.batchId}, published at ${member.live.publishedAt} UTC)`
    : 'the version before atomic-publish';
  return `  ${member.batch.liveTable}: ${live}; batch ${member.batch.batchId} is ${member.status ?? 'unknown (manifest not read)'}`;
}

/** The page of a failed group run. */
export function groupFailureReport(event: RecordFailureEvent, group: { name: string; members: readonly BatchRef[] }, facts: GroupFailureFacts): FailureReport {
  const described = describeError(event?.state?.error);
  const name = clip(described.name, 128);
  const lines = [`atomic-publish: publish group ${group.name} failed`, ''];
  lines.push(`Error:      ${name}: ${boundedErrorMessage(described.message)}`);
  const first = group.members[0];
  const input = JSON.stringify({ group: group.name, ...(first ? { to: first.to } : {}) });
  let next: string;
  let rerun: string | undefined;
  if (group.members.length === 0) {
    lines.push("Live tables: untouched; the run stopped in Plan, before loading anything: no member's live table was written.");
    if (facts.planBatches?.length) {
      lines.push(
        `Batches:    created by this execution in Plan, no chunk loaded: ${facts.planBatches.map((b) => `${b.batchId} (${b.pipeline}) now ${b.status}`).join(', ')}`,
      );
    }
    next =
      name === 'ValidationError'
        ? 'correct the execution input (the error says what is wrong) and start a new execution; nothing was written.'
        : `fix the cause the error names, then start an execution with input ${clip(JSON.stringify(event.input))}.`;
  } else {
    lines.push(`Group:      ${group.name}: ${group.members.map((m) => m.pipeline).join(', ')}; interval to ${first!.to}`);
    const published = facts.members.filter((m) => m.status === BatchStatus.PUBLISHED);
    if (facts.members.length > 0 && published.length === facts.members.length) {
      lines.push('Live tables: published by this run, every member in one transaction (PublishGroup committed); a step after it failed:');
      next = `nothing to publish again: readers see this run's batches in every member. A run with input ${input} ends at NothingToPublish; the next successful run's Cleanup drops old versions.`;
    } else if (published.length > 0) {
      lines.push(`Live tables: as the manifest says below (${published.map((m) => m.batch.pipeline).join(', ')} PUBLISHED by a run of its own):`);
      next = 'no re-run of this group for this interval: run the other members alone, or the group for a later interval.';
    } else {
      lines.push("Live tables: untouched: nothing of the group was published; every member's live table shows what it showed before this run:");
      next =
        name === 'PublishConflictError'
          ? `no re-run of this interval: a member was published since Plan, or holds newer data (the error names it). For the newest data start an execution with input ${JSON.stringify({ group: group.name })}.`
          : `fix the cause the error names, then start an execution with input ${input}.`;
      if (name !== 'PublishConflictError' && name !== 'SpecChangedError') {
        rerun = `start an execution with input ${input}; it resumes every member's batch, skipping the chunks already loaded.`;
      }
    }
    for (const member of facts.members) lines.push(liveLine(member));
    const cancelled = facts.members.reduce((sum, m) => sum + m.cancelled, 0);
    lines.push(
      `Statements: ${cancelled > 0 ? `cancelled ${cancelled} still-running statement(s) of the members' batches` : 'no statement of the members was left running'}.`,
    );
  }
  lines.push(
    `Manifest:   ${facts.recordError ? `not updated (${clipUtf8(facts.recordError, 4096)})` : `member batches not published are marked FAILED in ${MANIFEST_SCHEMA}.batches`}`,
  );
  lines.push(`Execution:  ${clip(String(event?.executionId))} (started ${clip(String(event?.executionStartedAt))})`);
  lines.push(`Next:       ${next}`);
  if (rerun) lines.push(`Re-run:     ${rerun}`);
  return {
    subject: subjectLine(`atomic-publish: group ${group.name} failed (${name})`),
    message: clipUtf8(lines.join('\n'), MAX_ALERT_MESSAGE_BYTES),
    errorName: name,
    recorded: facts.recordError === undefined && group.members.length > 0,
    cancelledStatements: facts.members.reduce((sum, m) => sum + m.cancelled, 0),
  };
}
