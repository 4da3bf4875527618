import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../domain/errors.ts';
import {
  dataApiSettingsFromEnv,
  databaseUserFor,
  defaultHandlerRoleName,
  validateHandlerRoleName,
  validateWarehouseTarget,
  WarehouseEnv,
  type WarehouseTarget,
  warehouseEnvironment,
  warehouseTargetFromContext,
  warehouseTargetFromEnv,
} from '../../domain/warehouse-target.ts';

const SECRET_ARN = 'arn:aws:secretsmanager:eu-central-1:111122223333:secret:warehouse-AbCdEf';
const WORKGROUP_ARN = 'arn:aws:redshift-serverless:eu-central-1:111122223333:workgroup/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0';

describe('warehouseTargetFromEnv', () => {
  it.each([{}, { WAREHOUSE_DATABASE: '' }])('a missing or empty WAREHOUSE_DATABASE (%j) is a ValidationError naming the variable', (env) => {
    expect(() => warehouseTargetFromEnv({ ...env, WAREHOUSE_WORKGROUP: 'wg' })).toThrow(ValidationError);
    expect(() => warehouseTargetFromEnv({ ...env, WAREHOUSE_WORKGROUP: 'wg' })).toThrow('environment variable WAREHOUSE_DATABASE is not set');
  });

  it.each([
    ['neither', { WAREHOUSE_DATABASE: 'dev' }],
    ['both', { WAREHOUSE_DATABASE: 'dev', WAREHOUSE_CLUSTER_ID: 'c1', WAREHOUSE_DB_USER: 'u', WAREHOUSE_WORKGROUP: 'wg' }],
    ['neither (empty strings)', { WAREHOUSE_DATABASE: 'dev', WAREHOUSE_CLUSTER_ID: '', WAREHOUSE_WORKGROUP: '' }],
  ])('rejects %s of WAREHOUSE_CLUSTER_ID and WAREHOUSE_WORKGROUP', (_, env) => {
    expect(() => warehouseTargetFromEnv(env)).toThrow(ValidationError);
    expect(() => warehouseTargetFromEnv(env)).toThrow('set exactly one of WAREHOUSE_CLUSTER_ID and WAREHOUSE_WORKGROUP');
  });

  it('rejects a cluster with neither WAREHOUSE_SECRET_ARN nor WAREHOUSE_DB_USER', () => {
    expect(() => warehouseTargetFromEnv({ WAREHOUSE_DATABASE: 'dev', WAREHOUSE_CLUSTER_ID: 'c1' })).toThrow(
      new ValidationError('a cluster needs WAREHOUSE_SECRET_ARN or WAREHOUSE_DB_USER'),
    );
  });

  it('builds a cluster target with a secret', () => {
    expect(warehouseTargetFromEnv({ WAREHOUSE_DATABASE: 'dev', WAREHOUSE_CLUSTER_ID: 'c1', WAREHOUSE_SECRET_ARN: SECRET_ARN })).toEqual({
      database: 'dev',
      clusterIdentifier: 'c1',
      secretArn: SECRET_ARN,
    });
  });

  it('builds a cluster target with a database user', () => {
    expect(warehouseTargetFromEnv({ WAREHOUSE_DATABASE: 'dev', WAREHOUSE_CLUSTER_ID: 'c1', WAREHOUSE_DB_USER: 'loader' })).toEqual({
      database: 'dev',
      clusterIdentifier: 'c1',
      dbUser: 'loader',
    });
  });

  it('builds a serverless target from the workgroup alone', () => {
    expect(warehouseTargetFromEnv({ WAREHOUSE_DATABASE: 'dev', WAREHOUSE_WORKGROUP: 'wg' })).toEqual({ database: 'dev', workgroupName: 'wg' });
  });
});

describe('warehouseTargetFromContext', () => {
  it('reads the warehouse from context, also as a JSON string, and rejects unknown keys', () => {
    expect(warehouseTargetFromContext('{"workgroupName":"wg","database":"dev"}')).toEqual({ workgroupName: 'wg', database: 'dev' });
    expect(warehouseTargetFromContext({ clusterIdentifier: 'c1', database: 'dev' }, SECRET_ARN)).toEqual({
      clusterIdentifier: 'c1',
      database: 'dev',
      secretArn: SECRET_ARN,
    });
    expect(warehouseTargetFromContext({ workgroupName: 'wg', database: 'dev' }, SECRET_ARN)).toEqual({
      workgroupName: 'wg',
      database: 'dev',
      secretArn: SECRET_ARN,
    });
    expect(() => warehouseTargetFromContext({ workgroup: 'wg', database: 'dev' })).toThrow(/unknown keys workgroup/);
  });

  it('rejects a context warehouse that is neither an object nor its JSON, quoting a bounded part of it', () => {
    expect(() => warehouseTargetFromContext('{"workgroupName": ')).toThrow(
      new ValidationError('context warehouse must be an object like {"workgroupName": "analytics", "database": "dev"}, got "{\\"workgroupName\\": "'),
    );
    expect(() => warehouseTargetFromContext('w'.repeat(1024 * 1024))).toThrow(/got "w+\.\.\. \(1048578 characters\)$/);
  });

  it('rejects a context value that is not a string, naming its key', () => {
    expect(() => warehouseTargetFromContext({ workgroupName: 'wg', database: 7 })).toThrow(new ValidationError('context warehouse.database must be a string'));
    expect(() => warehouseTargetFromContext({ workgroupName: 'wg', database: 'dev' }, 42)).toThrow(new ValidationError('context secretArn must be a string'));
  });
});

describe('validateWarehouseTarget', () => {
  it('accepts a workgroupArn only known at deploy time without checking its form', () => {
    const target = { database: 'dev', workgroupName: 'wg', workgroupArn: '${Token[TOKEN.42]}' };

    expect(() => validateWarehouseTarget(target)).toThrow(/workgroupArn must look like/);
    expect(() => validateWarehouseTarget(target, 'warehouse', { isUnresolved: (v) => v.startsWith('${Token[') })).not.toThrow();
  });

  it('names the prop path it was given', () => {
    expect(() => validateWarehouseTarget({ database: 'dev' }, 'props.target')).toThrow(
      new ValidationError('props.target: set exactly one of props.target.clusterIdentifier and props.target.workgroupName'),
    );
  });

  it('counts a secret object as the credentials of a cluster', () => {
    expect(() => validateWarehouseTarget({ database: 'dev', clusterIdentifier: 'c1', secret: { secretArn: SECRET_ARN } })).not.toThrow();
  });
});

describe('the handler environment, written by the stack and read by the handlers', () => {
  it.each<[string, WarehouseTarget]>([
    ['a workgroup', { database: 'dev', workgroupName: 'wg' }],
    ['a workgroup with a secret', { database: 'dev', workgroupName: 'wg', secretArn: SECRET_ARN }],
    ['a cluster with a secret', { database: 'dev', clusterIdentifier: 'c1', secretArn: SECRET_ARN }],
    ['a cluster with a database user', { database: 'dev', clusterIdentifier: 'c1', dbUser: 'loader' }],
  ])('reads back %s as it was written', (_what, target) => {
    expect(warehouseTargetFromEnv(warehouseEnvironment(target))).toEqual(target);
  });

  it('leaves the workgroup ARN out: only IAM needs it', () => {
    const env = warehouseEnvironment({ database: 'dev', workgroupName: 'wg', workgroupArn: WORKGROUP_ARN });

    expect(env).toEqual({ [WarehouseEnv.DATABASE]: 'dev', [WarehouseEnv.WORKGROUP]: 'wg' });
  });

  it("takes a secret object's ARN", () => {
    const env = warehouseEnvironment({ database: 'dev', clusterIdentifier: 'c1', secret: { secretArn: SECRET_ARN } });

    expect(env).toEqual({ WAREHOUSE_DATABASE: 'dev', WAREHOUSE_CLUSTER_ID: 'c1', WAREHOUSE_SECRET_ARN: SECRET_ARN });
  });

  it('writes and reads back the local Data API endpoint and poll cap', () => {
    const env = warehouseEnvironment({ database: 'dev', workgroupName: 'local' }, { endpoint: 'http://127.0.0.1:4000', pollMaxDelayMs: 100 });

    expect(env).toMatchObject({ REDSHIFT_DATA_ENDPOINT: 'http://127.0.0.1:4000', WAREHOUSE_POLL_MAX_MS: '100' });
    expect(dataApiSettingsFromEnv(env)).toEqual({ endpoint: 'http://127.0.0.1:4000', pollMaxDelayMs: 100 });
  });

  it('leaves unset Data API settings to the handlers', () => {
    expect(dataApiSettingsFromEnv({ WAREHOUSE_DATABASE: 'dev' })).toEqual({});
  });

  it.each(['fast', '0', '-5'])('rejects the poll cap %j, naming the variable', (value) => {
    expect(() => dataApiSettingsFromEnv({ WAREHOUSE_POLL_MAX_MS: value })).toThrow(
      new ValidationError(`WAREHOUSE_POLL_MAX_MS must be a positive number of milliseconds, got ${JSON.stringify(value)}`),
    );
  });
});

describe('databaseUserFor: the database user the step handlers act as', () => {
  it('is IAMR:<role name> on a workgroup without a secret, whether or not the workgroup ARN is known', () => {
    expect(databaseUserFor({ database: 'dev', workgroupName: 'analytics' }, 'atomicpublish-handlers')).toEqual({
      kind: 'iam-role',
      name: 'IAMR:atomicpublish-handlers',
    });
    expect(databaseUserFor({ database: 'dev', workgroupName: 'analytics', workgroupArn: WORKGROUP_ARN }, 'publisher')).toEqual({
      kind: 'iam-role',
      name: 'IAMR:publisher',
    });
  });

  it('is the dbUser itself on a cluster with a database user (IAM: is only the prefix of its login name)', () => {
    expect(databaseUserFor({ database: 'dev', clusterIdentifier: 'c1', dbUser: 'publisher' }, 'atomicpublish-handlers')).toEqual({
      kind: 'db-user',
      name: 'publisher',
    });
  });

  it.each<[string, WarehouseTarget | { database: string; workgroupName: string; secret: { secretArn: string } }]>([
    ['a cluster with a secret', { database: 'dev', clusterIdentifier: 'c1', secretArn: SECRET_ARN }],
    ['a workgroup with a secret', { database: 'dev', workgroupName: 'analytics', secretArn: SECRET_ARN }],
    ['a secret object', { database: 'dev', workgroupName: 'analytics', secret: { secretArn: SECRET_ARN } }],
  ])("is the secret's username with %s, which only the secret knows", (_, target) => {
    expect(databaseUserFor(target, 'atomicpublish-handlers')).toEqual({ kind: 'secret', secretArn: SECRET_ARN });
  });

  it('rejects a target the stack would reject, and a role name IAM would or that is not lower case', () => {
    expect(() => databaseUserFor({ database: 'dev', clusterIdentifier: 'c1' }, 'x')).toThrow(/warehouse\.clusterIdentifier needs exactly one of/);
    expect(() => databaseUserFor({ database: 'dev', workgroupName: 'analytics' }, 'AtomicPublish-Handlers')).toThrow(ValidationError);
  });
});

describe('the handler role name', () => {
  it("defaults to the stack name in lower case with -handlers, cut to IAM's 64 characters", () => {
    expect(defaultHandlerRoleName('AtomicPublish')).toBe('atomicpublish-handlers');
    const long = defaultHandlerRoleName(`Stack${'x'.repeat(120)}`);
    expect(long).toHaveLength(64);
    expect(long.endsWith('-handlers')).toBe(true);
    expect(() => validateHandlerRoleName(long)).not.toThrow();
  });

  it.each(['publisher', 'team.a+b=c,d@e_f-g', 'x'.repeat(64)])('accepts %j', (name) => {
    expect(() => validateHandlerRoleName(name)).not.toThrow();
  });

  it.each(['', 'Publisher', 'x'.repeat(65), 'team/publisher', 'a b', 42])('rejects %j, naming the setting', (name) => {
    expect(() => validateHandlerRoleName(name)).toThrow(ValidationError);
    expect(() => validateHandlerRoleName(name)).toThrow(/^handlerRoleName must be 1 to 64 of/);
  });
});
