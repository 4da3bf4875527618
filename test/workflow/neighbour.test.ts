// A good neighbour: LoadChunk pauses while the warehouse's queues are full and
// goes on once they drain; the circuit breaker opens after consecutive transient
// failures across executions, ends new ones in Plan with one page, lets one
// through as the half-open probe after its cool-down, and closes or opens again
// on its outcome. Why: docs/decisions/good-neighbour.md
import { ExecuteStatementCommand } from '@aws-sdk/client-redshift-data';
import { describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { LOCAL_PIPELINE_USER } from '../../local/database-users.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import { holdGate } from '../support/lock-gate.ts';
import { until } from '../support/until.ts';
import { caughtError, inputFor, LIVE, namesFor, stateEvents, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

const OPTIONS = { env: { PAUSE_WHEN_QUEUED: '1', PAUSE_PROBE_INTERVAL_MS: '20', BREAKER_FAILURES: '3', BREAKER_COOL_DOWN_SECONDS: '3600' } };
const SAMPLE = { rowsPerDay: 10, sourceDays: 12, liveDays: 4 };

function named(name: string, message: string): Error {
  const error = new Error(message);
  error.name = name;
  return error;
}

const requests = (wf: Workflow) => wf.wh.api.requests();
const probeLooks = (wf: Workflow) => requests(wf).filter((r) => r.operation === 'ExecuteStatement' && /:pause-probe:/.test(r.statementName ?? '')).length;
const loadSubmits = (wf: Workflow, from = 0) =>
  requests(wf)
    .slice(from)
    .filter((r) => r.operation === 'BatchExecuteStatement' && /:load-chunk:.*:load$/.test(r.statementName ?? '')).length;

interface BreakerRow {
  state: string;
  consecutive_failures: number;
  opened_at: Date | null;
  last_error: string | null;
  probe_execution: string | null;
}
const breaker = async (wf: Workflow) => (await wf.query<BreakerRow>(`SELECT * FROM atomic_publish.circuit_breaker`))[0]!;

describe('pause probe', () => {
  const sampled = useWorkflowFixture('wf_neighbour', (wf) => wf.sample(SAMPLE), OPTIONS);
  const wf = useForkPerTest(sampled);

  it('holds every LoadChunk while a query waits in the queue, and lets the loads go once it has run', async () => {
    // A statement of the handlers' user waiting for a lock: queued, as the
    // endpoint's SYS_QUERY_HISTORY shows it (local/data-api/system-views.ts).
    await wf.query('CREATE TABLE public.queue_gate (x int)');
    await wf.query(`GRANT SELECT ON public.queue_gate TO ${quoteUser(LOCAL_PIPELINE_USER)}`);
    const gate = await holdGate(wf.wh.pg, { table: 'public.queue_gate' });
    await wf.wh.client.send(new ExecuteStatementCommand({ ...wf.wh.target, DbUser: LOCAL_PIPELINE_USER, Sql: gate.sql }));
    await gate.waiting(1);

    const running = await wf.start(inputFor(6), 'paused');
    let released: number;
    try {
      // Paused: every LoadChunk that started has looked at the queue more
      // than once (each look is one ExecuteStatement), and no load was submitted.
      await until(() => wf.loads.started.length > 0 && probeLooks(wf) > 2 * wf.loads.started.length, 'LoadChunk pausing');
      expect(loadSubmits(wf)).toBe(0);
      expect(await wf.batch(namesFor(6).batchId)).toMatchObject({ status: 'RUNNING' });
      released = requests(wf).length;
    } finally {
      await gate.release();
    }
    const result = await running.result;
    expect(result.status).toBe('SUCCEEDED');
    // Every load was submitted after the queue drained.
    expect(loadSubmits(wf, released)).toBe(loadSubmits(wf));
    expect(loadSubmits(wf)).toBeGreaterThan(0);
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(6));
  });

  it('a probe that errors is logged and the load goes ahead: one look per LoadChunk, no pause', async () => {
    // The handlers' user may no longer read the view (as on Redshift without access to a system view).
    // The endpoint installs its system views at a database's first statement: this one.
    expect((await wf.wh.run('SELECT 1')).Status).toBe('FINISHED');
    await wf.query('REVOKE SELECT ON local_redshift.sys_query_history FROM PUBLIC');
    // Only while the chunks load: the swap's wait reads the view too (domain/publish/sql/swap.ts openTransactions).
    const regrant = () => wf.query('GRANT SELECT ON local_redshift.sys_query_history TO PUBLIC');
    wf.faults.Reconcile = async (input, next) => {
      await regrant();
      return next(input);
    };
    try {
      const looks = probeLooks(wf);
      const result = await wf.run(inputFor(8), 'probe-errors');
      expect(result.status).toBe('SUCCEEDED');
      expect(probeLooks(wf) - looks).toBe(wf.loads.started.length);
      expect(wf.loads.started.length).toBeGreaterThan(0);
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(8));
    } finally {
      wf.reset();
      await regrant();
    }
  });
});

describe('circuit breaker', () => {
  const transient = (wf: Workflow) => {
    wf.faults.Reconcile = async () => {
      throw named('TransientWarehouseError', 'Data API is busy or unavailable: ActiveStatementsExceededException');
    };
  };
  /** Three executions failed by transient errors, and the breaker after each. */
  const opened = useWorkflowFixture(
    'wf_neighbour_open',
    async (wf) => {
      await wf.sample(SAMPLE);
      transient(wf);
      const runs: { result: ExecutionResult; after: BreakerRow }[] = [];
      for (const n of [1, 2, 3]) {
        const result = await wf.run(inputFor(9), `transient-${n}`);
        runs.push({ result, after: await breaker(wf) });
      }
      wf.reset();
      return { runs };
    },
    OPTIONS,
  );

  it('opens after 3 consecutive transient failures across executions', () => {
    const { runs } = opened.arranged;
    for (const [i, { result, after }] of runs.entries()) {
      const n = i + 1;
      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('TransientWarehouseError');
      expect(after).toMatchObject({ state: n < 3 ? 'closed' : 'open', consecutive_failures: n });
      if (n === 3) expect(result.alerts[0]!.message).toMatch(/Breaker: +OPEN since .* after 3 consecutive transient failure/);
    }
    expect(runs).toHaveLength(3);
    expect(runs.at(-1)!.after.last_error).toContain('ActiveStatementsExceededException');
  });

  describe('once open', () => {
    const wf = useForkPerTest(opened);

    it('ends a new execution at once in Plan with one page saying since when, after how many, the last error and the next probe', async () => {
      const result = await wf.run(inputFor(9), 'refused');
      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('CircuitOpenError');
      expect(visited(result)).not.toContain('LoadChunks');
      // Not retried: one Plan invocation.
      expect(stateEvents(result, 'StateEntered', 'Plan')).toHaveLength(1);
      expect(wf.calls.filter((c) => c.state === 'Plan')).toHaveLength(1);
      expect(result.alerts).toHaveLength(1);
      const [alert] = result.alerts;
      expect(alert!.subject).toBe('atomic-publish: sales_order_lines not run (circuit breaker open)');
      const openedAt = (await breaker(wf)).opened_at!;
      expect(alert!.message).toContain(`open since ${new Date(openedAt.getTime() - openedAt.getTimezoneOffset() * 60_000).toISOString()}`);
      expect(alert!.message).toContain('failed 3 consecutive run(s) with transient errors (opens at 3)');
      expect(alert!.message).toContain('last error: TransientWarehouseError: Data API is busy or unavailable: ActiveStatementsExceededException');
      expect(alert!.message).toMatch(/The next probe may run from \d{4}-\d\d-\d\dT/);
      // It changed nothing: no failure counted, the breaker still open.
      expect(await breaker(wf)).toMatchObject({ state: 'open', consecutive_failures: 3 });
    });

    it('after the cool-down, a probe that fails opens it again', async () => {
      await wf.query(`UPDATE atomic_publish.circuit_breaker SET opened_at = opened_at - interval '2 hours'`);
      const before = (await breaker(wf)).opened_at!;
      transient(wf);
      const result = await wf.run(inputFor(9), 'failed-probe');
      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('TransientWarehouseError');
      // It ran as the probe (past Plan), failed, and the breaker opened anew.
      expect(visited(result)).toContain('Reconcile');
      const now = await breaker(wf);
      expect(now).toMatchObject({ state: 'open', consecutive_failures: 4, probe_execution: null });
      expect(now.opened_at!.getTime()).toBeGreaterThan(before.getTime());
      wf.reset();
      expect(caughtError(await wf.run(inputFor(9), 'refused-again'))?.Error).toBe('CircuitOpenError');
    });

    it('after the cool-down, a probe that succeeds closes it', async () => {
      await wf.query(`UPDATE atomic_publish.circuit_breaker SET opened_at = opened_at - interval '2 hours'`);
      const result = await wf.run(inputFor(9), 'probe');
      expect(result.status).toBe('SUCCEEDED');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(9));
      expect(await breaker(wf)).toMatchObject({ state: 'closed', consecutive_failures: 0, probe_execution: null });
      // Closed: the next execution runs (a replay, here).
      expect((await wf.run(inputFor(9), 'after-probe')).status).toBe('SUCCEEDED');
    });
  });
});
