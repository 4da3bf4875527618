/**
 * The warehouse target, as one contract: what the app's context may say
 * (lib/app.ts), what a deployment accepts (lib/atomic-publish-stack.ts),
 * the environment the stack gives the handlers and how the handlers read it
 * back (functions/commons/warehouse.ts). Strings only: lib adds the CDK
 * secret object on its side.
 */
import { type Environment, optionalEnv, requireEnv } from './env.ts';
import { ValidationError } from './errors.ts';
import { clip, echo } from './text.ts';

/**
 * The Redshift the step handlers send SQL to through the Data API: a
 * provisioned cluster (with a Secrets Manager secret or a database user) or
 * a serverless workgroup (with the functions' IAM identity or a secret). Set
 * exactly one of `clusterIdentifier` and `workgroupName`.
 */
export interface WarehouseTarget {
  /** Database holding the target schemas and the `atomic_publish` manifest. */
  readonly database: string;
  /**
   * Provisioned cluster identifier.
   * @default - none: `workgroupName` must be set
   */
  readonly clusterIdentifier?: string;
  /**
   * Complete ARN of the secret with the database credentials (cluster or
   * workgroup). The functions may read it, and the Data API authenticates as
   * the secret's database user. With a workgroup it is optional: without it
   * the Data API maps the functions' IAM role to the database user
   * `IAMR:<role name>`.
   * @default - none: `dbUser` (or a secret) must be set for a cluster
   */
  readonly secretArn?: string;
  /**
   * Database user the Data API gets temporary credentials for (cluster only;
   * `redshift:GetClusterCredentials`).
   * @default - none: a secret must be set for a cluster
   */
  readonly dbUser?: string;
  /**
   * Redshift Serverless workgroup name.
   * @default - none: `clusterIdentifier` must be set
   */
  readonly workgroupName?: string;
  /**
   * ARN of the serverless workgroup. IAM names a workgroup by its ID (a UUID),
   * not by its name, so only the ARN allows scoping the Data API permissions
   * to the one workgroup. Deployment only: the handlers do not need it.
   * @default - every workgroup of the account in the stack's region (`workgroup/*`)
   */
  readonly workgroupArn?: string;
}

/** A target whose secret may be given as an object that knows its ARN (lib passes a CDK ISecret). */
export interface WarehouseTargetWithSecret extends WarehouseTarget {
  readonly secret?: { readonly secretArn: string };
}

/** The keys a target may have, in the context (`-c warehouse='{...}'`) and in code. */
export const WAREHOUSE_TARGET_KEYS = ['database', 'clusterIdentifier', 'secretArn', 'dbUser', 'workgroupName', 'workgroupArn'] as const;

/** The environment variables the stack sets on every handler and the handlers read. */
export const WarehouseEnv = {
  DATABASE: 'WAREHOUSE_DATABASE',
  WORKGROUP: 'WAREHOUSE_WORKGROUP',
  CLUSTER_ID: 'WAREHOUSE_CLUSTER_ID',
  SECRET_ARN: 'WAREHOUSE_SECRET_ARN',
  DB_USER: 'WAREHOUSE_DB_USER',
  /** The Data API endpoint; set only locally, where it points the real SDK client at loopback. */
  DATA_API_ENDPOINT: 'REDSHIFT_DATA_ENDPOINT',
  /** The longest pause between two DescribeStatement polls, in milliseconds. */
  POLL_MAX_MS: 'WAREHOUSE_POLL_MAX_MS',
  /**
   * Seconds a DescribeStatement may wait for the statement to end (the Data
   * API's WaitTimeSeconds, 1 to 30); 0 turns long polling off and the
   * handlers poll with adaptive sleeps instead.
   */
  LONG_POLL_SECONDS: 'WAREHOUSE_LONG_POLL_SECONDS',
} as const;

const WORKGROUP_ARN = /^arn:[\w-]+:redshift-serverless:[\w-]*:\d*:workgroup\/[\w-]+$/;

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

/** A context value that must be a string when it is set at all. */
export function contextString(value: unknown, key: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw new ValidationError(`context ${key} must be a string`);
  return value;
}

/** Context values given on the command line (`-c warehouse='{...}'`) arrive as strings. */
function contextObject(value: unknown, key: string): Record<string, unknown> {
  let parsed = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value) as unknown;
    } catch {
      parsed = undefined;
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ValidationError(`context ${key} must be an object like {"workgroupName": "analytics", "database": "dev"}, got ${echo(value)}`);
  }
  return parsed as Record<string, unknown>;
}

/** The target from context `warehouse` (an object or its JSON) plus `secretArn`; unknown keys are rejected. */
export function warehouseTargetFromContext(warehouse: unknown, secretArn?: unknown): WarehouseTarget {
  const raw = contextObject(warehouse ?? {}, 'warehouse');
  const unknown = Object.keys(raw).filter((key) => !(WAREHOUSE_TARGET_KEYS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    throw new ValidationError(`context warehouse: unknown keys ${clip(unknown.join(', '))} (allowed: ${WAREHOUSE_TARGET_KEYS.join(', ')})`);
  }
  const target: Record<string, string> = {};
  for (const key of WAREHOUSE_TARGET_KEYS) {
    const value = contextString(raw[key], `warehouse.${key}`);
    if (value !== undefined) target[key] = value;
  }
  const arn = contextString(secretArn, 'secretArn');
  if (arn !== undefined) target.secretArn = arn;
  return target as unknown as WarehouseTarget;
}

export interface ValidateWarehouseTargetOptions {
  /**
   * Values only known at deploy time (CDK tokens) are not checked for their form.
   * @default - every value is known
   */
  readonly isUnresolved?: (value: string) => boolean;
}

/** Rejects missing or conflicting settings; every message names the props (`where` is the prop's path). */
export function validateWarehouseTarget(target: WarehouseTargetWithSecret, where = 'warehouse', options: ValidateWarehouseTargetOptions = {}): void {
  if (typeof target !== 'object' || target === null) throw new ValidationError(`${where} must be an object`);
  if (!isSet(target.database)) throw new ValidationError(`${where}.database is required`);
  const cluster = isSet(target.clusterIdentifier);
  const serverless = isSet(target.workgroupName);
  if (cluster && serverless) {
    throw new ValidationError(`${where}.clusterIdentifier and ${where}.workgroupName are mutually exclusive: set exactly one`);
  }
  if (!cluster && !serverless) {
    throw new ValidationError(`${where}: set exactly one of ${where}.clusterIdentifier and ${where}.workgroupName`);
  }
  const credentials = (['secret', 'secretArn', 'dbUser'] as const).filter((key) => isSet(target[key]));
  if (serverless) {
    // The Data API takes WorkgroupName with SecretArn (or neither), never with DbUser.
    if (isSet(target.dbUser)) {
      throw new ValidationError(
        `${where}.dbUser only applies to a cluster (${where}.clusterIdentifier), not to ${where}.workgroupName: use ${where}.secret or ${where}.secretArn, or neither`,
      );
    }
    if (credentials.length > 1) {
      throw new ValidationError(`${where}.secret and ${where}.secretArn are mutually exclusive: set at most one`);
    }
    const arn = target.workgroupArn;
    if (isSet(arn) && !options.isUnresolved?.(arn!) && !WORKGROUP_ARN.test(arn!)) {
      throw new ValidationError(
        `${where}.workgroupArn must look like arn:aws:redshift-serverless:<region>:<account>:workgroup/<workgroup id>, got ${echo(arn)}`,
      );
    }
    return;
  }
  if (isSet(target.workgroupArn)) {
    throw new ValidationError(`${where}.workgroupArn only applies to ${where}.workgroupName, not to ${where}.clusterIdentifier`);
  }
  // The handlers pass SecretArn or DbUser with every statement, never neither.
  if (credentials.length !== 1) {
    throw new ValidationError(
      `${where}.clusterIdentifier needs exactly one of ${where}.secret, ${where}.secretArn and ${where}.dbUser` +
        (credentials.length > 1 ? ` (got ${credentials.map((key) => `${where}.${key}`).join(' and ')})` : ''),
    );
  }
}

/** Local settings beside the target: where the Data API is and how long a poll may pause. */
export interface DataApiSettings {
  /** @default - the Data API of the function's region */
  readonly endpoint?: string;
  /** @default - the handlers' own default (DEFAULT_POLL in functions/commons/warehouse.ts) */
  readonly pollMaxDelayMs?: number;
  /** @default - the handlers' own default (DEFAULT_POLL.longPollSeconds); 0 turns long polling off */
  readonly longPollSeconds?: number;
}

/** The environment the handlers read with warehouseTargetFromEnv and dataApiSettingsFromEnv. */
export function warehouseEnvironment(target: WarehouseTargetWithSecret, settings: DataApiSettings = {}): Record<string, string> {
  const secretArn = target.secret?.secretArn ?? target.secretArn;
  return {
    [WarehouseEnv.DATABASE]: target.database,
    ...(target.workgroupName
      ? { [WarehouseEnv.WORKGROUP]: target.workgroupName }
      : { [WarehouseEnv.CLUSTER_ID]: target.clusterIdentifier!, ...(target.dbUser ? { [WarehouseEnv.DB_USER]: target.dbUser } : {}) }),
    ...(secretArn ? { [WarehouseEnv.SECRET_ARN]: secretArn } : {}),
    ...(settings.endpoint ? { [WarehouseEnv.DATA_API_ENDPOINT]: settings.endpoint } : {}),
    ...(settings.pollMaxDelayMs !== undefined ? { [WarehouseEnv.POLL_MAX_MS]: String(settings.pollMaxDelayMs) } : {}),
    ...(settings.longPollSeconds !== undefined ? { [WarehouseEnv.LONG_POLL_SECONDS]: String(settings.longPollSeconds) } : {}),
  };
}

/** The target as the handlers read it from the environment warehouseEnvironment wrote. */
export function warehouseTargetFromEnv(env: Environment): WarehouseTarget {
  const database = requireEnv(WarehouseEnv.DATABASE, env);
  const clusterIdentifier = optionalEnv(WarehouseEnv.CLUSTER_ID, env);
  const workgroupName = optionalEnv(WarehouseEnv.WORKGROUP, env);
  if (Boolean(clusterIdentifier) === Boolean(workgroupName)) {
    throw new ValidationError(`set exactly one of ${WarehouseEnv.CLUSTER_ID} and ${WarehouseEnv.WORKGROUP}`);
  }
  const secretArn = optionalEnv(WarehouseEnv.SECRET_ARN, env);
  // Serverless: the IAM identity's own database user, or the secret's.
  if (workgroupName) return { database, workgroupName, ...(secretArn ? { secretArn } : {}) };
  const dbUser = optionalEnv(WarehouseEnv.DB_USER, env);
  if (!secretArn && !dbUser) throw new ValidationError(`a cluster needs ${WarehouseEnv.SECRET_ARN} or ${WarehouseEnv.DB_USER}`);
  return { database, clusterIdentifier, ...(secretArn ? { secretArn } : { dbUser }) };
}

/** The Data API settings as the handlers read them; unset ones are left to the handlers' defaults. */
export function dataApiSettingsFromEnv(env: Environment): DataApiSettings {
  const endpoint = optionalEnv(WarehouseEnv.DATA_API_ENDPOINT, env);
  const pollMax = optionalEnv(WarehouseEnv.POLL_MAX_MS, env);
  const pollMaxDelayMs = pollMax === undefined ? undefined : Number(pollMax);
  if (pollMaxDelayMs !== undefined && (!Number.isFinite(pollMaxDelayMs) || pollMaxDelayMs < 1)) {
    throw new ValidationError(`${WarehouseEnv.POLL_MAX_MS} must be a positive number of milliseconds, got ${echo(pollMax)}`);
  }
  const longPoll = optionalEnv(WarehouseEnv.LONG_POLL_SECONDS, env);
  const longPollSeconds = longPoll === undefined ? undefined : Number(longPoll);
  if (longPollSeconds !== undefined && !(Number.isInteger(longPollSeconds) && longPollSeconds >= 0 && longPollSeconds <= 30)) {
    throw new ValidationError(`${WarehouseEnv.LONG_POLL_SECONDS} must be a whole number of seconds from 0 (off) to 30, got ${echo(longPoll)}`);
  }
  return {
    ...(endpoint ? { endpoint } : {}),
    ...(pollMaxDelayMs !== undefined ? { pollMaxDelayMs } : {}),
    ...(longPollSeconds !== undefined ? { longPollSeconds } : {}),
  };
}

/**
 * IAM's role-name characters, lower-case only: the database user's name is
 * `IAMR:<role name>` with the name's case, and Redshift folds unquoted names
 * to lower case, so a lower-case role name is one name however the setup SQL
 * or an operator writes it.
 */
const HANDLER_ROLE_NAME = /^[a-z0-9+=,.@_-]{1,64}$/;

/** The step handlers' role name when the context gives none: `<stack name, lower-cased>-handlers`, within IAM's 64 characters. */
export function defaultHandlerRoleName(stackName: string): string {
  const suffix = '-handlers';
  return `${stackName.toLowerCase().slice(0, 64 - suffix.length)}${suffix}`;
}

/** The freshness monitor's role name beside the handlers' role name: `<handler role name>-monitor`, within IAM's 64 characters. */
export function monitorRoleNameFor(handlerRoleName: string): string {
  const suffix = '-monitor';
  return `${handlerRoleName.slice(0, 64 - suffix.length)}${suffix}`;
}

/** Rejects a role name IAM would refuse or that is not lower-case (`where` names the setting). */
export function validateHandlerRoleName(name: unknown, where = 'handlerRoleName'): asserts name is string {
  if (typeof name !== 'string' || !HANDLER_ROLE_NAME.test(name)) {
    throw new ValidationError(`${where} must be 1 to 64 of a-z 0-9 + = , . @ _ - (an IAM role name in lower case), got ${echo(name)}`);
  }
}

/** Who the step handlers are in the database, by how the Data API signs them in. */
export type DatabaseUser =
  /** Serverless without a secret: the Data API maps the functions' IAM role to `IAMR:<role name>`. */
  | { readonly kind: 'iam-role'; readonly name: string }
  /** Cluster with `dbUser`: GetClusterCredentials signs in as that existing user (the `IAM:` prefix is only the login form). */
  | { readonly kind: 'db-user'; readonly name: string }
  /** Cluster or workgroup with a secret: the secret's `username`, which only the secret knows. */
  | { readonly kind: 'secret'; readonly secretArn: string };

/**
 * The database user a deployment's step handlers act as, which the setup SQL
 * grants to and makes the owner of the live tables: the secret's, a cluster's
 * `dbUser`, or the handler role's `IAMR:<role name>`
 * (https://docs.aws.amazon.com/redshift/latest/mgmt/data-api-access.html).
 * Why: docs/decisions/deployment.md
 */
export function databaseUserFor(target: WarehouseTargetWithSecret, handlerRoleName: string, options: ValidateWarehouseTargetOptions = {}): DatabaseUser {
  validateWarehouseTarget(target, 'warehouse', options);
  const secretArn = target.secret?.secretArn ?? target.secretArn;
  if (secretArn) return { kind: 'secret', secretArn };
  if (target.dbUser) return { kind: 'db-user', name: target.dbUser };
  validateHandlerRoleName(handlerRoleName);
  return { kind: 'iam-role', name: `IAMR:${handlerRoleName}` };
}
