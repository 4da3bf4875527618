// One round trip per chunk: a chunk's load is one transaction (its rows
// and its record commit together), submitted once and waited for with long
// polls. A re-run after the process running the state machine was killed
// while chunk loads still ran in the database finds those loads (Plan lists
// them once) and waits for them: nothing cleared, nothing loaded twice. The sample warehouse is arranged once;
// each describe acts on a copy of its own.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { loadStatementPrefix } from '../../domain/load-chunk/sql/load-chunk.ts';
import { REATTACHED_MESSAGE } from '../../functions/load-chunk/index.ts';
import { PROJECT_ROOT } from '../../lib/project.ts';
import type { DataApiRequest } from '../../local/data-api/server.ts';
import { holdGate } from '../support/lock-gate.ts';
import { until } from '../support/until.ts';
import { inputFor, LIVE, namesFor, PIPELINE, useFork, useWorkflowFixture, WORKFLOW_TIME_SCALE, type Workflow } from '../support/workflow.ts';

const TO_DAY = 4;
/** One chunk a day from the pipeline's history start, all loading at once (maxConcurrency 4). */
const CHUNKS = 4;
const ROWS_PER_DAY = 30;
const { batchId, staging } = namesFor(TO_DAY);
const prefix = loadStatementPrefix(PIPELINE.name, batchId);

const fixture = useWorkflowFixture('wf_chunk_load', async (wf) => {
  await wf.sample({ rowsPerDay: ROWS_PER_DAY, sourceDays: 6, liveDays: 2 });
});

/** The requests the endpoint answered for each chunk load, by chunk and operation. */
function loadRequests(requests: readonly DataApiRequest[]): Map<string, Record<string, number>> {
  const byName = new Map<string, Record<string, number>>();
  for (const r of requests) {
    if (!r.statementName?.startsWith(prefix) || !r.statementName.endsWith(':load')) continue;
    const counts = byName.get(r.statementName) ?? {};
    counts[r.operation] = (counts[r.operation] ?? 0) + 1;
    byName.set(r.statementName, counts);
  }
  return byName;
}

async function chunkLoads(wf: Workflow): Promise<[number, number, number][]> {
  const rows = await wf.query<{ chunk_index: number; loads: string; rows_written: string }>(
    'SELECT chunk_index, loads, rows_written FROM atomic_publish.chunk_state WHERE batch_id = $1 ORDER BY chunk_index',
    [batchId],
  );
  return rows.map((r) => [r.chunk_index, Number(r.loads), Number(r.rows_written)]);
}

describe('a chunk load', () => {
  const wf = useFork(fixture);

  it('is one submitted statement and one long poll: two requests, and one transaction', async () => {
    const before = wf.wh.api.requests().length;

    const result = await wf.run(inputFor(TO_DAY), `requests-${Date.now()}`);

    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    const perLoad = loadRequests(wf.wh.api.requests().slice(before));
    expect(perLoad.size).toBe(CHUNKS);
    for (const [name, counts] of perLoad) {
      // Submit and polls: the BatchExecuteStatement and one DescribeStatement that waited for it.
      expect((counts.BatchExecuteStatement ?? 0) + (counts.DescribeStatement ?? 0), name).toBeLessThanOrEqual(2);
      expect(counts, name).toEqual({ BatchExecuteStatement: 1, DescribeStatement: 1 });
    }
    expect(await chunkLoads(wf)).toEqual([0, 1, 2, 3].map((i) => [i, 1, ROWS_PER_DAY]));
  });
});

describe('a re-run after the runner was killed while chunk loads still ran', () => {
  const wf = useFork(fixture);

  it('waits for those loads instead of clearing or loading the chunks again: every row once', async () => {
    const before = wf.wh.api.requests().length;
    let logsBefore = 0;
    const outbox = join(mkdtempSync(join(tmpdir(), 'chunk-load-')), 'alerts.jsonl');
    const execution = `killed-loads-${Date.now()}`;
    const input = inputFor(TO_DAY);
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(PROJECT_ROOT, 'test', 'support', 'killable-run.ts'),
        wf.wh.endpoint,
        wf.wh.pg.database,
        JSON.stringify(input),
        execution,
        String(WORKFLOW_TIME_SCALE),
        outbox,
        '5000',
        'load-chunk',
      ],
      { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, POWERTOOLS_LOG_LEVEL: 'WARN' } },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const lines = createInterface({ input: child.stdout! });
    for await (const line of lines) if (line === 'load-chunk-starting') break;
    // Plan has created staging: every chunk's INSERT now waits at the gate, inside its load's transaction.
    const gate = await holdGate(wf.wh.pg, { table: staging });
    try {
      child.stdin!.write('go\n');
      await gate.waiting(CHUNKS);
      child.kill('SIGKILL');
      await exited;
      expect(child.signalCode).toBe('SIGKILL');

      // The re-run takes the killed execution's name: its pipeline lease is held by that execution.
      logsBefore = wf.runner.logs.length;
      const rerun = await wf.start(input, execution);
      await until(
        () => wf.runner.logs.filter((l) => l.message === REATTACHED_MESSAGE).length === CHUNKS,
        'every LoadChunk of the re-run waiting for the load of the killed run',
      );
      // While the killed run's loads still run, the re-run has submitted nothing for their chunks.
      for (const [name, counts] of loadRequests(wf.wh.api.requests().slice(before)))
        expect(counts.BatchExecuteStatement, `${name} ${JSON.stringify(counts)}`).toBe(1);
      await gate.release();
      const result = await rerun.result;
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    } finally {
      await gate.release();
    }

    // One load per chunk in all, by the killed run: none cleared, none doubled.
    const perLoad = loadRequests(wf.wh.api.requests().slice(before));
    expect([...perLoad.values()].map((c) => c.BatchExecuteStatement)).toEqual(Array(CHUNKS).fill(1));
    const rerunLogs = wf.runner.logs.slice(logsBefore);
    expect(rerunLogs.filter((l) => l.message === 'chunk loaded')).toEqual([]);
    expect(
      rerunLogs
        .filter((l) => l.message === 'chunk already loaded; skipped')
        .map((l) => l.chunk)
        .sort(),
    ).toEqual([0, 1, 2, 3]);
    expect(await chunkLoads(wf)).toEqual([0, 1, 2, 3].map((i) => [i, 1, ROWS_PER_DAY]));
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(TO_DAY));
    expect(await wf.publications()).toHaveLength(1);
  });
});
