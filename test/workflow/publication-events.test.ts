// Publication events through the state machine, put with the real EventBridge
// client on a local endpoint that can refuse an entry as throttled: one event per
// publication (a rollback's too), under one id however often it is sent; a failed
// run and a replay send none; a restatement equal to live sends none; an event
// never sent is sent by the freshness monitor after the grace, at most its cap,
// oldest first. Why: docs/decisions/every-publications-event-delivered.md
import { GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import { beforeEach, describe, expect, it } from 'vitest';
import { TransientWarehouseError } from '../../domain/errors.ts';
import { PublicationEventError } from '../../domain/publication-events/publication-event.ts';
import { monitorSetupStatements } from '../../domain/setup/sql/setup.ts';
import { parseWarehouseTime } from '../../domain/time.ts';
import { REDELIVERY_GRACE_MS } from '../../functions/commons/event-delivery.ts';
import { publicationEventSender } from '../../functions/commons/publication-event-sender.ts';
import { DEFAULT_POLL } from '../../functions/commons/warehouse.ts';
import { monitorFreshness } from '../../functions/freshness-monitor/index.ts';
import { localCloudWatchClient, localEventsEnvironment, localWarehouse } from '../../local/aws-clients.ts';
import { type LocalCloudWatchApi, startLocalCloudWatchApi } from '../../local/cloudwatch-api.ts';
import { ensureLocalUser } from '../../local/database-users.ts';
import { type LocalEventBridgeApi, type RecordedEvent, startLocalEventBridgeApi } from '../../local/eventbridge-api.ts';
import type { ExecutionResult } from '../../local/runner.ts';
import { sampleDay } from '../../local/sample-data.ts';
import { SnsOutbox } from '../../local/sns-outbox.ts';
import { caughtMessage, inputFor, LIVE, PIPELINE, stateEvents, type TaskOverride, useWorkflowFixture, visited, type Workflow } from '../support/workflow.ts';

/** Published before every test: days 8, 9 and 10, each event sent (to the arranging runner's own EventBridge endpoint). */
const fixture = useWorkflowFixture('wf_pubevents', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 14, liveDays: 4 });
  for (const day of [8, 9, 10]) {
    const result = await wf.run(inputFor(day), `events-arranged-${day}`);
    if (result.status !== 'SUCCEEDED') throw new Error(`arranging: the publication of day ${day} ended ${result.status}: ${caughtMessage(result)}`);
  }
});

/** The test's own: a copy of the arranged warehouse whose runner puts events on `bus`, and the monitor's CloudWatch endpoint. */
let wf: Workflow;
let bus: LocalEventBridgeApi;
let cw: LocalCloudWatchApi;
/** How many of the next entries the endpoint refuses as throttled. */
let throttle = 0;
/** While set, the endpoint refuses every entry (an outage longer than EmitMetrics' retries); each refused entry is kept. */
let refuseAll = false;
const refused: { detailType: string; detail: Record<string, unknown> }[] = [];

beforeEach(async () => {
  throttle = 0;
  refuseAll = false;
  refused.length = 0;
  const ownBus = await startLocalEventBridgeApi({
    refuse: (entry) => {
      if (refuseAll) {
        refused.push({ detailType: entry.detailType, detail: entry.detail });
        return { errorCode: 'InternalFailure', errorMessage: 'the service is unavailable' };
      }
      return throttle > 0 ? ((throttle -= 1), { errorCode: 'ThrottlingException', errorMessage: 'Rate exceeded' }) : undefined;
    },
  });
  const ownWf = await fixture.fork({ env: localEventsEnvironment(ownBus.endpoint) }).catch(async (error: unknown) => {
    await ownBus.close();
    throw error;
  });
  const ownCw = await startLocalCloudWatchApi({ alarms: [], outbox: new SnsOutbox(ownWf.outboxFile) }).catch(async (error: unknown) => {
    await ownWf.close();
    await ownBus.close();
    throw error;
  });
  [bus, wf, cw] = [ownBus, ownWf, ownCw];
  return async () => {
    await ownWf.close();
    await ownBus.close();
    await ownCw.close();
  };
});

const MONITOR_USER = 'IAMR:atomic-publish-local-monitor';

/**
 * The freshness monitor at `now`, as its schedule runs it: its own database
 * user with exactly its setup's grants, the real clients on the local
 * endpoints. Returns the events it put.
 */
async function monitorAt(now: number, limit?: number): Promise<{ redelivered: string[]; events: RecordedEvent[] }> {
  await ensureLocalUser(wf.wh.pg, MONITOR_USER);
  for (const sql of monitorSetupStatements(PIPELINE, { database: wf.wh.pg.database, user: MONITOR_USER })) await wf.query(sql);
  const before = bus.entries.length;
  const report = await monitorFreshness({
    warehouse: localWarehouse(wf.wh.endpoint, wf.wh.pg.database, DEFAULT_POLL, MONITOR_USER),
    cloudWatch: localCloudWatchClient(cw.endpoint),
    now: new Date(now),
    pipelines: [PIPELINE],
    events: { send: publicationEventSender(localEventsEnvironment(bus.endpoint)), ...(limit === undefined ? {} : { limit }) },
  });
  return { redelivered: report.redelivered ?? [], events: bus.entries.slice(before) };
}

/** When the manifest says publication `seq`'s event was sent (null: never). */
async function eventSentAt(seq: number): Promise<Date | null> {
  return (
    await wf.query<{ at: Date | null }>(`SELECT event_sent_at AS at FROM atomic_publish.publications WHERE pipeline = $1 AND seq = $2`, [PIPELINE.name, seq])
  )[0]!.at;
}

/** Runs `input` and returns the execution and the events it put. */
async function eventsOf(input: unknown, name: string): Promise<{ result: ExecutionResult; events: RecordedEvent[] }> {
  const before = bus.entries.length;
  try {
    const result = await wf.run(input, name);
    return { result, events: bus.entries.slice(before) };
  } finally {
    wf.reset();
  }
}

/** A step whose first invocation runs, then fails with `error` as if its answer were lost; the retry runs it again. */
function failsOnceAfterRunning(error: Error): { override: TaskOverride; calls: () => number } {
  let calls = 0;
  return {
    override: async (input, next) => {
      calls += 1;
      const answer = await next(input);
      if (calls === 1) throw error;
      return answer;
    },
    calls: () => calls,
  };
}

/** The manifest's row of publication `seq`. */
async function publication(seq: number): Promise<Record<string, unknown>> {
  return (await wf.publications()).find((p) => Number(p.seq) === seq)!;
}

/** The batch Plan handed the later steps. */
function plannedBatch(result: ExecutionResult): { batchId: string; from: string; to: string } {
  return (stateEvents(result, 'StateExited', 'Plan')[0]!.state!.output as { plan: { batch: { batchId: string; from: string; to: string } } }).plan.batch;
}

describe('publication events', () => {
  it('a publish puts exactly one Publication Published event on the default bus, with the facts the manifest recorded', async () => {
    const { result, events } = await eventsOf(inputFor(11), 'events-publish');

    expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
    expect(events).toHaveLength(1);
    const seq = Number((await wf.publications()).at(-1)!.seq);
    const row = await publication(seq);
    const batch = plannedBatch(result);
    expect(row.batch_id).toBe(batch.batchId);
    const [event] = events;
    expect([event!.bus, event!.source, event!.detailType]).toEqual(['default', 'atomic-publish', 'Publication Published']);
    expect(event!.detail).toEqual({
      eventId: `${PIPELINE.name}:${seq}`,
      pipeline: PIPELINE.name,
      batchId: batch.batchId,
      interval: { from: batch.from, to: batch.to },
      rows: Number(row.rows_published),
      publication: seq,
      publishedAt: expect.any(String),
      liveTable: LIVE,
      publishMode: 'swap',
    });
    const answered = (stateEvents(result, 'StateExited', 'Publish')[0]!.state!.output as { publish: { publishedAt: string } }).publish.publishedAt;
    expect(event!.detail.publishedAt).toBe(parseWarehouseTime(answered).toISOString());
    expect(Number(row.rows_published)).toBeGreaterThan(0);
    expect(await eventSentAt(seq), 'the event marked sent in the manifest').not.toBeNull();
  });

  it('a Publish retried after its answer was lost publishes once and puts one event', async () => {
    const publish = failsOnceAfterRunning(new TransientWarehouseError('the answer of a committed publish was lost'));
    wf.faults.Publish = publish.override;
    const { result, events } = await eventsOf(inputFor(11), 'events-publish-retried');

    expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
    expect(publish.calls()).toBe(2);
    const latest = (await wf.publications()).at(-1)!;
    expect(latest.batch_id).toBe(plannedBatch(result).batchId);
    expect(events.map((e) => e.detail.eventId)).toEqual([`${PIPELINE.name}:${Number(latest.seq)}`]);
  });

  it('a retried EmitMetrics sends the same event again under the same id: at least once, one after deduping on eventId', async () => {
    const emit = failsOnceAfterRunning(new PublicationEventError('the step failed after the event was put'));
    wf.faults.EmitMetrics = emit.override;
    const { result, events } = await eventsOf(inputFor(11), 'events-emit-retried');

    expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
    expect(emit.calls()).toBe(2);
    expect(events).toHaveLength(2);
    expect(events[1]!.detail).toEqual(events[0]!.detail);
    expect(events[0]!.id).not.toBe(events[1]!.id);
    const latest = (await wf.publications()).at(-1)!;
    expect(new Set(events.map((e) => e.detail.eventId))).toEqual(new Set([`${PIPELINE.name}:${Number(latest.seq)}`]));
  });

  it('an event EventBridge refuses (throttled) is sent by the retried EmitMetrics: one event, the publish counted once', async () => {
    throttle = 1;
    const { result, events } = await eventsOf(inputFor(11), 'events-throttled');

    expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
    expect(throttle).toBe(0);
    expect(stateEvents(result, 'StateEntered', 'EmitMetrics')).toHaveLength(1);
    const latest = (await wf.publications()).at(-1)!;
    expect(events.map((e) => e.detail.eventId)).toEqual([`${PIPELINE.name}:${Number(latest.seq)}`]);
    expect(result.metrics.filter((m) => 'Published' in m.values).map((m) => m.values.Published)).toEqual([1]);
  });

  it('a rollback puts one Publication Rolled Back event naming the publication it undid', async () => {
    const undone = Number((await wf.publications()).at(-1)!.seq);
    const { result, events } = await eventsOf({ pipeline: PIPELINE.name, rollback: {} }, 'events-rollback');

    expect(result.status, caughtMessage(result)).toBe('SUCCEEDED');
    const row = (await wf.publications()).at(-1)!;
    expect(Number(row.rollback_of)).toBe(undone);
    expect(events).toHaveLength(1);
    expect(events[0]!.detailType).toBe('Publication Rolled Back');
    expect(events[0]!.detail).toMatchObject({
      eventId: `${PIPELINE.name}:${Number(row.seq)}`,
      batchId: row.batch_id,
      publication: Number(row.seq),
      rollbackOf: undone,
      liveTable: LIVE,
    });
    expect(await eventSentAt(Number(row.seq)), 'the event marked sent in the manifest').not.toBeNull();
  });

  it('a run that fails before publishing, and a replay of a published batch, put no event', async () => {
    const publications = (await wf.publications()).length;
    wf.faults.Reconcile = async () => {
      throw Object.assign(new Error('a check failed'), { name: 'CheckFailedError' });
    };
    const failed = await eventsOf(inputFor(12), 'events-failed');
    expect(failed.result.status).toBe('FAILED');
    expect(failed.events).toEqual([]);

    const replay = await eventsOf(inputFor(8), 'events-replay');
    expect(replay.result.status, caughtMessage(replay.result)).toBe('SUCCEEDED');
    expect(replay.events).toEqual([]);
    expect((await wf.publications()).length).toBe(publications);
  });

  it('a restatement that changed rows says which restatement it is; one that changed nothing puts no event', async () => {
    // A source correction inside the interval published last (day 10's batch is the one live).
    await wf.query(
      `UPDATE source.sales_order_lines SET quantity = quantity + 1
        WHERE (order_id, line_no) IN (SELECT order_id, line_no FROM source.sales_order_lines
                                       WHERE ordered_at >= $1 AND ordered_at < $2 ORDER BY order_id, line_no LIMIT 2)`,
      [sampleDay(3).toISOString().slice(0, 19), sampleDay(4).toISOString().slice(0, 19)],
    );
    const restated = await eventsOf({ ...inputFor(10), restate: true }, 'events-restated');

    expect(restated.result.status, caughtMessage(restated.result)).toBe('SUCCEEDED');
    const row = (await wf.publications()).at(-1)!;
    expect(restated.events.map((e) => [e.detailType, e.detail.eventId, e.detail.batchId, e.detail.restatement])).toEqual([
      ['Publication Published', `${PIPELINE.name}:${Number(row.seq)}`, row.batch_id, 1],
    ]);

    const unchanged = await eventsOf({ ...inputFor(10), restate: true }, 'events-restated-unchanged');
    expect(unchanged.result.status, caughtMessage(unchanged.result)).toBe('SUCCEEDED');
    expect(visited(unchanged.result).at(-1)).toBe('Superseded');
    expect(unchanged.events).toEqual([]);
  });

  it('an event never sent (the run failed after its publish) is sent by the freshness monitor once the grace is over: the same id and detail, once', async () => {
    refuseAll = true;
    let failed: Awaited<ReturnType<typeof eventsOf>>;
    try {
      failed = await eventsOf(inputFor(13), 'events-never-sent');
    } finally {
      refuseAll = false;
    }
    expect(failed.result.status).toBe('FAILED');
    expect(failed.events).toEqual([]);
    const row = (await wf.publications()).at(-1)!;
    const seq = Number(row.seq);
    expect(row.batch_id, 'the batch was published before the event failed').toBe(plannedBatch(failed.result).batchId);
    expect(await eventSentAt(seq)).toBeNull();
    // What EmitMetrics sent on every attempt: one event, always the same.
    expect(refused.length).toBeGreaterThan(1);
    expect(new Set(refused.map((r) => JSON.stringify(r)))).toEqual(new Set([JSON.stringify(refused[0])]));
    expect(refused[0]!.detail.eventId).toBe(`${PIPELINE.name}:${seq}`);

    // The re-run finds the batch published: nothing to publish, no event.
    const rerun = await eventsOf(inputFor(13), 'events-never-sent-rerun');
    expect(rerun.result.status, caughtMessage(rerun.result)).toBe('SUCCEEDED');
    expect(visited(rerun.result).at(-1)).toBe('NothingToPublish');
    expect(rerun.events).toEqual([]);

    // Within the grace the monitor leaves it to the run; after it, it sends it: only it, every earlier publication's having been marked sent.
    const publishedAt = (row.published_at as Date).getTime();
    // While EventBridge still refuses: the metrics are written all the same, the invocation fails naming the pipeline, the row stays unsent.
    refuseAll = true;
    try {
      await expect(monitorAt(publishedAt + REDELIVERY_GRACE_MS + 30_000)).rejects.toThrow(
        new RegExp(`^publication events not redelivered for 1 pipeline\\(s\\): ${PIPELINE.name} \\(PublicationEventError: .*InternalFailure`),
      );
    } finally {
      refuseAll = false;
    }
    const written = await localCloudWatchClient(cw.endpoint).send(
      new GetMetricStatisticsCommand({
        Namespace: 'AtomicPublish',
        MetricName: 'PublishAgeSeconds',
        Dimensions: [{ Name: 'Pipeline', Value: PIPELINE.name }],
        StartTime: new Date(publishedAt + REDELIVERY_GRACE_MS),
        EndTime: new Date(publishedAt + REDELIVERY_GRACE_MS + 59_000),
        Period: 60,
        Statistics: ['SampleCount'],
      }),
    );
    expect(written.Datapoints!.map((d) => d.SampleCount)).toEqual([1]);
    expect(await eventSentAt(seq)).toBeNull();

    expect(await monitorAt(publishedAt + REDELIVERY_GRACE_MS - 60_000)).toEqual({ redelivered: [], events: [] });
    const monitored = await monitorAt(publishedAt + REDELIVERY_GRACE_MS + 60_000);
    expect(monitored.redelivered).toEqual([`${PIPELINE.name}:${seq}`]);
    expect(monitored.events.map((e) => [e.bus, e.source, e.detailType])).toEqual([['default', 'atomic-publish', refused[0]!.detailType]]);
    expect(monitored.events[0]!.detail).toEqual(refused[0]!.detail);
    expect(await eventSentAt(seq)).not.toBeNull();

    expect(await monitorAt(publishedAt + REDELIVERY_GRACE_MS + 120_000), 'a second monitor run').toEqual({ redelivered: [], events: [] });
    refused.length = 0;
  });

  it('a rollback whose event was never sent: the monitor sends its Publication Rolled Back event, as EmitMetrics would have', async () => {
    const undone = Number((await wf.publications()).at(-1)!.seq);
    refuseAll = true;
    let failed: Awaited<ReturnType<typeof eventsOf>>;
    try {
      failed = await eventsOf({ pipeline: PIPELINE.name, rollback: {} }, 'events-rollback-never-sent');
    } finally {
      refuseAll = false;
    }
    expect(failed.result.status).toBe('FAILED');
    const row = (await wf.publications()).at(-1)!;
    expect(Number(row.rollback_of)).toBe(undone);
    expect(await eventSentAt(Number(row.seq))).toBeNull();

    const monitored = await monitorAt((row.published_at as Date).getTime() + REDELIVERY_GRACE_MS + 60_000);

    expect(monitored.events.map((e) => e.detailType)).toEqual(['Publication Rolled Back']);
    expect(monitored.events[0]!.detail).toEqual(refused[0]!.detail);
    expect(monitored.events[0]!.detail).toMatchObject({ eventId: `${PIPELINE.name}:${Number(row.seq)}`, rollbackOf: undone });
    expect(await eventSentAt(Number(row.seq))).not.toBeNull();
    refused.length = 0;
  });

  it("the monitor sends at most its cap, oldest first; the pipeline's next run sends the rest after its own event", async () => {
    const seqs: number[] = [];
    for (const day of [14, 15]) {
      refuseAll = true;
      try {
        expect((await eventsOf(inputFor(day), `events-unsent-${day}`)).result.status).toBe('FAILED');
      } finally {
        refuseAll = false;
      }
      seqs.push(Number((await wf.publications()).at(-1)!.seq));
    }
    const sent = Object.fromEntries(refused.map((r) => [String(r.detail.eventId), r.detail]));
    const last = (await wf.publications()).at(-1)!;

    const monitored = await monitorAt((last.published_at as Date).getTime() + REDELIVERY_GRACE_MS + 60_000, 1);
    expect(monitored.redelivered).toEqual([`${PIPELINE.name}:${seqs[0]}`]);
    expect(monitored.events.map((e) => e.detail)).toEqual([sent[`${PIPELINE.name}:${seqs[0]}`]]);
    expect(await eventSentAt(seqs[1]!)).toBeNull();

    const next = await eventsOf(inputFor(16), 'events-after-unsent');
    expect(next.result.status, caughtMessage(next.result)).toBe('SUCCEEDED');
    const own = Number((await wf.publications()).at(-1)!.seq);
    expect(next.events.map((e) => e.detail.eventId)).toEqual([`${PIPELINE.name}:${own}`, `${PIPELINE.name}:${seqs[1]}`]);
    expect(next.events[1]!.detail).toEqual(sent[`${PIPELINE.name}:${seqs[1]}`]);
    for (const seq of [...seqs, own]) expect(await eventSentAt(seq), `publication ${seq}`).not.toBeNull();
    refused.length = 0;
  });
});
