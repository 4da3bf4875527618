// Alerts that tell the truth: for each kind of failure the workflow
// produces, made to happen for real through the synthesized state machine,
// the page says what readers see now (matching the live table and the
// manifest) and what to do next. A publish conflict is paged in
// publish-failure.test.ts, a failure at every step boundary and after
// every statement in fault-matrix.test.ts; both check the same two parts.
// The sample warehouse is arranged once; every failure is made to happen
// on a copy of its own (test/support/workflow.ts fixture.fork).
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { applyPipelineSetup, LOCAL_PIPELINE_USER } from '../../local/database-users.ts';
import { newClient } from '../../local/pg-clients.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { addBadSourceRow, removeBadSourceRows, sampleDay } from '../../local/sample-data.ts';
import { caughtError, inputFor, LIVE, PIPELINE, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const DAY = 5;
const RERUN = JSON.stringify(inputFor(DAY));

const fixture = useWorkflowFixture(
  'wf_alerts',
  async (wf) => {
    await wf.sample({ rowsPerDay: 5, sourceDays: DAY + 1, liveDays: 3 });
  },
  { env: { PUBLISH_SNAPSHOT_WAIT_MS: '100' } },
);

/** Runs `fn` on a copy of the sample warehouse of its own (endpoint, runner, outbox), closed afterwards. */
async function onFork<T>(fn: (wf: Workflow) => Promise<T>): Promise<T> {
  const wf = await fixture.fork();
  try {
    return await fn(wf);
  } finally {
    await wf.close();
  }
}

/** The page's line that starts with `label`. */
function line(result: ExecutionResult, label: string): string {
  expect(result.alerts, 'one page').toHaveLength(1);
  return result.alerts[0]!.message.split('\n').find((l) => l.startsWith(label)) ?? `(no ${label} line)`;
}

interface Kind {
  readonly kind: string;
  readonly error: string;
  readonly input?: unknown;
  /** Arranges the failure on `wf`; returns what undoes it after the run. */
  readonly arrange: (wf: Workflow) => Promise<() => Promise<void>>;
  readonly readers: RegExp;
  readonly next: RegExp;
}

const nothing = async () => async () => undefined;
const untouchedBeforeAtomicPublish = new RegExp(`^Live table: ${LIVE} untouched; readers still see the version before atomic-publish\\.$`);
const rerunWith = (advice: string) => new RegExp(`^Next: +${advice}.*start an execution with input ${RERUN.replace(/[{}.]/g, '\\$&')}`);

const KINDS: Kind[] = [
  {
    kind: 'bad input',
    error: 'ValidationError',
    input: { pipeline: PIPELINE.name, to: 'next tuesday' },
    arrange: nothing,
    readers: /^Live table: untouched; the run stopped in Plan, before loading anything\.$/,
    next: /^Next: +correct the execution input \(the error says what is wrong\) and start a new execution; nothing was written\.$/,
  },
  {
    kind: 'a missing privilege',
    error: 'MissingPrivilegeError',
    arrange: async (wf) => {
      await wf.query(`REVOKE SELECT ON source.sales_order_lines FROM ${quoteUser(LOCAL_PIPELINE_USER)}`);
      return () => wf.withClient((client) => applyPipelineSetup(client, PIPELINE));
    },
    readers: /^Live table: untouched; the run stopped in Plan, before loading anything\./,
    next: rerunWith(`have a superuser run the setup SQL the error names \\(npm run setup-sql -- --pipeline ${PIPELINE.name}\\)`),
  },
  {
    kind: 'the source SQL failing in LoadChunk',
    error: 'WarehouseError',
    arrange: async (wf) => {
      await wf.withClient((client) => addBadSourceRow(client, sampleDay(2)));
      return () => wf.withClient((client) => removeBadSourceRows(client));
    },
    readers: untouchedBeforeAtomicPublish,
    next: rerunWith('fix the cause the error names'),
  },
  {
    kind: 'the Reconcile gate',
    error: 'CheckFailedError',
    arrange: async (wf) => {
      wf.faults.Reconcile = async (input, next) => {
        await wf.query(`INSERT INTO source.sales_order_lines VALUES (900000001, 1, $1::timestamp + interval '1 hour', 1, 1, 1, 5.00)`, [
          sampleDay(1).toISOString().slice(0, 19),
        ]);
        return next(input);
      };
      return async () => {
        await wf.query('DELETE FROM source.sales_order_lines WHERE order_id = 900000001');
      };
    },
    readers: untouchedBeforeAtomicPublish,
    next: rerunWith('fix the source rows the check names \\(atomic_publish\\.check_results holds them\\)'),
  },
  {
    kind: 'a view the functions cannot re-point',
    error: 'DependentViewError',
    arrange: async (wf) => {
      await wf.query(`CREATE VIEW analytics.sales_dashboard AS SELECT order_id, amount FROM ${LIVE}`);
      return async () => {
        await wf.query('DROP VIEW analytics.sales_dashboard');
      };
    },
    readers: untouchedBeforeAtomicPublish,
    next: rerunWith("change the view the error names \\(or give the functions' user its ownership\\)"),
  },
  {
    kind: 'snapshot-wait give-up (a transaction older than the load never ends, every retry)',
    error: 'TransientWarehouseError',
    arrange: async (wf) => {
      const holder: pg.Client = newClient(wf.wh.pg);
      await holder.connect();
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query('SELECT count(*) FROM source.sales_order_lines');
      return async () => {
        await holder.query('COMMIT');
        await holder.end();
      };
    },
    readers: untouchedBeforeAtomicPublish,
    next: /^Next: +the warehouse kept failing after every retry \(a lock held, snapshots not ending, unreachable: the error says which\); once that has ended, start an execution with input /,
  },
  {
    kind: 'a Lambda time-out (as the Catch sees one)',
    error: 'Sandbox.Timedout',
    arrange: async (wf) => {
      wf.faults.Reconcile = async () => {
        throw Object.assign(new Error('Task timed out after 900.00 seconds'), { name: 'Sandbox.Timedout' });
      };
      return async () => undefined;
    },
    readers: untouchedBeforeAtomicPublish,
    next: rerunWith('a step outran its time limit'),
  },
  {
    kind: 'a failure after Publish committed',
    error: 'WarehouseError',
    arrange: async (wf) => {
      wf.faults.EmitMetrics = async () => {
        throw Object.assign(new Error('emit-metrics: the lag query failed'), { name: 'WarehouseError' });
      };
      return async () => undefined;
    },
    readers: new RegExp(
      `^Live table: ${LIVE} was published by this batch \\(publication 1, published at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d(\\.\\d+)? UTC\\); a step after publishing failed\\.$`,
    ),
    next: /^Next: +nothing to publish again: readers see this batch\..* ends at NothingToPublish\.$/,
  },
];

describe('every page says what readers see now and what to do next', () => {
  for (const k of KINDS) {
    it(`${k.kind}: ${k.error}`, () =>
      onFork(async (wf) => {
        const undo = await k.arrange(wf);
        let result: ExecutionResult;
        try {
          result = await wf.run(k.input ?? inputFor(DAY), `alert-${k.error}-${KINDS.indexOf(k)}`);
          await wf.quiesce();
        } finally {
          wf.reset();
          await undo();
        }
        expect(result.status).toBe('FAILED');
        expect(caughtError(result)?.Error).toBe(k.error);
        expect(result.alerts[0]!.subject).toBe(`atomic-publish: ${PIPELINE.name} failed (${k.error})`);
        expect(line(result, 'Live table:')).toMatch(k.readers);
        expect(line(result, 'Next:')).toMatch(k.next);
        // What the page says readers see is what they see.
        const published = (await wf.schemaExists('atomic_publish')) ? await wf.publications() : [];
        expect(published.length > 0).toBe(/published by this batch/.test(line(result, 'Live table:')));
      }));
  }

  it('RecordFailure itself failing: the plainer page (DescribeFailure) claims nothing about the live table it did not read, and says where to look', () =>
    onFork(async (wf) => {
      // A publication is live before the run: what the page must not claim to know, and what the failed run leaves as it was.
      const earlier = await wf.run(inputFor(DAY), 'alert-describe-failure-earlier');
      expect(earlier.status, `${earlier.error}: ${earlier.cause}`).toBe('SUCCEEDED');
      wf.faults.Reconcile = async () => {
        throw Object.assign(new Error('reconcile failed'), { name: 'WarehouseError' });
      };
      wf.faults.RecordFailure = async () => {
        throw Object.assign(new Error('the manifest cannot be written'), { name: 'WarehouseError' });
      };
      const result = await wf.run(inputFor(DAY + 1), 'alert-describe-failure');
      wf.reset();
      expect(result.status).toBe('FAILED');
      expect(result.alerts).toHaveLength(1);
      const { message } = result.alerts[0]!;
      expect(message).not.toMatch(/untouched|unchanged/);
      expect(message).toContain('the live table may already be published if the run failed after Publish');
      expect(message).toContain('See atomic_publish.batches, atomic_publish.batch_attempts and the execution history');
      expect(message).toContain('Next: read the batch status there; unless it is PUBLISHED, start an execution with the same input');
      expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(DAY));
    }));
});
