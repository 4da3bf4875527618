// What the logs may carry: names, ids, bounds, counts, never a secret or a row's
// value. Lambda credentials planted in the environment and a sentinel source row
// are looked for, at DEBUG, in every log line of a run that succeeds and of one
// failing on that row, in its alert and in its execution history (an alert may
// name a business key, never the rest of the row). Why: docs/decisions/logs-and-traces.md
import { beforeAll, describe, expect, it } from 'vitest';
import { logger } from '../../functions/commons/powertools.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { caughtMessage, inputFor, useFork, useWorkflowFixture, type Workflow } from '../support/workflow.ts';

const SECRET_KEY = 'planted-secret-access-key-5d1f0c2e9b';
const SESSION_TOKEN = 'planted-session-token-8a7e3b61c4';
/** The sentinel row: its business key (order_id, line_no) and values no other row or log field has. */
const SENTINEL = { orderId: 4242424242, lineNo: 7, productId: 86420975, quantity: 918273, amount: '77123.45' };
const SENTINEL_VALUES = [String(SENTINEL.productId), String(SENTINEL.quantity), SENTINEL.amount];
const SENTINEL_DAY = 3;

/** The captured log lines of `wf`'s runner, as JSON text. */
const logText = (wf: Workflow) => wf.runner.logs.map((line) => JSON.stringify(line));

async function insertSentinel(wf: Workflow, customerId: number | null): Promise<void> {
  await wf.withClient((client) =>
    client.query(`INSERT INTO source.sales_order_lines VALUES ($1, $2, $3::timestamp + interval '12 hours', $4, $5, $6, $7)`, [
      SENTINEL.orderId,
      SENTINEL.lineNo,
      sampleDay(SENTINEL_DAY).toISOString().slice(0, 19),
      customerId,
      SENTINEL.productId,
      SENTINEL.quantity,
      SENTINEL.amount,
    ]),
  );
}

const fixture = useWorkflowFixture(
  'wf_log_hygiene',
  async (wf) => {
    await wf.sample({ rowsPerDay: 10, sourceDays: 8, liveDays: 2 });
  },
  { env: { AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_SESSION_TOKEN: SESSION_TOKEN } },
);
beforeAll(() => {
  // Every line the handlers can write (the workflow tests' default is WARN).
  logger.setLogLevel('DEBUG');
});

describe('the logs of a successful run', () => {
  const wf = useFork(fixture);
  let published: ExecutionResult;
  let publishedLogs: string[];
  let sentinelPublished: { product_id: number } | undefined;
  beforeAll(async () => {
    await insertSentinel(wf, 8_000_001);
    published = await wf.run(inputFor(6), 'hygiene-published');
    publishedLogs = logText(wf);
    [sentinelPublished] = await wf.query<{ product_id: number }>('SELECT product_id FROM analytics.sales_order_lines WHERE order_id = $1', [SENTINEL.orderId]);
  });

  it('are many, at DEBUG, from every step (the scan below has something to scan)', () => {
    expect(published.status, `${published.error}: ${published.cause}`).toBe('SUCCEEDED');
    expect(publishedLogs.length).toBeGreaterThan(10);
    expect(publishedLogs.some((line) => line.includes('"chunk loaded"'))).toBe(true);
  });

  it('carry no planted secret', () => {
    expect(process.env.AWS_SECRET_ACCESS_KEY).toBe(SECRET_KEY);
    for (const line of publishedLogs) {
      expect(line).not.toContain(SECRET_KEY);
      expect(line).not.toContain(SESSION_TOKEN);
    }
  });

  it('carry no value of the sentinel row, which was published', () => {
    expect(sentinelPublished?.product_id).toBe(SENTINEL.productId);
    for (const line of publishedLogs) for (const value of SENTINEL_VALUES) expect(line).not.toContain(value);
  });

  it('each carry the pipeline and the execution; each LoadChunk line its batch and its own chunk interval', () => {
    const steps = publishedLogs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((line) => line.function_name !== undefined);
    expect(steps.length).toBeGreaterThan(0);
    for (const line of steps) {
      expect(line, String(line.message)).toMatchObject({
        pipeline: 'sales_order_lines',
        executionId: published.executionId,
        executionName: 'hygiene-published',
      });
    }
    const loads = steps.filter((line) => line.message === 'chunk loaded');
    expect(loads.map((line) => line.chunkIndex).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // Chunks load at once in one process locally: each line has its own invocation's keys (local/lambda-sandbox.ts).
    for (const line of loads) {
      expect(line).toMatchObject({
        chunkIndex: line.chunk,
        chunkStart: line.start,
        chunkEnd: line.end,
        batchId: expect.any(String),
        batchFrom: expect.any(String),
        batchTo: expect.any(String),
      });
    }
  });
});

describe('a run failing on the sentinel row', () => {
  const wf = useFork(fixture);
  let failed: ExecutionResult;
  let failedLogs: string[];
  beforeAll(async () => {
    // The same row with no customer: the live table (and staging, LIKE live)
    // refuses it, and PostgreSQL's error quotes the whole failing row.
    await wf.withClient((client) => client.query('ALTER TABLE source.sales_order_lines ALTER COLUMN customer_id DROP NOT NULL'));
    await insertSentinel(wf, null);
    failed = await wf.run(inputFor(7), 'hygiene-failed');
    await wf.quiesce();
    failedLogs = logText(wf);
  });

  it('fails in the load, on the database error that names the row', () => {
    expect(failed.status).toBe('FAILED');
    expect(caughtMessage(failed)).toMatch(/violates not-null constraint/);
    expect(caughtMessage(failed)).toContain('Failing row contains (<redacted>)');
  });

  it('logs no value of the row and no secret', () => {
    expect(failedLogs.some((line) => line.includes('"run failed"'))).toBe(true);
    for (const line of failedLogs) {
      for (const value of [...SENTINEL_VALUES, SECRET_KEY, SESSION_TOKEN]) expect(line).not.toContain(value);
    }
  });

  it('pages, and neither the page nor the execution history carries a value of the row', () => {
    const alerts = JSON.stringify(wf.runner.alerts);
    expect(alerts).toContain('violates not-null constraint');
    const history = JSON.stringify(failed.events);
    for (const value of SENTINEL_VALUES) {
      expect(alerts).not.toContain(value);
      expect(history).not.toContain(value);
    }
  });
});
