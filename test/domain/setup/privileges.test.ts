import { describe, expect, it } from 'vitest';
import { MissingPrivilegeError, ValidationError } from '../../../domain/errors.ts';
import { checkSourceTypes, typeFamily } from '../../../domain/plan/plan.ts';
import {
  describeRequirement,
  isGranted,
  missingPrivilegeError,
  missingPrivileges,
  type PrivilegeFacts,
  requiredPrivileges,
  sourceRelations,
} from '../../../domain/setup/privileges.ts';
import { errorOf, pipelineWith } from '../fixtures.ts';

const joined = pipelineWith({
  sourceSql: `WITH recent AS (SELECT * FROM raw.order_events WHERE ordered_at >= :start AND ordered_at < :end)
              SELECT r.order_id, r.ordered_at, r.amount FROM recent r JOIN raw.customers c USING (customer_id) JOIN ref.regions g ON g.id = c.region_id`,
});

describe('requiredPrivileges', () => {
  it('needs USAGE once per source schema and SELECT on every table the source reads, not on its CTE names', () => {
    expect(requiredPrivileges(joined).map(describeRequirement)).toEqual([
      'CREATE on the database',
      'USAGE on schema analytics',
      'CREATE on schema analytics',
      'ownership of table analytics.orders',
      'SYSLOG ACCESS UNRESTRICTED',
      'USAGE on schema raw',
      'USAGE on schema ref',
      'SELECT on raw.order_events',
      'SELECT on raw.customers',
      'SELECT on ref.regions',
    ]);
  });

  it('asks USAGE on the target schema once when a source lives there too', () => {
    const local = pipelineWith({
      sourceSql: 'SELECT order_id, ordered_at, amount FROM analytics.order_events WHERE ordered_at >= :start AND ordered_at < :end',
    });
    expect(requiredPrivileges(local).filter((r) => r.kind === 'schema' && r.privilege === 'USAGE')).toHaveLength(1);
  });

  it('refuses a source table without a schema, naming the pipeline and the table', () => {
    const unqualified = pipelineWith({ sourceSql: 'SELECT order_id, ordered_at, amount FROM order_events WHERE ordered_at >= :start AND ordered_at < :end' });
    const error = errorOf(() => sourceRelations(unqualified));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toBe(
      'pipeline orders: sourceSql reads order_events without a schema; qualify it (schema.order_events) so that the grants name the table the query reads',
    );
  });
});

describe('missingPrivileges', () => {
  const required = requiredPrivileges(joined);
  const all: PrivilegeFacts = {
    user: 'IAMR:steps',
    databaseCreate: true,
    schemas: new Map(['analytics', 'raw', 'ref'].map((s) => [s, { usage: true, create: true }])),
    relations: new Map([
      ['analytics.orders', { owner: 'IAMR:steps', select: true }],
      ['raw.order_events', { owner: 'etl', select: true }],
      ['raw.customers', { owner: 'etl', select: true }],
      ['ref.regions', { owner: 'etl', select: true }],
    ]),
  };

  it('finds nothing missing when the facts hold every requirement', () => {
    expect(missingPrivileges(required, all)).toEqual([]);
  });

  it('finds each privilege that is not held', () => {
    const facts: PrivilegeFacts = {
      ...all,
      databaseCreate: false,
      schemas: new Map([...all.schemas, ['analytics', { usage: true, create: false }]]),
      relations: new Map([...all.relations!, ['analytics.orders', { owner: 'etl', select: true }], ['ref.regions', { owner: 'etl', select: false }]]),
    };
    expect(missingPrivileges(required, facts).map(describeRequirement)).toEqual([
      'CREATE on the database',
      'CREATE on schema analytics',
      'ownership of table analytics.orders',
      'SELECT on ref.regions',
    ]);
  });

  it('judges no object the warehouse did not list (absent, or its tables not asked yet)', () => {
    expect(missingPrivileges(required, { ...all, schemas: new Map(), relations: undefined })).toEqual([]);
  });

  it('says what is missing, for which user, owned by whom, and which command prints the setup', () => {
    const facts: PrivilegeFacts = { ...all, relations: new Map([...all.relations!, ['analytics.orders', { owner: 'admin', select: true }]]) };
    const error = missingPrivilegeError(joined, facts, missingPrivileges(required, facts));
    expect(error).toBeInstanceOf(MissingPrivilegeError);
    expect(error.name).toBe('MissingPrivilegeError');
    expect(error.message).toBe(
      'pipeline orders: database user "IAMR:steps" lacks ownership of table analytics.orders (owned by admin), to rename it in the publish and drop its old versions. ' +
        "Run the SQL printed by `npm run setup-sql -- --pipeline orders --user 'IAMR:steps'` as a superuser (it is safe to run again).",
    );
  });

  it("reads PostgreSQL's booleans and Redshift's text answers alike", () => {
    expect([true, 't', 'true'].map(isGranted)).toEqual([true, true, true]);
    expect([false, 'f', 'false', null, undefined].map(isGranted)).toEqual([false, false, false, false, false]);
  });
});

describe('checkSourceTypes', () => {
  const pipeline = pipelineWith({});
  const live = [
    { name: 'order_id', dataType: 'bigint' },
    { name: 'ordered_at', dataType: 'timestamp without time zone' },
    { name: 'amount', dataType: 'numeric' },
  ];

  it('accepts the same family under either spelling, and an integer where an exact numeric goes', () => {
    expect(() =>
      checkSourceTypes(pipeline, live, [
        { name: 'order_id', typeName: 'int4' },
        { name: 'ordered_at', typeName: 'timestamp' },
        { name: 'amount', typeName: 'int8' },
      ]),
    ).not.toThrow();
  });

  it('refuses text for an integer, a timestamp with time zone for a timestamp and a float for a numeric, naming each column', () => {
    const error = errorOf(() =>
      checkSourceTypes(pipeline, live, [
        { name: 'order_id', typeName: 'varchar' },
        { name: 'ordered_at', typeName: 'timestamptz' },
        { name: 'amount', typeName: 'float8' },
      ]),
    );
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toBe(
      'pipeline orders: field sourceSql produces values that do not fit the live table: ' +
        'column order_id is varchar (string) where analytics.orders.order_id is bigint (integer); ' +
        'column ordered_at is timestamptz (timestamp with time zone) where analytics.orders.ordered_at is timestamp without time zone (timestamp); ' +
        "column amount is float8 (float) where analytics.orders.amount is numeric (exact numeric). Cast them in the source query to the live column's type",
    );
  });

  it('keeps a type it does not group as its own family', () => {
    expect(typeFamily('SUPER')).toBe('super');
    expect(typeFamily('character varying')).toBe(typeFamily('bpchar'));
  });
});
