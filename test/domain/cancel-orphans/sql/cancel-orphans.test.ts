import { describe, expect, it } from 'vitest';
import { batchOfExecution, markChunkCancelled, markExecutionStopped, submittedStatements } from '../../../../domain/cancel-orphans/sql/cancel-orphans.ts';
import type { Statement } from '../../../../domain/sql/statement.ts';
import { batchId, itIsASafeSingleStatement, NOW } from '../../sql/support.ts';

const EXECUTION = 'arn:aws:states:eu-central-1:111122223333:execution:atomic-publish:run-1';

describe('single statements of CancelOrphans', () => {
  itIsASafeSingleStatement([
    ['submittedStatements', submittedStatements(batchId)],
    ['markChunkCancelled', markChunkCancelled(batchId, 3, 'stmt-0001', NOW)],
    ['batchOfExecution', batchOfExecution(EXECUTION)],
    ...markExecutionStopped(batchId, EXECUTION, 'ExecutionAborted: the execution was aborted', NOW).map(
      (statement, i) => [`markExecutionStopped[${i}]`, statement] as [string, Statement],
    ),
  ]);
});

describe('the statements a batch may still run', () => {
  it('are the INSERTs of LOADING chunks that recorded one', () => {
    expect(submittedStatements(batchId).sql).toMatch(/WHERE batch_id = :batch_id AND status = 'LOADING' AND statement_id IS NOT NULL/);
  });

  it('mark a chunk CANCELLED only while it still records the cancelled INSERT, queued on the chunks lock', () => {
    const statement = markChunkCancelled(batchId, 3, 'stmt-0001', NOW);
    expect(statement.lock).toBe('LOCK "atomic_publish".chunks');
    expect(statement.sql).toContain(`SET status = 'CANCELLED'`);
    expect(statement.sql).toMatch(/AND status = 'LOADING' AND statement_id = :statement_id/);
    expect(statement.parameters).toMatchObject({ chunk_index: '3', statement_id: 'stmt-0001' });
  });
});

describe('markExecutionStopped', () => {
  it("fails the attempt and the batch only while the execution is the batch's current one and it is RUNNING or CHECKED", () => {
    const [attempt, batch] = markExecutionStopped(batchId, EXECUTION, 'ExecutionTimedOut: the execution timed out', NOW);
    for (const statement of [attempt!, batch!]) {
      expect(statement.sql).toContain('execution_id = :execution_id');
      expect(statement.sql).toContain("status IN ('RUNNING', 'CHECKED')");
      expect(statement.parameters).toMatchObject({ execution_id: EXECUTION, error: 'ExecutionTimedOut: the execution timed out' });
    }
    expect(attempt!.sql).toContain('UPDATE "atomic_publish".batch_attempts');
    expect(attempt!.sql).toContain("status = 'RUNNING'");
    expect(batch!.sql).toContain('UPDATE "atomic_publish".batches');
  });
});
