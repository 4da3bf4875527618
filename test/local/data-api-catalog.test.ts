// The local Data API's metadata operations (ListDatabases, ListSchemas,
// ListTables, DescribeTable) through the real SDK client, and on the wire
// as the AWS CLI sends them: what the connecting user may see, LIKE
// patterns, pages, and the column metadata GetStatementResult uses too.
import {
  DatabaseConnectionException,
  DescribeTableCommand,
  GetStatementResultCommand,
  ListDatabasesCommand,
  ListSchemasCommand,
  ListTablesCommand,
  ValidationException,
} from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { localRedshiftDataClient } from '../../local/aws-clients.ts';
import { ensureLocalUser } from '../../local/database-users.ts';
import { awsJsonRequest } from '../support/aws-wire.ts';
import { useWarehouse, type Warehouse } from '../support/warehouse.ts';

/** A user with USAGE on `sales` and SELECT on one table and one column of another; nothing in `hr`. */
const READER = 'IAMR:catalog-reader';

let wh: Warehouse;
let asReader: { Database: string; ClusterIdentifier: string; DbUser: string };

beforeAll(async () => {
  wh = await useWarehouse('catalog');
  await ensureLocalUser(wh.pg, READER);
  for (const sql of [
    'CREATE SCHEMA sales',
    'CREATE SCHEMA sales_archive',
    'CREATE SCHEMA hr',
    `CREATE TABLE sales.orders (id int8 NOT NULL, amount numeric(12,2) DEFAULT 0, region varchar(16), placed_at timestamp, note text)`,
    'CREATE TABLE sales.order_lines (order_id int8, sku char(8))',
    'CREATE TABLE sales.customers (id int4, email varchar(256), vip boolean)',
    'CREATE VIEW sales.big_orders AS SELECT id, amount FROM sales.orders WHERE amount > 100',
    'CREATE TABLE sales_archive.orders_2020 (id int8)',
    'CREATE TABLE hr.salaries (person text, amount numeric(10,2))',
    `GRANT USAGE ON SCHEMA sales TO ${quoteUser(READER)}`,
    `GRANT SELECT ON sales.orders TO ${quoteUser(READER)}`,
    `GRANT SELECT (email) ON sales.customers TO ${quoteUser(READER)}`,
  ]) {
    await wh.query(sql);
  }
  asReader = { ...wh.target, DbUser: READER };
});
afterAll(() => wh?.close());

describe('ListDatabases', () => {
  it("lists the server's databases, this one among them", async () => {
    const { Databases = [] } = await wh.client.send(new ListDatabasesCommand(wh.target));
    expect(Databases).toContain(wh.target.Database);
    expect(Databases).not.toContain('template0');
  });

  it('pages with MaxResults and NextToken', async () => {
    const first = await wh.client.send(new ListDatabasesCommand({ ...wh.target, MaxResults: 1 }));
    expect(first.Databases).toHaveLength(1);
    expect(first.NextToken).toBeDefined();
    const rest = await wh.client.send(new ListDatabasesCommand({ ...wh.target, NextToken: first.NextToken! }));
    expect(rest.Databases).not.toContain(first.Databases![0]);
  });
});

describe('ListSchemas', () => {
  it('lists the schemas the user may use, without the local engine’s own', async () => {
    await wh.run('SELECT 1'); // installs the local system views' schema in this database
    const { Schemas = [] } = await wh.client.send(new ListSchemasCommand(wh.target));
    expect(Schemas).toEqual(expect.arrayContaining(['hr', 'information_schema', 'pg_catalog', 'public', 'sales', 'sales_archive']));
    expect(Schemas).not.toContain('local_redshift');
    expect(Schemas.some((s) => s.startsWith('pg_toast'))).toBe(false);

    const reader = await wh.client.send(new ListSchemasCommand(asReader));
    expect(reader.Schemas).toContain('sales');
    expect(reader.Schemas).not.toContain('hr');
  });

  it('filters by a LIKE pattern: % any substring, _ any one character', async () => {
    const like = async (SchemaPattern: string) => (await wh.client.send(new ListSchemasCommand({ ...wh.target, SchemaPattern }))).Schemas;
    expect(await like('sales%')).toEqual(['sales', 'sales_archive']);
    expect(await like('_r')).toEqual(['hr']);
    expect(await like('sales')).toEqual(['sales']);
  });
});

describe('ListTables', () => {
  it('lists tables and views with their schema and type, only those the user holds a privilege on', async () => {
    const all = await wh.client.send(new ListTablesCommand({ ...wh.target, SchemaPattern: 'sales' }));
    expect(all.Tables).toEqual([
      { name: 'big_orders', schema: 'sales', type: 'VIEW' },
      { name: 'customers', schema: 'sales', type: 'TABLE' },
      { name: 'order_lines', schema: 'sales', type: 'TABLE' },
      { name: 'orders', schema: 'sales', type: 'TABLE' },
    ]);
    // A grant on one column makes the table visible, as information_schema.tables shows it.
    const reader = await wh.client.send(new ListTablesCommand({ ...asReader, SchemaPattern: 'sales%' }));
    expect(reader.Tables?.map((t) => t.name)).toEqual(['customers', 'orders']);
  });

  it('matches SchemaPattern and TablePattern together, and types the catalog’s tables as system tables', async () => {
    const orders = await wh.client.send(new ListTablesCommand({ ...wh.target, SchemaPattern: 'sales%', TablePattern: 'orders%' }));
    expect(orders.Tables?.map((t) => `${t.schema}.${t.name}`)).toEqual(['sales.orders', 'sales_archive.orders_2020']);
    const anySchema = await wh.client.send(new ListTablesCommand({ ...wh.target, TablePattern: 'salar_es' }));
    expect(anySchema.Tables).toEqual([{ name: 'salaries', schema: 'hr', type: 'TABLE' }]);
    const system = await wh.client.send(new ListTablesCommand({ ...wh.target, SchemaPattern: 'information_schema', TablePattern: 'sql_features' }));
    expect(system.Tables).toEqual([{ name: 'sql_features', schema: 'information_schema', type: 'SYSTEM TABLE' }]);
  });

  it('pages with MaxResults and NextToken until the list is done', async () => {
    const names: string[] = [];
    let NextToken: string | undefined;
    let pages = 0;
    do {
      const page = await wh.client.send(new ListTablesCommand({ ...wh.target, SchemaPattern: 'sales', MaxResults: 3, ...(NextToken ? { NextToken } : {}) }));
      names.push(...(page.Tables ?? []).map((t) => t.name!));
      NextToken = page.NextToken;
      pages += 1;
    } while (NextToken);
    expect(pages).toBe(2);
    expect(names).toEqual(['big_orders', 'customers', 'order_lines', 'orders']);
  });

  it('refuses MaxResults out of 0..1000, a token it did not issue, and a connection it cannot use', async () => {
    await expect(wh.client.send(new ListTablesCommand({ ...wh.target, MaxResults: 1001 }))).rejects.toThrow(ValidationException);
    await expect(wh.client.send(new ListTablesCommand({ ...wh.target, NextToken: 'nope' }))).rejects.toThrow(/Invalid NextToken/);
    await expect(wh.client.send(new ListTablesCommand({ ...wh.target, WorkgroupName: 'local' }))).rejects.toThrow(/either ClusterIdentifier or WorkgroupName/);
    const { ClusterIdentifier: _, DbUser: __, ...noTarget } = wh.target;
    await expect(wh.client.send(new ListTablesCommand(noTarget))).rejects.toBeInstanceOf(ValidationException);
  });

  it('answers a database that does not exist with DatabaseConnectionException', async () => {
    const once = localRedshiftDataClient(wh.endpoint, { maxAttempts: 1 });
    try {
      const missing = once.send(new ListTablesCommand({ ...wh.target, Database: 'no_such_db' }));
      await expect(missing).rejects.toBeInstanceOf(DatabaseConnectionException);
      await expect(missing).rejects.toThrow('FATAL: database "no_such_db" does not exist');
      const connected = once.send(new ListTablesCommand({ ...wh.target, ConnectedDatabase: 'no_such_db' }));
      await expect(connected).rejects.toBeInstanceOf(DatabaseConnectionException);
    } finally {
      once.destroy();
    }
  });
});

describe('DescribeTable', () => {
  it("gives a table's columns with Redshift type names, sizes, nullability and defaults", async () => {
    const described = await wh.client.send(new DescribeTableCommand({ ...wh.target, Schema: 'sales', Table: 'orders' }));
    expect(described.TableName).toBe('orders');
    const common = { isCurrency: false, schemaName: 'sales', tableName: 'orders' };
    expect(described.ColumnList).toEqual([
      { ...common, name: 'id', label: 'id', typeName: 'int8', nullable: 0, isSigned: true, isCaseSensitive: false, precision: 19, scale: 0, length: 0 },
      {
        ...common,
        name: 'amount',
        label: 'amount',
        typeName: 'numeric',
        nullable: 1,
        isSigned: true,
        isCaseSensitive: false,
        precision: 12,
        scale: 2,
        length: 0,
        columnDefault: '0',
      },
      {
        ...common,
        name: 'region',
        label: 'region',
        typeName: 'varchar',
        nullable: 1,
        isSigned: false,
        isCaseSensitive: true,
        precision: 16,
        scale: 0,
        length: 16,
      },
      {
        ...common,
        name: 'placed_at',
        label: 'placed_at',
        typeName: 'timestamp',
        nullable: 1,
        isSigned: false,
        isCaseSensitive: false,
        precision: 29,
        scale: 6,
        length: 0,
      },
      {
        ...common,
        name: 'note',
        label: 'note',
        typeName: 'varchar',
        nullable: 1,
        isSigned: false,
        isCaseSensitive: true,
        precision: 65535,
        scale: 0,
        length: 0,
      },
    ]);
  });

  it('describes the columns exactly as GetStatementResult does for a query of the table', async () => {
    const done = await wh.run('SELECT * FROM sales.orders');
    const result = await wh.client.send(new GetStatementResultCommand({ Id: done.Id }));
    const described = await wh.client.send(new DescribeTableCommand({ ...wh.target, Schema: 'sales', Table: 'orders' }));
    expect(described.ColumnList).toEqual(result.ColumnMetadata);
  });

  it('pages through the columns, and shows the user only the columns it holds a privilege on', async () => {
    const first = await wh.client.send(new DescribeTableCommand({ ...wh.target, Schema: 'sales', Table: 'orders', MaxResults: 2 }));
    expect(first.ColumnList?.map((c) => c.name)).toEqual(['id', 'amount']);
    const second = await wh.client.send(
      new DescribeTableCommand({ ...wh.target, Schema: 'sales', Table: 'orders', MaxResults: 2, NextToken: first.NextToken! }),
    );
    expect(second.ColumnList?.map((c) => c.name)).toEqual(['region', 'placed_at']);

    const customers = await wh.client.send(new DescribeTableCommand({ ...asReader, Schema: 'sales', Table: 'customers' }));
    expect(customers.ColumnList?.map((c) => c.name)).toEqual(['email']);
    const salaries = await wh.client.send(new DescribeTableCommand({ ...asReader, Schema: 'hr', Table: 'salaries' }));
    expect(salaries.ColumnList).toEqual([]);
  });

  it('without a schema, describes the table of that name in every schema', async () => {
    await wh.query('CREATE TABLE sales_archive.orders (id int8, archived_at date)');
    try {
      const both = await wh.client.send(new DescribeTableCommand({ ...wh.target, Table: 'orders' }));
      expect(both.ColumnList?.map((c) => `${c.schemaName}.${c.name}`)).toEqual([
        'sales.id',
        'sales.amount',
        'sales.region',
        'sales.placed_at',
        'sales.note',
        'sales_archive.id',
        'sales_archive.archived_at',
      ]);
    } finally {
      await wh.query('DROP TABLE sales_archive.orders');
    }
  });
});

describe('on the wire, as the AWS CLI sends them', () => {
  it('answers an AWS JSON 1.1 ListTables request with the members the CLI reads', async () => {
    const response = await awsJsonRequest(wh.endpoint, {
      protocol: '1.1',
      service: 'redshift-data',
      target: 'RedshiftData.ListTables',
      body: {
        ClusterIdentifier: 'local',
        Database: wh.target.Database,
        DbUser: wh.target.DbUser,
        SchemaPattern: 'sales',
        TablePattern: '%order%',
        MaxResults: 1,
      },
    });
    expect(response.status).toBe(200);
    expect(response.contentType).toBe('application/x-amz-json-1.1');
    expect(response.body).toEqual({ Tables: [{ name: 'big_orders', schema: 'sales', type: 'VIEW' }], NextToken: expect.any(String) });
  });

  it('answers DescribeTable and ListSchemas, and an invalid request as a typed 400 error', async () => {
    const described = await awsJsonRequest(wh.endpoint, {
      protocol: '1.1',
      service: 'redshift-data',
      target: 'RedshiftData.DescribeTable',
      body: { ClusterIdentifier: 'local', Database: wh.target.Database, DbUser: READER, Schema: 'sales', Table: 'customers' },
    });
    expect(described.body).toEqual({ TableName: 'customers', ColumnList: [expect.objectContaining({ name: 'email', typeName: 'varchar', length: 256 })] });

    const refused = await awsJsonRequest(wh.endpoint, {
      protocol: '1.1',
      service: 'redshift-data',
      target: 'RedshiftData.ListSchemas',
      body: { ClusterIdentifier: 'local', DbUser: wh.target.DbUser },
    });
    expect(refused.status).toBe(400);
    expect(refused.errorType).toBe('ValidationException');
    expect(refused.body).toMatchObject({ __type: 'ValidationException', message: 'Database is required.' });
  });
});
