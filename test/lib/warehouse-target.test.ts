import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Grant, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { beforeAll, describe, expect, it } from 'vitest';
import { AtomicPublishStack, type AtomicPublishStackProps } from '../../lib/atomic-publish-stack.ts';
import { grantWarehouseAccess, type WarehouseTarget } from '../../lib/warehouse-target.ts';
import { pipelines } from '../../pipelines/index.ts';
import { useCdkOutdir } from './cdk-outdir.ts';

const SECRET_ARN = 'arn:aws:secretsmanager:eu-central-1:111122223333:secret:warehouse-AbCdEf';
const WORKGROUP_ARN = 'arn:aws:redshift-serverless:eu-central-1:111122223333:workgroup/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';
const KEY_ARN = 'arn:aws:kms:eu-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';

const outdir = useCdkOutdir();
const noBundling = () => new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
const stackWith = (warehouse: WarehouseTarget, extra: Partial<AtomicPublishStackProps> = {}) =>
  new AtomicPublishStack(noBundling(), 'Test', { warehouse, pipelines: [], ...extra });

describe('AtomicPublishStack props', () => {
  it.each([
    [
      { database: 'dev', clusterIdentifier: 'c1', dbUser: 'u', workgroupName: 'wg' },
      /warehouse\.clusterIdentifier and warehouse\.workgroupName are mutually exclusive/,
    ],
    [{ database: 'dev' }, /exactly one of warehouse\.clusterIdentifier and warehouse\.workgroupName/],
    [{ clusterIdentifier: 'c1', dbUser: 'u' }, /warehouse\.database is required/],
    [
      { database: 'dev', workgroupName: 'wg', dbUser: 'u' },
      /warehouse\.dbUser only applies to a cluster \(warehouse\.clusterIdentifier\), not to warehouse\.workgroupName/,
    ],
    [{ database: 'dev', workgroupName: 'wg', secretArn: SECRET_ARN, dbUser: 'u' }, /warehouse\.dbUser only applies to a cluster/],
    [
      { database: 'dev', clusterIdentifier: 'c1' },
      /warehouse\.clusterIdentifier needs exactly one of warehouse\.secret, warehouse\.secretArn and warehouse\.dbUser/,
    ],
    [{ database: 'dev', clusterIdentifier: 'c1', dbUser: 'u', secretArn: SECRET_ARN }, /got warehouse\.secretArn and warehouse\.dbUser/],
    [
      { database: 'dev', clusterIdentifier: 'c1', dbUser: 'u', workgroupArn: WORKGROUP_ARN },
      /warehouse\.workgroupArn only applies to warehouse\.workgroupName/,
    ],
    [
      { database: 'dev', workgroupName: 'wg', workgroupArn: 'arn:aws:redshift-serverless:eu-central-1:111122223333:namespace/x' },
      /warehouse\.workgroupArn must look like/,
    ],
    [{ database: 'dev', workgroupName: 'wg', secretKmsKeyArn: KEY_ARN }, /warehouse\.secretKmsKeyArn only applies with a secret/],
    [
      { database: 'dev', workgroupName: 'wg', secretArn: SECRET_ARN, secretKmsKeyArn: 'arn:aws:kms:eu-central-1:111122223333:alias/warehouse' },
      /warehouse\.secretKmsKeyArn must look like arn:aws:kms:<region>:<account>:key\/<key id> \(a key ARN, not an alias\)/,
    ],
  ] as [WarehouseTarget, RegExp][])('rejects the conflicting or missing warehouse props %j with a message naming them', (warehouse, message) => {
    expect(() => stackWith(warehouse)).toThrow(message);
    expect(() => stackWith(warehouse)).toThrow(/^AtomicPublishStack: /);
  });

  it('rejects a pipeline name used twice', () => {
    expect(() => stackWith({ database: 'dev', workgroupName: 'wg' }, { pipelines: [...pipelines, ...pipelines] })).toThrow(
      /AtomicPublishStack: pipelines: name sales_order_lines is used twice/,
    );
  });

  it('rejects both a secret and a secretArn with a workgroup', () => {
    const secret = Secret.fromSecretCompleteArn(new Stack(noBundling(), 'Secrets'), 'Secret', SECRET_ARN);
    expect(() => stackWith({ database: 'dev', workgroupName: 'wg', secretArn: SECRET_ARN, secret })).toThrow(
      /^AtomicPublishStack: warehouse\.secret and warehouse\.secretArn are mutually exclusive: set at most one$/,
    );
  });

  it('rejects a handler role name that is not an IAM role name in lower case', () => {
    expect(() => stackWith({ database: 'dev', workgroupName: 'wg' }, { handlerRoleName: 'Publisher' })).toThrow(
      /^AtomicPublishStack: handlerRoleName must be 1 to 64 of/,
    );
  });

  it('accepts a secret with a serverless workgroup (the Data API takes SecretArn with WorkgroupName)', () => {
    expect(() => stackWith({ database: 'dev', workgroupName: 'wg', secretArn: SECRET_ARN })).not.toThrow();
    expect(() => stackWith({ database: 'dev', workgroupName: 'wg', workgroupArn: WORKGROUP_ARN, secretArn: SECRET_ARN })).not.toThrow();
  });
});

describe('warehouse permissions and environment', () => {
  // One app, one synth: a cluster with a secret, a cluster with a database user, a workgroup with its ARN,
  // a workgroup with a secret, a cluster with a secret object from another stack.
  const templates: Record<string, Template> = {};
  const stacks: Record<string, AtomicPublishStack> = {};

  beforeAll(() => {
    const app = noBundling();
    const secret = new Secret(new Stack(app, 'Secrets'), 'WarehouseSecret');
    const targets: Record<string, WarehouseTarget> = {
      ClusterSecret: { database: 'dev', clusterIdentifier: 'analytics-cluster', secretArn: SECRET_ARN },
      ClusterUser: { database: 'dev', clusterIdentifier: 'analytics-cluster', dbUser: 'publisher' },
      Workgroup: { database: 'dev', workgroupName: 'analytics', workgroupArn: WORKGROUP_ARN },
      WorkgroupSecret: { database: 'dev', workgroupName: 'analytics', workgroupArn: WORKGROUP_ARN, secretArn: SECRET_ARN },
      SecretObject: { database: 'dev', clusterIdentifier: 'analytics-cluster', secret },
      SecretKms: { database: 'dev', workgroupName: 'analytics', secretArn: SECRET_ARN, secretKmsKeyArn: KEY_ARN },
    };
    for (const [name, warehouse] of Object.entries(targets)) {
      stacks[name] = new AtomicPublishStack(app, name, {
        warehouse,
        pipelines: [],
        ...(name === 'ClusterUser' ? { handlerRoleName: 'analytics-publisher' } : {}),
      });
    }
    const assembly = app.synth();
    for (const name of Object.keys(targets)) templates[name] = Template.fromJSON(assembly.getStackByName(name).template);
  });

  const statementsOf = (name: string) => {
    const stack = stacks[name]!;
    const roleId = stack.getLogicalId(stack.functions.Publish.role!.node.defaultChild as CfnElement);
    const policies = templates[name]!.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } });
    return Object.values(policies).flatMap((p) => p.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
  };
  const variablesOf = (name: string) => {
    const stack = stacks[name]!;
    const id = stack.getLogicalId(stack.functions.Publish.node.defaultChild as CfnElement);
    return templates[name]!.toJSON().Resources[id].Properties.Environment.Variables as Record<string, unknown>;
  };
  const redshiftArn = (resource: string) => ({
    'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':redshift:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, `:${resource}`]],
  });
  const executeStatement = (statements: Record<string, unknown>[]) =>
    statements.filter((s) => JSON.stringify(s.Action).includes('redshift-data:ExecuteStatement'));

  it('scopes ExecuteStatement to the cluster ARN and lets the functions read only the warehouse secret', () => {
    const statements = statementsOf('ClusterSecret');
    expect(executeStatement(statements)).toEqual([
      {
        Effect: 'Allow',
        Action: ['redshift-data:ExecuteStatement', 'redshift-data:BatchExecuteStatement'],
        Resource: redshiftArn('cluster:analytics-cluster'),
      },
    ]);
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      Resource: SECRET_ARN,
    });
    expect(JSON.stringify(statements)).not.toContain('GetClusterCredentials');
    expect(variablesOf('ClusterSecret')).toMatchObject({
      WAREHOUSE_CLUSTER_ID: 'analytics-cluster',
      WAREHOUSE_SECRET_ARN: SECRET_ARN,
      WAREHOUSE_DATABASE: 'dev',
    });
    expect(variablesOf('ClusterSecret')).not.toHaveProperty('WAREHOUSE_WORKGROUP');
  });

  it('with a database user, allows GetClusterCredentials for that user and database only', () => {
    const statements = statementsOf('ClusterUser');
    expect(executeStatement(statements)[0]?.Resource).toEqual(redshiftArn('cluster:analytics-cluster'));
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'redshift:GetClusterCredentials',
      Resource: [redshiftArn('dbuser:analytics-cluster/publisher'), redshiftArn('dbname:analytics-cluster/dev')],
    });
    expect(JSON.stringify(statements)).not.toContain('secretsmanager');
    expect(variablesOf('ClusterUser')).toMatchObject({ WAREHOUSE_CLUSTER_ID: 'analytics-cluster', WAREHOUSE_DB_USER: 'publisher' });
  });

  it('with a workgroup ARN, scopes ExecuteStatement and GetCredentials to that one workgroup', () => {
    const statements = statementsOf('Workgroup');
    expect(executeStatement(statements)).toEqual([
      { Effect: 'Allow', Action: ['redshift-data:ExecuteStatement', 'redshift-data:BatchExecuteStatement'], Resource: WORKGROUP_ARN },
    ]);
    expect(statements).toContainEqual({ Effect: 'Allow', Action: 'redshift-serverless:GetCredentials', Resource: WORKGROUP_ARN });
    expect(variablesOf('Workgroup')).toMatchObject({ WAREHOUSE_WORKGROUP: 'analytics', WAREHOUSE_DATABASE: 'dev' });
    expect(variablesOf('Workgroup')).not.toHaveProperty('WAREHOUSE_CLUSTER_ID');
    expect(variablesOf('Workgroup')).not.toHaveProperty('WAREHOUSE_SECRET_ARN');
    expect(JSON.stringify(statements)).not.toContain('secretsmanager');
  });

  it('with a workgroup and a secret, reads only that secret instead of getting IAM credentials, and passes its ARN with the workgroup', () => {
    const statements = statementsOf('WorkgroupSecret');
    expect(executeStatement(statements)).toEqual([
      { Effect: 'Allow', Action: ['redshift-data:ExecuteStatement', 'redshift-data:BatchExecuteStatement'], Resource: WORKGROUP_ARN },
    ]);
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      Resource: SECRET_ARN,
    });
    expect(JSON.stringify(statements)).not.toContain('redshift-serverless:GetCredentials');
    expect(JSON.stringify(statements)).not.toContain('GetClusterCredentials');
    expect(variablesOf('WorkgroupSecret')).toEqual(
      expect.objectContaining({ WAREHOUSE_DATABASE: 'dev', WAREHOUSE_WORKGROUP: 'analytics', WAREHOUSE_SECRET_ARN: SECRET_ARN }),
    );
    expect(variablesOf('WorkgroupSecret')).not.toHaveProperty('WAREHOUSE_CLUSTER_ID');
    expect(variablesOf('WorkgroupSecret')).not.toHaveProperty('WAREHOUSE_DB_USER');
  });

  it('accepts a secret object from another stack: reads it by reference and puts its ARN in the environment', () => {
    const statements = statementsOf('SecretObject');
    const secretRead = statements.find((s) => JSON.stringify(s.Action).includes('secretsmanager:GetSecretValue'));
    expect(JSON.stringify(secretRead?.Resource)).toContain('Fn::ImportValue');
    expect(JSON.stringify(variablesOf('SecretObject').WAREHOUSE_SECRET_ARN)).toContain('Fn::ImportValue');
  });

  it('with a customer-managed key on the secret, may decrypt with that key only through Secrets Manager', () => {
    expect(statementsOf('SecretKms')).toContainEqual({
      Effect: 'Allow',
      Action: 'kms:Decrypt',
      Resource: KEY_ARN,
      Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['secretsmanager.', { Ref: 'AWS::Region' }, '.', { Ref: 'AWS::URLSuffix' }]] } } },
    });
    for (const name of ['ClusterSecret', 'WorkgroupSecret', 'ClusterUser', 'Workgroup']) expect(JSON.stringify(statementsOf(name)), name).not.toContain('kms:');
  });

  it('names the handler role as given and reports the database user it maps to, or where the user name is', () => {
    const roleOf = (name: string) => {
      const stack = stacks[name]!;
      return templates[name]!.toJSON().Resources[stack.getLogicalId(stack.handlerRole.node.defaultChild as CfnElement)].Properties.RoleName;
    };
    expect(roleOf('ClusterUser')).toBe('analytics-publisher');
    expect(roleOf('Workgroup')).toBe('workgroup-handlers');
    templates.Workgroup!.hasOutput('DatabaseUser', { Value: 'IAMR:workgroup-handlers' });
    templates.ClusterUser!.hasOutput('DatabaseUser', { Value: 'publisher' });
    templates.ClusterSecret!.hasOutput('DatabaseUser', { Value: `the username in ${SECRET_ARN}` });
  });
});

describe('grantWarehouseAccess', () => {
  it('returns one iam.Grant of every statement it added: the Data API, its own statements, the credentials', () => {
    const stack = new Stack(new App(), 'Grants');
    const role = new Role(stack, 'Steps', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    const grant = grantWarehouseAccess(role, { workgroupName: 'analytics', database: 'dev' });

    expect(grant).toBeInstanceOf(Grant);
    expect(grant.success).toBe(true);
    expect(grant.principalStatements.flatMap((s) => s.actions).sort()).toEqual([
      'redshift-data:BatchExecuteStatement',
      'redshift-data:CancelStatement',
      'redshift-data:DescribeStatement',
      'redshift-data:ExecuteStatement',
      'redshift-data:GetStatementResult',
      'redshift-data:ListStatements',
      'redshift-serverless:GetCredentials',
    ]);
  });
});
