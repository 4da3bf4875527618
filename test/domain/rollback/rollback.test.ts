import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../domain/errors.ts';
import { type PublicationRecord, parseRollbackInput, resolveRollback, retainedVersions, rolledBackVersionTableFor } from '../../../domain/rollback/rollback.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';

const pipeline = pipelineWith();
const [A, B, C] = ['aaaaaaaaaaaaaaaa', 'bbbbbbbbbbbbbbbb', 'cccccccccccccccc'];

function publication(seq: number, batchId: string, oldVersionTable: string, flags: Partial<PublicationRecord> = {}): PublicationRecord {
  return { seq, batchId, publishedAt: `2026-01-0${seq} 00:00:00`, oldVersionTable: `analytics.${oldVersionTable}`, dropped: false, restored: false, ...flags };
}

/** A, B, C published in turn; `orders__prev_A` holds the table live before A. */
const history = [publication(1, A, `orders__prev_${A}`), publication(2, B, `orders__prev_${B}`), publication(3, C, `orders__prev_${C}`)];

describe('parseRollbackInput', () => {
  it('reads {} and {"to": batch id}', () => {
    expect(parseRollbackInput({ pipeline: 'orders', rollback: {} })).toEqual({ pipeline: 'orders' });
    expect(parseRollbackInput({ pipeline: 'orders', rollback: { to: B } })).toEqual({ pipeline: 'orders', to: B });
  });

  it.each([
    [{ pipeline: 'orders', rollback: {}, from: '2026-01-01' }, /^input has unknown field\(s\): from \(allowed: pipeline, rollback/],
    [{ pipeline: 'orders', rollback: { to: B, at: 1 } }, /^input\.rollback has unknown field\(s\): at \(allowed: to\)$/],
    [{ pipeline: 'orders', rollback: null }, /^input\.rollback must be an object: \{\} or \{"to": "<batch id>"\}, got null$/],
    [{ pipeline: 'orders', rollback: { to: 'ABCDEF0123456789' } }, /^input\.rollback\.to must be a batch id .*got "ABCDEF0123456789"$/],
    [{ pipeline: 'orders', rollback: { to: 42 } }, /^input\.rollback\.to must be a batch id .*got 42$/],
  ])('refuses %j', (input, message) => {
    const error = errorOf(() => parseRollbackInput(input));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(message);
  });
});

describe('resolveRollback', () => {
  it('by default restores the version live before the latest publication, and retains the live one under a name of its batch', () => {
    expect(resolveRollback(pipeline, undefined, history, undefined)).toEqual({
      batchId: B,
      restoreSeq: 3,
      restoreTable: `orders__prev_${C}`,
      rolledBackSeq: 3,
      fromBatchId: C,
      retainedTable: rolledBackVersionTableFor(pipeline, C),
    });
    expect(rolledBackVersionTableFor(pipeline, C)).toBe(`orders__rb_${C}`);
  });

  it('finds a batch where the publication after it put it, and says when it is live already', () => {
    expect(resolveRollback(pipeline, A, history, 'PUBLISHED')).toMatchObject({ batchId: A, restoreSeq: 2, restoreTable: `orders__prev_${B}` });
    expect(resolveRollback(pipeline, C, history, 'PUBLISHED')).toEqual({ alreadyLive: true, batchId: C });
  });

  it('follows a version a rollback moved: restored versions are not where their publication put them', () => {
    // Rolled back to B (publication 4): C went to orders__rb_C, B's old place is empty.
    const after = [...history.slice(0, 2), { ...history[2]!, restored: true }, publication(4, B, `orders__rb_${C}`, { rollbackOf: 3 })];
    expect(resolveRollback(pipeline, C, after, 'PUBLISHED')).toMatchObject({
      batchId: C,
      restoreSeq: 4,
      restoreTable: `orders__rb_${C}`,
      retainedTable: `orders__rb_${B}`,
    });
    expect(resolveRollback(pipeline, undefined, after, undefined)).toMatchObject({ batchId: C, restoreSeq: 4 });
    expect(retainedVersions(after).map((v) => v.batchId)).toEqual([C, A]);
  });

  it('refuses a version past retention, naming those retained and how to roll back to one', () => {
    const dropped = history.map((p) => (p.seq <= 2 ? { ...p, dropped: true } : p));
    expect(errorOf(() => resolveRollback(pipeline, A, dropped, 'PUBLISHED')).message).toBe(
      `batch ${A} of orders is past retention: its version was dropped by Cleanup (retention.keepVersions 3). To publish its data again, run its interval as a new run. ` +
        `Otherwise, the versions still retained hold batches ${B} (replaced by publication 3 at 2026-01-03 00:00:00): roll back to one with {"pipeline":"orders","rollback":{"to":"${B}"}}`,
    );
  });

  it('refuses a pipeline that never published, an unknown batch, a batch never published, and the table before the first publication', () => {
    expect(errorOf(() => resolveRollback(pipeline, undefined, [], undefined)).message).toBe(
      'pipeline orders has never published: there is nothing to roll back',
    );
    expect(errorOf(() => resolveRollback(pipeline, 'dddddddddddddddd', history, undefined)).message).toMatch(
      /^batch dddddddddddddddd is not a batch of pipeline orders/,
    );
    expect(errorOf(() => resolveRollback(pipeline, 'dddddddddddddddd', history, 'FAILED')).message).toMatch(/was never published \(it is FAILED\)/);
    expect(errorOf(() => resolveRollback(pipeline, undefined, history.slice(0, 1), undefined)).message).toMatch(
      /is the table live before atomic-publish first published it, which no batch made/,
    );
  });
});
