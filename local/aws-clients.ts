/**
 * The real AWS SDK clients, pointed at the local endpoints: one factory for
 * the demo, the bench and the tests. Only the endpoint differs from AWS;
 * the loopback endpoints accept any credentials.
 */

import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { RedshiftDataClient, type RedshiftDataClientConfig } from '@aws-sdk/client-redshift-data';
import { SFNClient } from '@aws-sdk/client-sfn';
import { type DataApiSettings, type WarehouseTarget, warehouseEnvironment } from '../domain/warehouse-target.ts';
import { DEFAULT_POLL, type PollOptions, Warehouse } from '../functions/commons/warehouse.ts';
import { PublicationEventEnv } from '../functions/emit-metrics/env.ts';
import { LOCAL_AWS_SERVICE_ACCESS_KEY_ID } from './cloudwatch-api.ts';
import type { TargetKind } from './data-api/system-views.ts';

/** Region and credentials the local endpoints accept (they check no signature). */
export const LOCAL_AWS_ENV = {
  AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
  AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'local',
  AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'local',
};

/** The workgroup name local statements carry (the local endpoint needs a target; its kind decides the catalog, its name nothing). */
export const LOCAL_WORKGROUP = 'local';

/** The secret a local cluster target names: the endpoint serves it as its default user, as a workgroup. */
export const LOCAL_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:atomic-publish-local';

/** The deployed functions run Node 22; on a local Node 20 the SDK's support notice is noise. */
export function silenceSdkNodeNotice(): void {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
}

/** The real Redshift Data API client, talking to a local endpoint (`config` for what a test varies, e.g. maxAttempts). */
export function localRedshiftDataClient(endpoint: string, config: Partial<RedshiftDataClientConfig> = {}): RedshiftDataClient {
  silenceSdkNodeNotice();
  return new RedshiftDataClient({
    endpoint,
    region: LOCAL_AWS_ENV.AWS_REGION,
    credentials: localCredentials(),
    ...config,
  });
}

/** The real Step Functions client, talking to a local endpoint (local/step-functions-api.ts). */
export function localStepFunctionsClient(endpoint: string): SFNClient {
  silenceSdkNodeNotice();
  return new SFNClient({ endpoint, region: LOCAL_AWS_ENV.AWS_REGION, credentials: localCredentials() });
}

/**
 * The real CloudWatch client, talking to a local endpoint (local/cloudwatch-api.ts).
 * `asAwsService`: signing as the local engine's AWS services, the one caller allowed to write `AWS/` namespaces.
 */
export function localCloudWatchClient(endpoint: string, options: { asAwsService?: boolean } = {}): CloudWatchClient {
  silenceSdkNodeNotice();
  const credentials = options.asAwsService ? { accessKeyId: LOCAL_AWS_SERVICE_ACCESS_KEY_ID, secretAccessKey: 'local' } : localCredentials();
  return new CloudWatchClient({ endpoint, region: LOCAL_AWS_ENV.AWS_REGION, credentials });
}

/** The real EventBridge client, talking to a local endpoint (local/eventbridge-api.ts). */
export function localEventBridgeClient(endpoint: string): EventBridgeClient {
  silenceSdkNodeNotice();
  return new EventBridgeClient({ endpoint, region: LOCAL_AWS_ENV.AWS_REGION, credentials: localCredentials() });
}

/** The environment that sends the handlers' publication events to a local EventBridge endpoint, on its default bus. */
export function localEventsEnvironment(endpoint: string): Record<string, string> {
  return { [PublicationEventEnv.EVENT_BUS]: 'default', [PublicationEventEnv.EVENTBRIDGE_ENDPOINT]: endpoint };
}

function localCredentials() {
  return { accessKeyId: LOCAL_AWS_ENV.AWS_ACCESS_KEY_ID, secretAccessKey: LOCAL_AWS_ENV.AWS_SECRET_ACCESS_KEY };
}

/**
 * A database behind the local endpoint, as the handlers name their target:
 * a workgroup, which the endpoint serves as its default user (the
 * least-privilege role of local/database-users.ts in the demo and the
 * tests). With `dbUser`, a cluster target that runs as that user instead.
 */
export function localTarget(database: string, dbUser?: string): WarehouseTarget {
  return dbUser === undefined ? { database, workgroupName: LOCAL_WORKGROUP } : { database, clusterIdentifier: LOCAL_WORKGROUP, dbUser };
}

/**
 * The handlers' target of this kind as the endpoint's default user: a
 * workgroup (Serverless), or a cluster with a secret (provisioned).
 */
export function localDefaultUserTarget(database: string, kind: TargetKind = 'workgroup'): WarehouseTarget {
  return kind === 'workgroup' ? localTarget(database) : { database, clusterIdentifier: LOCAL_WORKGROUP, secretArn: LOCAL_SECRET_ARN };
}

/** The environment the handlers read to reach `database` through a local endpoint, on a target of this kind. */
export function localHandlerEnvironment(
  endpoint: string,
  database: string,
  settings: Omit<DataApiSettings, 'endpoint'> = {},
  kind: TargetKind = 'workgroup',
): Record<string, string> {
  return warehouseEnvironment(localDefaultUserTarget(database, kind), { ...settings, endpoint });
}

/** The handlers' warehouse client on a local endpoint and database (as `dbUser` when given, see localTarget). */
export function localWarehouse(endpoint: string, database: string, poll: PollOptions = DEFAULT_POLL, dbUser?: string): Warehouse {
  return new Warehouse(localRedshiftDataClient(endpoint), localTarget(database, dbUser), poll);
}
