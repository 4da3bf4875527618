// The warehouse going away mid-run, on a server of this file's own: restarted while
// INSERTs run or while the swap waits for its lock, its sessions terminated. The
// Data API reports the lost statements FAILED, the handlers call it transient, the
// state machine retries, and the source is published once, never half-swapped.
// Each fault is placed by observed events, never by time. Why: docs/decisions/tests-and-timing.md
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESUBMITTED_MESSAGE } from '../../functions/load-chunk/index.ts';
import { APPLICATION_NAME } from '../../local/data-api/runner.ts';
import { withClient } from '../../local/pg-clients.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { holdGate } from '../support/lock-gate.ts';
import { type PrivatePostgres, startPrivatePostgres } from '../support/private-postgres.ts';
import { caughtError, caughtMessage, inputFor, LIVE, namesFor, stateEvents, useFork, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

let own: PrivatePostgres;
beforeAll(async () => {
  // Gates that must outlive a restart hold their lock in a prepared transaction.
  own = await startPrivatePostgres({ settings: { max_prepared_transactions: '4' } });
});
// Registered before the fixture's: runs after it dropped the template (after hooks run in reverse).
afterAll(() => own?.close());
const fixture = useWorkflowFixture(
  'wf_pg_faults',
  async (wf) => {
    await wf.sample({ rowsPerDay: 20, sourceDays: 12, liveDays: 4 });
  },
  {
    // Read when the fixture and its forks are made, once the server above has started.
    get postgres() {
      return own.conn;
    },
  },
);

/** The errors a step failed with before its retries succeeded: what the lost statements were reported as. */
function failuresOf(result: ExecutionResult, state: string): { Error?: string; Cause?: unknown }[] {
  return stateEvents(result, 'StateFailed', state).map((e) => ({ Error: e.Error, Cause: e.Cause }));
}

/** The cause a Lambda-style error carries (`{"errorMessage": ...}`), or the plain text. */
const causeText = (cause: unknown): string => {
  const text = typeof cause === 'string' ? cause : JSON.stringify(cause ?? '');
  try {
    return (JSON.parse(text) as { errorMessage?: string }).errorMessage ?? text;
  } catch {
    return text;
  }
};

/** How the endpoint reports a statement whose connection the server lost, or could not open. */
const LOST_CONNECTION =
  /terminating connection due to administrator command|Connection terminated|connection to server at "[^"]*", port \d+ failed: |the database system is (starting up|shutting down)/;

/** Every failure of `state` was a lost connection, reported as transient. */
/** Redshift's words for a conflict between concurrent transactions. */
const SERIALIZATION_CONFLICT = /ERROR: 1023 DETAIL: Serializable isolation violation/;

function expectLostConnections(result: ExecutionResult, state: string): void {
  const failures = failuresOf(result, state);
  expect(failures.length, `${state} failures`).toBeGreaterThanOrEqual(1);
  expect(
    failures.some((failure) => LOST_CONNECTION.test(causeText(failure.Cause))),
    `${state} failures include a lost connection`,
  ).toBe(true);
  for (const failure of failures) {
    expect(failure.Error).toBe('TransientWarehouseError');
    // Under SERIALIZABLE, retries of concurrent chunks may also conflict on the manifest (error 1023), as on Redshift.
    expect(causeText(failure.Cause)).toMatch(new RegExp(`${LOST_CONNECTION.source}|${SERIALIZATION_CONFLICT.source}`, LOST_CONNECTION.flags));
  }
  expect(stateEvents(result, 'StateRetried', state)).toHaveLength(failures.length);
}

/**
 * The loads that lost their connection were reported FAILED for it: either
 * submitted afresh by the same LoadChunk invocation (functions/load-chunk/index.ts)
 * or failing it as transient, and the state machine retried it.
 */
function expectLoadsResubmitted(wf: Workflow, result: ExecutionResult): void {
  const resubmitted = wf.runner.logs.filter((l) => l.message === RESUBMITTED_MESSAGE);
  for (const l of resubmitted) expect(l.status).toBe('FAILED');
  const failures = failuresOf(result, 'LoadChunk');
  for (const failure of failures) expect(failure.Error).toBe('TransientWarehouseError');
  expect(stateEvents(result, 'StateRetried', 'LoadChunk')).toHaveLength(failures.length);
  const reports = [...resubmitted.map((l) => String(l.error)), ...failures.map((f) => causeText(f.Cause))];
  expect(
    reports.some((r) => LOST_CONNECTION.test(r)),
    'a load lost its connection',
  ).toBe(true);
  // Under SERIALIZABLE, loads of concurrent chunks may also conflict on the manifest (error 1023), as on Redshift.
  for (const r of reports) expect(r).toMatch(new RegExp(`${LOST_CONNECTION.source}|${SERIALIZATION_CONFLICT.source}`, LOST_CONNECTION.flags));
}

async function expectEndpointAnswers(wf: Workflow): Promise<void> {
  const done = await wf.wh.run('SELECT 1 AS one');
  expect(done.Status).toBe('FINISHED');
}

describe('PostgreSQL restarted while chunk INSERTs run', () => {
  const wf = useFork(fixture);
  it('fails the running INSERTs as transient, keeps the endpoint up, and the retried run publishes the source exactly once', async () => {
    const day = 8;
    let outage: Promise<void> = Promise.resolve();
    let gate: ReturnType<typeof holdGate> | undefined;
    // The first LoadChunk locks the staging table Plan created, so every chunk's INSERT waits on it;
    // once two are seen waiting the server restarts. Invocations after that (the retries) wait for it to be back.
    wf.faults.LoadChunk = async (input, next) => {
      await outage;
      if (!gate) {
        // Durable: the restart cannot let a blocked INSERT take the lock and commit before it is terminated.
        gate = holdGate(wf.wh.pg, { table: namesFor(day).staging, durable: true });
        void gate.then(async (held) => {
          await held.waiting(2);
          outage = own.server.restart().then(() => held.release());
        });
      }
      await gate;
      return next(input);
    };

    const result = await wf.run(inputFor(day), 'restart-while-loading');
    await outage;

    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expectLoadsResubmitted(wf, result);
    expect(visited(result)).not.toContain('RecordFailure');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    await expectEndpointAnswers(wf);
  });
});

describe('PostgreSQL restarted inside the swap transaction, after its renames', () => {
  const wf = useFork(fixture);
  it('rolls the renames back with the session, and the retry publishes once: the live table is never left half-swapped', async () => {
    const day = 9;
    const before = (await wf.schemaExists('atomic_publish')) ? await wf.publications() : [];
    let outage: Promise<void> = Promise.resolve();
    let restarted = false;
    // The swap renames live and staging, records the publication, then updates batch_attempts:
    // that table is held, so the transaction waits there with both renames done and uncommitted.
    wf.faults.Publish = async (input, next) => {
      await outage;
      if (!restarted) {
        restarted = true;
        const gate = await holdGate(wf.wh.pg, { table: 'atomic_publish.batch_attempts', durable: true });
        void gate.waiting(1).then(() => {
          outage = own.server.restart().then(() => gate.release());
        });
      }
      return next(input);
    };

    const result = await wf.run(inputFor(day), 'restart-while-swapping');
    await outage;

    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expectLostConnections(result, 'Publish');
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    const publications = await wf.publications();
    expect(publications).toHaveLength(before.length + 1);
    expect(publications.at(-1)).toMatchObject({ batch_id: namesFor(day).batchId });
    expect(await wf.batch(namesFor(day).batchId)).toMatchObject({ status: 'PUBLISHED' });
    await expectEndpointAnswers(wf);
  });
});

describe("the endpoint's sessions terminated while chunk INSERTs run", () => {
  const wf = useFork(fixture);
  it('fails those INSERTs as transient, the endpoint carries on, and the retried run publishes the source exactly once', async () => {
    const day = 10;
    let terminated: Promise<number> | undefined;
    wf.faults.LoadChunk = async (input, next) => {
      terminated ??= holdGate(wf.wh.pg, { table: namesFor(day).staging }).then(async (gate) => {
        await gate.waiting(2);
        // Only the endpoint's sessions in this database: the gate's own session keeps its lock until released.
        const killed = await withClient({ ...wf.wh.pg, database: 'postgres' }, async (admin) => {
          const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2', [
            wf.wh.pg.database,
            APPLICATION_NAME,
          ]);
          for (const { pid } of rows) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
          return rows.length;
        });
        await gate.release();
        return killed;
      });
      return next(input);
    };

    const result = await wf.run(inputFor(day), 'terminate-while-loading');

    expect(await terminated).toBeGreaterThanOrEqual(2);
    expect(result.status, `${caughtError(result)?.Error}: ${caughtMessage(result)}`).toBe('SUCCEEDED');
    expectLoadsResubmitted(wf, result);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(day));
    await expectEndpointAnswers(wf);
  });
});
