/**
 * `atomic-publish local up`: the local engine as a service, until the signal
 * aborts. Starts (or reuses) the embedded PostgreSQL and the sample database (kept
 * across restarts), the local Data API, a LocalRunner behind a local Step Functions
 * endpoint and a local CloudWatch endpoint with the stack's alarms, and prints the
 * AWS_ENDPOINT_URL_<SERVICE> variables the CLIs and SDKs read (docs/decisions/command-line.md).
 * https://docs.aws.amazon.com/sdkref/latest/guide/feature-ss-endpoints.html
 */
import { localHandlerEnvironment } from '../local/aws-clients.ts';
import { alarmsFromTemplate } from '../local/cloudwatch-alarms.ts';
import { startLocalCloudWatchApi } from '../local/cloudwatch-api.ts';
import { startLocalDataApi } from '../local/data-api/server.ts';
import { applyPipelineSetup, ensureLocalUser, LOCAL_PIPELINE_USER } from '../local/database-users.ts';
import { withClient } from '../local/pg-clients.ts';
import { ensureDatabase, startLocalPostgres } from '../local/postgres.ts';
import {
  createRecentSample,
  describeSample,
  existingSample,
  MIN_SAMPLE_DAYS,
  recentSample,
  sampleEnvironment,
  useSampleStart,
} from '../local/recent-sample.ts';
import { LocalRunner } from '../local/runner.ts';
import { startLocalStepFunctionsApi } from '../local/step-functions-api.ts';
import { synthesizeTemplate } from '../local/template.ts';
import { pipelines } from '../pipelines/index.ts';
import { CliEnv } from './context.ts';
import { CliError, ExitCode } from './errors.ts';
import type { CliIo } from './shared.ts';

/** How often `local up` evaluates the alarms: the shortest cadence CloudWatch has (alarms of a period under a minute). */
const ALARM_EVALUATION_MS = 10_000;

export interface LocalUpOptions {
  readonly database: string;
  readonly sampleDays: number;
  readonly rowsPerDay: number;
}

export async function localUp(io: CliIo, options: LocalUpOptions): Promise<number> {
  const log = (line: string) => io.stderr(line);
  const postgres = await startLocalPostgres({ ...(io.env.ATOMIC_PUBLISH_PG_DIR ? { dataDir: io.env.ATOMIC_PUBLISH_PG_DIR } : {}), log });
  const conn = { host: postgres.host, port: postgres.port, user: postgres.user, password: postgres.password };
  const closers: (() => Promise<void> | void)[] = [() => postgres.release()];
  try {
    await ensureDatabase(conn, options.database);
    await ensureLocalUser(conn);
    const sample = await withClient({ ...conn, database: options.database }, async (db) => {
      const existing = await existingSample(db);
      if (existing) return existing;
      if (options.sampleDays < MIN_SAMPLE_DAYS) {
        throw new CliError(
          `--sample-days must be at least ${MIN_SAMPLE_DAYS} (corrected days, published days and the days a run publishes), got ${options.sampleDays}`,
        );
      }
      const created = recentSample(new Date(), options.sampleDays);
      log(`Creating the sample source in ${options.database}: ${options.rowsPerDay} order lines a day over ${options.sampleDays} days...`);
      await createRecentSample(db, created, options.rowsPerDay);
      return created;
    });
    // This process's handlers and the CLI in other shells plan the sample's days (its history start).
    useSampleStart(sample);
    await withClient({ ...conn, database: options.database }, async (db) => {
      for (const pipeline of pipelines) await applyPipelineSetup(db, pipeline);
    });
    const dataApi = await startLocalDataApi({ postgres: conn, defaultUser: LOCAL_PIPELINE_USER });
    closers.unshift(() => dataApi.close());
    const template = await synthesizeTemplate();
    const handlerEnv = localHandlerEnvironment(dataApi.endpoint, options.database);
    const cloudWatch = await startLocalCloudWatchApi({ alarms: alarmsFromTemplate(template) });
    closers.unshift(() => cloudWatch.close());
    // The alarms evaluated on the real clock, as CloudWatch evaluates them (every minute, every 10 s
    // under a minute's period): a failed run's metrics turn its alarm to ALARM, paging to the outbox.
    const evaluating = setInterval(() => {
      try {
        cloudWatch.evaluate(new Date());
      } catch (error) {
        log(`local CloudWatch: alarms not evaluated: ${(error as Error).message}`);
      }
    }, ALARM_EVALUATION_MS);
    closers.unshift(() => clearInterval(evaluating));
    // The runs' AWS/Lambda metrics and the handlers' EMF metrics reach the local CloudWatch endpoint, as on AWS.
    const runner = await LocalRunner.create({ env: { ...handlerEnv, POWERTOOLS_LOG_LEVEL: 'WARN' }, template, cloudWatchEndpoint: cloudWatch.endpoint });
    closers.unshift(() => runner.close());
    const sfn = await startLocalStepFunctionsApi(runner);
    closers.unshift(() => sfn.close());
    // The freshness monitor on its schedule, as EventBridge Scheduler invokes it: the freshness
    // metrics the alarms read (without them a freshness alarm has no data).
    const measureFreshness = () => runner.fireFreshnessMonitor(cloudWatch.endpoint).catch((error: Error) => log(`local freshness monitor: ${error.message}`));
    const measuring = setInterval(measureFreshness, runner.freshnessMonitorPeriodMs());
    closers.unshift(() => clearInterval(measuring));
    await measureFreshness();

    const env: Record<string, string> = {
      AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
      AWS_DEFAULT_REGION: process.env.AWS_REGION ?? 'us-east-1',
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
      ...handlerEnv,
      ...sampleEnvironment(sample),
      [CliEnv.STATE_MACHINE_ARN]: runner.workflow.stateMachineArn,
      [CliEnv.SFN_ENDPOINT]: sfn.endpoint,
      [CliEnv.CLOUDWATCH_ENDPOINT]: cloudWatch.endpoint,
      AWS_ENDPOINT_URL_SFN: sfn.endpoint,
      AWS_ENDPOINT_URL_REDSHIFT_DATA: dataApi.endpoint,
      AWS_ENDPOINT_URL_CLOUDWATCH: cloudWatch.endpoint,
      AWS_ENDPOINT_URL_EVENTBRIDGE: runner.eventBridgeEndpoint,
    };
    const endpoints = {
      postgres: `postgresql://${postgres.host}:${postgres.port}/${options.database}`,
      dataApi: dataApi.endpoint,
      stepFunctions: sfn.endpoint,
      cloudWatch: cloudWatch.endpoint,
      eventBridge: runner.eventBridgeEndpoint,
      stateMachineArn: runner.workflow.stateMachineArn,
    };
    io.stdout(
      [
        '# atomic-publish local engine: up (Ctrl-C to stop)',
        `# PostgreSQL      ${endpoints.postgres}`,
        `# Data API        ${endpoints.dataApi}`,
        `# Step Functions  ${endpoints.stepFunctions}`,
        `# CloudWatch      ${endpoints.cloudWatch}`,
        `# EventBridge     ${endpoints.eventBridge} (the publication events)`,
        `# State machine   ${endpoints.stateMachineArn}`,
        ...describeSample(sample, options.database),
        '# In another shell, paste these lines, then run the commands of the README\'s "Try it locally",',
        '# or e.g. `aws stepfunctions list-executions --state-machine-arn $ATOMIC_PUBLISH_STATE_MACHINE_ARN`:',
        ...Object.entries(env).map(([k, v]) => `export ${k}=${shellQuote(v)}`),
        '# ready',
      ].join('\n'),
    );
    await new Promise<void>((resolve) => {
      if (!io.signal || io.signal.aborted) return resolve();
      io.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    log('Stopping the local engine...');
    return ExitCode.OK;
  } finally {
    for (const close of closers) await close();
  }
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}
