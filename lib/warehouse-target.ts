import { ArnFormat, Stack, Token } from 'aws-cdk-lib';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IConstruct } from 'constructs';

/**
 * The Redshift the step handlers send SQL to through the Data API: a
 * provisioned cluster (with a Secrets Manager secret or a database user) or
 * a serverless workgroup (with the role's IAM identity or a secret). Set
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
   * Secret with the database credentials. The functions may read it, and the
   * Data API authenticates as the secret's database user. With a workgroup
   * it is optional: without it the Data API maps the functions' IAM role to
   * the database user `IAMR:<role name>`.
   * @default - none: `dbUser` (or `secretArn`) must be set for a cluster
   */
  readonly secret?: ISecret;
  /**
   * Complete ARN of the credentials secret (cluster or workgroup), for apps
   * that configure the target from strings (cdk.json context); the stack
   * imports it with `Secret.fromSecretCompleteArn`. Mutually exclusive with `secret`.
   * @default - none
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
   * to the one workgroup.
   * @default - every workgroup of the account in the stack's region (`workgroup/*`)
   */
  readonly workgroupArn?: string;
}

const WORKGROUP_ARN = /^arn:[\w-]+:redshift-serverless:[\w-]*:\d*:workgroup\/[\w-]+$/;

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

/** Rejects missing or conflicting settings; every message names the props (`where` is the prop's path). */
export function validateWarehouseTarget(target: WarehouseTarget, where = 'warehouse'): void {
  if (typeof target !== 'object' || target === null) throw new Error(`${where} must be an object`);
  if (!isSet(target.database)) throw new Error(`${where}.database is required`);
  const cluster = isSet(target.clusterIdentifier);
  const serverless = isSet(target.workgroupName);
  if (cluster && serverless) {
    throw new Error(`${where}.clusterIdentifier and ${where}.workgroupName are mutually exclusive: set exactly one`);
  }
  if (!cluster && !serverless) {
    throw new Error(`${where}: set exactly one of ${where}.clusterIdentifier and ${where}.workgroupName`);
  }
  const credentials = (['secret', 'secretArn', 'dbUser'] as const).filter((key) => isSet(target[key]));
  if (serverless) {
    // The Data API takes WorkgroupName with SecretArn (or neither), never with DbUser.
    if (isSet(target.dbUser)) {
      throw new Error(`${where}.dbUser only applies to a cluster (${where}.clusterIdentifier), not to ${where}.workgroupName: use ${where}.secret or ${where}.secretArn, or neither`);
    }
    if (credentials.length > 1) {
      throw new Error(`${where}.secret and ${where}.secretArn are mutually exclusive: set at most one`);
    }
    const arn = target.workgroupArn;
    if (isSet(arn) && !Token.isUnresolved(arn) && !WORKGROUP_ARN.test(arn!)) {
      throw new Error(`${where}.workgroupArn must look like arn:aws:redshift-serverless:<region>:<account>:workgroup/<workgroup id>, got ${arn}`);
    }
    return;
  }
  if (isSet(target.workgroupArn)) {
    throw new Error(`${where}.workgroupArn only applies to ${where}.workgroupName, not to ${where}.clusterIdentifier`);
  }
  // The handlers pass SecretArn or DbUser with every statement, never neither.
  if (credentials.length !== 1) {
    throw new Error(
      `${where}.clusterIdentifier needs exactly one of ${where}.secret, ${where}.secretArn and ${where}.dbUser` +
        (credentials.length > 1 ? ` (got ${credentials.map((key) => `${where}.${key}`).join(' and ')})` : ''),
    );
  }
}

/** The environment the handlers read (functions/commons/warehouse.ts). `secret` must be resolved (no `secretArn`). */
export function warehouseEnvironment(target: WarehouseTarget): Record<string, string> {
  if (target.workgroupName) {
    return {
      WAREHOUSE_DATABASE: target.database,
      WAREHOUSE_WORKGROUP: target.workgroupName,
      ...(target.secret ? { WAREHOUSE_SECRET_ARN: target.secret.secretArn } : {}),
    };
  }
  return {
    WAREHOUSE_DATABASE: target.database,
    WAREHOUSE_CLUSTER_ID: target.clusterIdentifier!,
    ...(target.secret ? { WAREHOUSE_SECRET_ARN: target.secret.secretArn } : {}),
    ...(target.dbUser ? { WAREHOUSE_DB_USER: target.dbUser } : {}),
  };
}

/**
 * Least privilege for the Data API: submit statements only to this warehouse;
 * read, cancel and list only statements this role submitted; get credentials
 * only for this database (or read only the one secret).
 */
export function grantWarehouseAccess(grantee: IGrantable & IConstruct, target: WarehouseTarget): void {
  const stack = Stack.of(grantee);
  const redshiftArn = (resource: string, resourceName: string): string =>
    stack.formatArn({ service: 'redshift', resource, resourceName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  // Without the ID we can only name every workgroup of the account and region.
  const workgroupArn =
    target.workgroupArn ??
    stack.formatArn({ service: 'redshift-serverless', resource: 'workgroup', resourceName: '*', arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
  const warehouseArn = target.workgroupName ? workgroupArn : redshiftArn('cluster', target.clusterIdentifier!);

  Grant.addToPrincipal({
    grantee,
    actions: ['redshift-data:ExecuteStatement', 'redshift-data:BatchExecuteStatement'],
    resourceArns: [warehouseArn],
  });
  // These actions have no resource type; the owner condition limits them to our own statements.
  Grant.addToPrincipal({
    grantee,
    actions: [
      'redshift-data:DescribeStatement',
      'redshift-data:GetStatementResult',
      'redshift-data:CancelStatement',
      'redshift-data:ListStatements',
    ],
    resourceArns: ['*'],
    conditions: { StringEquals: { 'redshift-data:statement-owner-iam-userid': '${aws:userid}' } },
  });

  if (target.secret) {
    // Cluster or workgroup: the Data API reads the secret and logs in as its user.
    target.secret.grantRead(grantee);
  } else if (target.workgroupName) {
    // Without a secret the Data API gets temporary credentials for the role's own database user.
    Grant.addToPrincipal({ grantee, actions: ['redshift-serverless:GetCredentials'], resourceArns: [workgroupArn] });
  } else if (target.dbUser) {
    // Data API with DbUser calls GetClusterCredentials for that user and database.
    const cluster = target.clusterIdentifier!;
    Grant.addToPrincipal({
      grantee,
      actions: ['redshift:GetClusterCredentials'],
      resourceArns: [redshiftArn('dbuser', `${cluster}/${target.dbUser}`), redshiftArn('dbname', `${cluster}/${target.database}`)],
    });
  }
}
