// Redshift mode of the local Data API endpoint, through the real SDK client:
// PostgreSQL-only SQL fails as it would on Redshift, key constraints are
// recorded and not enforced, table attributes (ENCODE, DISTKEY, SORTKEY)
// recorded for the catalog views, TRUNCATE and VACUUM stay out of
// multi-statement transactions. The tests share one database, each on
// tables of its own; a test that reads what every table has recorded gets a
// database of its own.
import { BatchExecuteStatementCommand } from '@aws-sdk/client-redshift-data';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UNSUPPORTED } from '../../domain/redshift-sql/unsupported.ts';
import { withoutRoleKeyword } from '../../local/data-api/redshift-mode.ts';
import { UNDOCUMENTED_CLAUSES, UNDOCUMENTED_FORMS } from '../support/undocumented-forms.ts';
import { startEndpoint, untilEnded, useWarehouse, type Warehouse } from '../support/warehouse.ts';

let wh: Warehouse;
beforeAll(async () => {
  wh = await useWarehouse('redshift_mode');
  await wh.query('CREATE TABLE t (a int, b varchar(10), x int[], j text)');
  await wh.query("INSERT INTO t VALUES (1, 'one', '{1}', '{}')");
});
afterAll(() => wh?.close());

const procedure = (body: string, params = '') => `CREATE OR REPLACE PROCEDURE p(${params}) AS $$ ${body} $$ LANGUAGE plpgsql`;

/** One statement per entry of the list that uses exactly that construct. */
const EXAMPLES: Record<string, string> = {
  'ON CONFLICT': 'INSERT INTO t (a) VALUES (1) ON CONFLICT DO NOTHING',
  RETURNING: 'UPDATE t SET a = 2 RETURNING a',
  'CREATE SEQUENCE': 'CREATE SEQUENCE s',
  'sequence functions (NEXTVAL, CURRVAL, SETVAL, LASTVAL)': "SELECT nextval('s')",
  'SERIAL types': 'CREATE TABLE t2 (id bigserial)',
  'ARRAY constructors': 'SELECT ARRAY[1, 2]',
  'ARRAY subqueries': 'SELECT ARRAY(SELECT a FROM t)',
  'array types': 'SELECT CAST(:v AS int[])',
  ARRAY_AGG: 'SELECT array_agg(a) FROM t',
  'array functions': 'SELECT unnest(x) FROM t',
  'JSON types': "SELECT CAST('{}' AS jsonb)",
  'JSON functions': 'SELECT to_json(a) FROM t',
  'JSON operators': "SELECT j::text -> 'k' FROM t",
  'SQL/JSON constructors': "SELECT JSON_OBJECT('k': 1)",
  'CREATE INDEX': 'CREATE INDEX i ON t (a)',
  'GENERATE_SERIES over table data': 'INSERT INTO t (a) SELECT generate_series(1, 10)',
  STRING_AGG: "SELECT string_agg(b, ',') FROM t",
  PG_SLEEP: 'SELECT pg_sleep(0)',
  'advisory locks': 'SELECT pg_advisory_xact_lock(1)',
  'IS DISTINCT FROM': 'SELECT a FROM t WHERE a IS DISTINCT FROM 1',
  CLOCK_TIMESTAMP: 'SELECT clock_timestamp()',
  'CREATE TRIGGER': 'CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION f()',
  'table inheritance': 'CREATE TABLE c (y int) INHERITS (t)',
  'table partitioning': 'CREATE TABLE pt (a int) PARTITION BY RANGE (a)',
  'CREATE TYPE AS (composite type)': 'CREATE TYPE pair AS (a int, b int)',
  'CREATE TYPE AS ENUM': "CREATE TYPE mood AS ENUM ('ok')",
  'CREATE TYPE AS RANGE': 'CREATE TYPE intrange2 AS RANGE (subtype = int)',
  'CREATE TYPE (base type)': 'CREATE TYPE shell',
  'CREATE DOMAIN': 'CREATE DOMAIN positive AS int',
  'DO blocks': 'DO $$ BEGIN NULL; END $$',
  LISTEN: 'LISTEN ch',
  UNLISTEN: 'UNLISTEN ch',
  NOTIFY: 'NOTIFY ch',
  PG_NOTIFY: "SELECT pg_notify('ch', 'x')",
  'PL/pgSQL PERFORM': procedure('BEGIN PERFORM 1; END'),
  'PL/pgSQL GET DIAGNOSTICS other than integer_var := ROW_COUNT': procedure(
    'DECLARE c varchar(256); BEGIN DELETE FROM t WHERE false; GET DIAGNOSTICS c := PG_CONTEXT; END',
  ),
  'PL/pgSQL FOREACH over an array': procedure('DECLARE v int; BEGIN FOREACH v IN ARRAY xs LOOP NULL; END LOOP; END', 'xs int[]'),
  'PL/pgSQL ASSERT': procedure('BEGIN ASSERT 1 = 1; END'),
  'PL/pgSQL RETURN NEXT': 'CREATE FUNCTION f() RETURNS SETOF int AS $$ BEGIN RETURN NEXT 1; END $$ LANGUAGE plpgsql',
  'PL/pgSQL RETURN QUERY': 'CREATE FUNCTION f() RETURNS SETOF int AS $$ BEGIN RETURN QUERY SELECT 1; END $$ LANGUAGE plpgsql',
  'PL/pgSQL RAISE with expressions': procedure("BEGIN RAISE EXCEPTION 'n is %', n + 1; END", 'n int'),
  'CURRENT_SCHEMA with a table': 'SELECT current_schema(), a FROM t',
  'CURRENT_SCHEMAS with a table': 'SELECT current_schemas(false), a FROM t',
  'HAS_DATABASE_PRIVILEGE with a table': "SELECT a FROM t WHERE has_database_privilege(current_database(), 'CREATE')",
  'HAS_SCHEMA_PRIVILEGE with a table': "SELECT has_schema_privilege('public', 'USAGE'), a FROM t",
  'HAS_TABLE_PRIVILEGE with a table': "SELECT a FROM t WHERE has_table_privilege('t', 'SELECT')",
  'SUBSTR with a table': 'SELECT substr(b, 1) FROM t',
  'FACTORIAL with a table': 'SELECT factorial(a) FROM t',
  'AGE with a table': "SELECT age(TIMESTAMP '2026-01-01') FROM t",
  'CURRENT_TIME with a table': 'SELECT current_time, a FROM t',
  'CURRENT_TIMESTAMP with a table': 'INSERT INTO t (b) SELECT CAST(current_timestamp AS varchar(10))',
  'LOCALTIME with a table': 'SELECT localtime(0) FROM t',
  'LOCALTIMESTAMP with a table': "SELECT a FROM t WHERE localtimestamp > DATE '2000-01-01'",
  'ISFINITE with a table': "SELECT isfinite(DATE '2026-01-01') FROM t",
  'NOW with a table': "SELECT a FROM t WHERE now() > DATE '2000-01-01'",
  'GET_BIT with a table': 'SELECT get_bit(CAST(b AS bytea), 0) FROM t',
  'GET_BYTE with a table': 'SELECT get_byte(CAST(b AS bytea), 0) FROM t',
  'SET_BIT with a table': 'SELECT set_bit(CAST(b AS bytea), 0, 1) FROM t',
  'SET_BYTE with a table': 'SELECT set_byte(CAST(b AS bytea), 0, 1) FROM t',
  'TO_ASCII with a table': 'SELECT to_ascii(b) FROM t',
  'catalog tables Redshift does not join with user tables': 'SELECT t.a, s.n_distinct FROM t JOIN pg_stats s ON s.attname = t.b',
};

/** Near misses that Redshift runs, and so does the endpoint. */
const COUNTER_EXAMPLES: Record<string, string> = {
  'GENERATE_SERIES reading no table': 'SELECT n FROM generate_series(1, 3) AS n',
  'GENERATE_SERIES over catalog tables only': "SELECT n FROM pg_catalog.pg_namespace, generate_series(1, 2) AS n WHERE nspname = 'public'",
  'GENERATE_SERIES with a common table expression': 'WITH k AS (SELECT 2 AS m) SELECT generate_series(1, m) FROM k',
  'leader-node functions reading no table':
    "SELECT current_schema(), now(), current_timestamp, substr('amazon', 5), has_database_privilege(current_database(), 'CREATE')",
  'leader-node functions over catalog tables only': "SELECT nspname, has_schema_privilege(nspname, 'USAGE') FROM pg_namespace WHERE nspname = current_schema",
  'HAS_TABLE_PRIVILEGE over joined catalog tables': `SELECT c.relname, HAS_TABLE_PRIVILEGE(QUOTE_IDENT(n.nspname) || '.' || QUOTE_IDENT(c.relname), 'SELECT')
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'`,
  'GET DIAGNOSTICS of ROW_COUNT, a built-in variable of PL/pgSQL': procedure(
    'DECLARE n int; BEGIN DELETE FROM t WHERE false; GET DIAGNOSTICS n := ROW_COUNT; END',
  ),
  'a listed catalog table joined with a user table': 'SELECT t.a, c.relname FROM t JOIN pg_class c ON c.relname = t.b',
  'an unlisted catalog table read without a user table': 'SELECT count(*) FROM pg_stats',
  'SUBSTRING, CURRENT_DATE and CURRENT_USER with a table': 'SELECT substring(b, 1, 2), current_date, current_user FROM t',
  'Redshift JSON function': `SELECT json_extract_path_text('{"k": "v"}', 'k')`,
  'comparison with = and IS NULL': 'SELECT a FROM t WHERE a <> 1 OR a IS NULL',
  'RAISE with variables only': procedure("BEGIN RAISE EXCEPTION 'n is %', n; END", 'n int'),
  'SQL inside PL/pgSQL that Redshift runs': procedure(
    "DECLARE s varchar(100); BEGIN SELECT INTO s listagg(b, ',') FROM t; IF s IS NULL THEN RAISE INFO 'none'; END IF; END",
  ),
};

describe('constructs Redshift does not support', () => {
  it('has an example statement for every entry of the list', () => {
    expect(Object.keys(EXAMPLES).sort()).toEqual(UNSUPPORTED.map((e) => e.construct).sort());
  });

  it.each(UNSUPPORTED.map((entry) => [entry.construct, entry]))('fails a statement using %s, naming it and its Redshift page', async (construct, entry) => {
    const done = await wh.run(EXAMPLES[construct]!, construct === 'array types' ? { v: '{1}' } : undefined);
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toContain(`ERROR: ${construct} is not supported on Amazon Redshift`);
    expect(done.Error).toContain(entry.citation.url);
  });

  it.each(Object.entries(COUNTER_EXAMPLES))('runs %s', async (_, sql) => {
    const done = await wh.run(sql);
    expect(done.Error).toBeUndefined();
    expect(done.Status).toBe('FINISHED');
  });

  it("says why a leader-node function fails with a table, in Redshift's words, and names an unjoinable catalog table", async () => {
    const leader = await wh.run('SELECT a FROM public.t WHERE now() IS NOT NULL');
    expect(leader.Error).toContain('ERROR: NOW with a table is not supported on Amazon Redshift; use GETDATE or SYSDATE; it runs only on the leader node');
    expect(leader.Error).toContain('Specified types or functions (one per INFO message) not supported on Amazon Redshift tables');
    const system = await wh.run('SELECT current_schema(), count(*) FROM svv_transactions');
    expect(system.Error).toMatch(/^ERROR: CURRENT_SCHEMA with a table is not supported/);
    const catalog = await wh.run('SELECT t.a FROM t JOIN pg_catalog.pg_roles r ON r.rolname = t.b');
    expect(catalog.Error).toContain('pg_catalog.pg_roles cannot be read with a user table');
    expect(catalog.Error).toContain('https://docs.aws.amazon.com/redshift/latest/dg/c_join_PG.html');
  });

  it('lets LISTAGG, the replacement for STRING_AGG, through to the database, which runs it (redshift-functions.test.ts)', async () => {
    expect(await wh.select("SELECT listagg(b, ',') WITHIN GROUP (ORDER BY b) FROM t WHERE b = 'one'")).toEqual([['one']]);
  });

  it('refuses a whole batch before any part runs when one part is refused', async () => {
    const { Id } = await wh.client.send(
      new BatchExecuteStatementCommand({ ...wh.target, Sqls: ["INSERT INTO t (a, b) VALUES (7, 'seven')", "SELECT string_agg(b, ',') FROM t"] }),
    );
    const done = await untilEnded(wh.client, Id!);
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toMatch(/^ERROR: STRING_AGG is not supported on Amazon Redshift/);
    expect(done.SubStatements?.map((s) => s.Status)).toEqual(['ABORTED', 'FAILED']);
    expect(await wh.query('SELECT count(*)::int AS n FROM t WHERE a = 7')).toEqual([{ n: 0 }]);
  });

  it('runs PostgreSQL-only SQL when Redshift mode is off', async () => {
    const plain = await wh.otherEndpoint({ redshiftMode: false });
    const { Id } = await plain.client.send(new BatchExecuteStatementCommand({ ...wh.target, Sqls: ["SELECT string_agg(b, ',') FROM t"] }));
    expect((await untilEnded(plain.client, Id!)).Status).toBe('FINISHED');
  });
});

describe('forms Redshift does not document (the allow-list)', () => {
  it.each([
    ["ALTER TABLE t ALTER COLUMN b SET DEFAULT 'x'", 'ALTER TABLE ALTER COLUMN ... SET DEFAULT / DROP DEFAULT', 'r_ALTER_TABLE.html'],
    ['ALTER TABLE t ALTER COLUMN a TYPE bigint', 'ALTER COLUMN ... TYPE int8', 'r_ALTER_TABLE.html'],
    ['ALTER TABLE t ADD COLUMN c int, ADD COLUMN d int', 'ALTER TABLE with more than one subcommand', 'r_ALTER_TABLE.html'],
    ['SET lock_timeout = 1000', 'the configuration parameter lock_timeout', 'cm_chap_ConfigurationRef.html'],
    ['CREATE TABLE g (id bigint GENERATED ALWAYS AS IDENTITY)', 'GENERATED ... AS IDENTITY', 'r_CREATE_TABLE_NEW.html'],
    ['GRANT SELECT ON t TO PUBLIC WITH GRANT OPTION', 'WITH GRANT OPTION to a group or PUBLIC', 'r_GRANT.html'],
    ['LOCK TABLE t IN SHARE MODE', 'LOCK ... IN ... MODE', 'r_LOCK.html'],
    ["COMMENT ON SCHEMA public IS 'x'", 'COMMENT ON SCHEMA', 'r_COMMENT.html'],
  ])('fails %s, naming %s and its page, and changes nothing', async (sql, construct, file) => {
    const before = await wh.query("SELECT column_name, column_default, data_type FROM information_schema.columns WHERE table_name = 't' ORDER BY 1");
    const done = await wh.run(sql);
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toContain(`ERROR: ${construct} is not supported on Amazon Redshift`);
    expect(done.Error).toContain(`https://docs.aws.amazon.com/redshift/latest/dg/${file}`);
    expect(await wh.query("SELECT column_name, column_default, data_type FROM information_schema.columns WHERE table_name = 't' ORDER BY 1")).toEqual(before);
  });

  it('runs the documented forms of the same commands', async () => {
    const documented = [
      'ALTER TABLE t ADD COLUMN c int DEFAULT 0 NOT NULL',
      'ALTER TABLE t DROP COLUMN c',
      'SET statement_timeout TO 5000',
      'GRANT SELECT ON TABLE t TO PUBLIC',
      "COMMENT ON TABLE t IS 'x'",
    ];
    for (const sql of documented) {
      const done = await wh.run(sql);
      expect(done.Error, sql).toBeUndefined();
    }
  });
});

describe('TRUNCATE and VACUUM', () => {
  // Every test starts from an empty tv of its own making.
  beforeEach(async () => {
    await wh.query('DROP TABLE IF EXISTS tv; CREATE TABLE tv (a int)');
  });

  it.each([
    ['TRUNCATE', 'TRUNCATE tv', /commits the transaction it runs in/],
    ['VACUUM', 'VACUUM tv', /cannot run inside a transaction block/],
  ])('refuses %s inside a multi-statement TRANSACTION batch, with the reason, before any part runs', async (construct, sql, reason) => {
    await wh.query('INSERT INTO tv VALUES (1)');
    const { Id } = await wh.client.send(new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['INSERT INTO tv VALUES (2)', sql] }));
    const done = await untilEnded(wh.client, Id!);
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toMatch(new RegExp(`^ERROR: ${construct} cannot run in a multi-statement transaction on Amazon Redshift`));
    expect(done.Error).toMatch(reason);
    expect(await wh.query('SELECT a FROM tv ORDER BY a')).toEqual([{ a: 1 }]);
  });

  it('runs TRUNCATE as a single statement and in an AUTO_COMMIT batch', async () => {
    await wh.query('INSERT INTO tv VALUES (1)');
    expect((await wh.run('TRUNCATE tv')).Status).toBe('FINISHED');
    expect(await wh.query('SELECT count(*)::int AS n FROM tv')).toEqual([{ n: 0 }]);
    const { Id } = await wh.client.send(
      new BatchExecuteStatementCommand({
        ...wh.target,
        ExecutionMode: 'AUTO_COMMIT',
        Sqls: ['INSERT INTO tv VALUES (3)', 'TRUNCATE tv', 'INSERT INTO tv VALUES (4)'],
      }),
    );
    expect((await untilEnded(wh.client, Id!)).Status).toBe('FINISHED');
    expect(await wh.query('SELECT a FROM tv')).toEqual([{ a: 4 }]);
  });

  it('runs a batch of a single TRUNCATE', async () => {
    const { Id } = await wh.client.send(new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['TRUNCATE tv'] }));
    expect((await untilEnded(wh.client, Id!)).Status).toBe('FINISHED');
  });
});

describe('key constraints', () => {
  it('accepts a table with a PRIMARY KEY, records it, and lets a duplicate key in', async () => {
    const created = await wh.run('CREATE TABLE keyed (id int, name varchar(10), PRIMARY KEY (id))');
    expect(created.Status).toBe('FINISHED');
    expect((await wh.run("INSERT INTO keyed VALUES (1, 'a')")).Status).toBe('FINISHED');
    expect((await wh.run("INSERT INTO keyed VALUES (1, 'b')")).Status).toBe('FINISHED');

    expect(await wh.query('SELECT id, name FROM keyed ORDER BY name')).toEqual([
      { id: 1, name: 'a' },
      { id: 1, name: 'b' },
    ]);
    expect(wh.api.informationalConstraints(wh.target.Database)).toContainEqual({ table: { table: 'keyed' }, kind: 'PRIMARY KEY', columns: ['id'] });
  });

  it('keeps the NOT NULL a primary key implies', async () => {
    await wh.run('CREATE TABLE keyed_nn (id int PRIMARY KEY)');
    const done = await wh.run('INSERT INTO keyed_nn VALUES (NULL)');
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toMatch(/null value in column "id"/);
  });

  it('records UNIQUE and FOREIGN KEY, column and table constraints, and ALTER TABLE ADD CONSTRAINT, enforcing none', async () => {
    await wh.run('CREATE TABLE parent_t (id int CONSTRAINT parent_pk PRIMARY KEY)');
    const created = await wh.run(`CREATE TABLE child_t (
      id int UNIQUE, parent_id int REFERENCES parent_t (id), code varchar(5),
      CONSTRAINT child_code UNIQUE (code), FOREIGN KEY (id) REFERENCES parent_t (id))`);
    expect(created.Status).toBe('FINISHED');
    expect((await wh.run('ALTER TABLE child_t ADD CONSTRAINT child_pk PRIMARY KEY (id)')).Status).toBe('FINISHED');
    expect((await wh.run("INSERT INTO child_t VALUES (5, 99, 'x'), (5, 98, 'x')")).Status).toBe('FINISHED');

    const recorded = wh.api.informationalConstraints(wh.target.Database).filter((c) => c.table.table === 'child_t');
    expect(recorded).toEqual([
      { table: { table: 'child_t' }, kind: 'UNIQUE', columns: ['id'] },
      { table: { table: 'child_t' }, kind: 'FOREIGN KEY', columns: ['parent_id'], references: { table: 'parent_t', columns: ['id'] } },
      { table: { table: 'child_t' }, kind: 'UNIQUE', name: 'child_code', columns: ['code'] },
      { table: { table: 'child_t' }, kind: 'FOREIGN KEY', columns: ['id'], references: { table: 'parent_t', columns: ['id'] } },
      { table: { table: 'child_t' }, kind: 'PRIMARY KEY', name: 'child_pk', columns: ['id'] },
    ]);
    const enforced = await wh.query("SELECT count(*)::int AS n FROM pg_constraint WHERE conrelid = 'child_t'::regclass AND contype IN ('p', 'u', 'f')");
    expect(enforced).toEqual([{ n: 0 }]);
  });

  it('records nothing from a transaction that rolled back', async () => {
    const { Id } = await wh.client.send(
      new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['CREATE TABLE rolled_back (id int PRIMARY KEY)', 'SELECT 1/0'] }),
    );
    expect((await untilEnded(wh.client, Id!)).Status).toBe('FAILED');
    expect(wh.api.informationalConstraints(wh.target.Database).filter((c) => c.table.table === 'rolled_back')).toEqual([]);
  });

  /** Rows of pg_constraint as the endpoint's sessions see them (Redshift's catalog), for one table. */
  /** Rows of pg_constraint as the endpoint's sessions see them (Redshift's catalog), for one table. */
  const catalogKeys = (table: string) =>
    wh.select(
      `SELECT con.conname, CAST(con.contype AS varchar(1)), pg_get_constraintdef(con.oid)
         FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid
        WHERE c.relname = :t ORDER BY 1`,
      { t: table },
    );

  it("shows the keys in pg_constraint with their definitions, as Redshift's catalog does, and follows renames and drops", async () => {
    await wh.run('CREATE TABLE cat_parent (id int, CONSTRAINT cat_parent_pk PRIMARY KEY (id))');
    await wh.run('CREATE TABLE cat_child (id int PRIMARY KEY, parent_id int REFERENCES cat_parent, code varchar(5) UNIQUE)');
    expect(await catalogKeys('cat_child')).toEqual([
      ['cat_child_code_key', 'u', 'UNIQUE (code)'],
      ['cat_child_parent_id_fkey', 'f', 'FOREIGN KEY (parent_id) REFERENCES cat_parent(id)'],
      ['cat_child_pkey', 'p', 'PRIMARY KEY (id)'],
    ]);
    // The CHECK (true) stand-ins of table constraints are not shown: Redshift has no CHECK constraints.
    expect(await catalogKeys('cat_parent')).toEqual([['cat_parent_pk', 'p', 'PRIMARY KEY (id)']]);

    expect((await wh.run('ALTER TABLE cat_parent RENAME TO cat_parent_old')).Status).toBe('FINISHED');
    expect(await catalogKeys('cat_parent_old')).toEqual([['cat_parent_pk', 'p', 'PRIMARY KEY (id)']]);
    expect((await catalogKeys('cat_child'))[1]).toEqual(['cat_child_parent_id_fkey', 'f', 'FOREIGN KEY (parent_id) REFERENCES cat_parent_old(id)']);

    expect((await wh.run('DROP TABLE cat_child')).Status).toBe('FINISHED');
    expect(await catalogKeys('cat_child')).toEqual([]);
  });

  it('records a key in the transaction that declares it: a rolled-back declaration leaves none, a committed one names the new table', async () => {
    const { Id } = await wh.client.send(
      new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['CREATE TABLE cat_rolled (id int PRIMARY KEY)', 'SELECT 1/0'] }),
    );
    expect((await untilEnded(wh.client, Id!)).Status).toBe('FAILED');
    expect(await catalogKeys('cat_rolled')).toEqual([]);

    const swap = await wh.client.send(
      new BatchExecuteStatementCommand({
        ...wh.target,
        Sqls: [
          'CREATE TABLE cat_swap (id int NOT NULL)',
          'CREATE TABLE cat_swap_new (id int NOT NULL)',
          'ALTER TABLE cat_swap RENAME TO cat_swap_old',
          'ALTER TABLE cat_swap_new RENAME TO cat_swap',
          'ALTER TABLE cat_swap ADD CONSTRAINT cat_swap_pkey PRIMARY KEY (id)',
        ],
      }),
    );
    expect((await untilEnded(wh.client, swap.Id!)).Status).toBe('FINISHED');
    expect(await catalogKeys('cat_swap')).toEqual([['cat_swap_pkey', 'p', 'PRIMARY KEY (id)']]);
    expect(await catalogKeys('cat_swap_old')).toEqual([]);
  });

  it('drops a key with ALTER TABLE ... DROP CONSTRAINT, failing on an unknown one', async () => {
    await wh.run('CREATE TABLE cat_drop (id int PRIMARY KEY, code varchar(5) UNIQUE)');
    expect((await wh.run('ALTER TABLE cat_drop DROP CONSTRAINT cat_drop_pkey')).Status).toBe('FINISHED');
    expect(await catalogKeys('cat_drop')).toEqual([['cat_drop_code_key', 'u', 'UNIQUE (code)']]);
    const unknown = await wh.run('ALTER TABLE cat_drop DROP CONSTRAINT no_such_key');
    expect(unknown.Status).toBe('FAILED');
    expect(unknown.Error).toMatch(/constraint "no_such_key" of relation .*cat_drop.* does not exist/);
    expect((await wh.run('ALTER TABLE cat_drop DROP CONSTRAINT cat_drop_code_key')).Status).toBe('FINISHED');
    expect(await catalogKeys('cat_drop')).toEqual([]);
  });

  it('records the keys of CREATE TABLE IF NOT EXISTS only when it creates the table', async () => {
    const sql = 'CREATE TABLE IF NOT EXISTS cat_maybe (id int PRIMARY KEY, code varchar(5) UNIQUE)';
    expect((await wh.run(sql)).Status).toBe('FINISHED');
    expect((await wh.run(sql)).Status).toBe('FINISHED');
    expect(await catalogKeys('cat_maybe')).toEqual([
      ['cat_maybe_code_key', 'u', 'UNIQUE (code)'],
      ['cat_maybe_pkey', 'p', 'PRIMARY KEY (id)'],
    ]);
  });

  it('refuses a second key of one name, and a second primary key, on a table', async () => {
    await wh.run('CREATE TABLE cat_twice (id int PRIMARY KEY, code varchar(5))');
    const sameName = await wh.run('ALTER TABLE cat_twice ADD CONSTRAINT cat_twice_pkey UNIQUE (code)');
    expect(sameName.Status).toBe('FAILED');
    expect(sameName.Error).toMatch(/constraint "cat_twice_pkey" for relation "cat_twice" already exists/);
    const second = await wh.run('ALTER TABLE cat_twice ADD PRIMARY KEY (code)');
    expect(second.Status).toBe('FAILED');
    expect(second.Error).toMatch(/multiple primary keys for table "cat_twice" are not allowed/);
    expect(await catalogKeys('cat_twice')).toEqual([['cat_twice_pkey', 'p', 'PRIMARY KEY (id)']]);
  });

  it('refuses to drop a table a foreign key of another table references, as Redshift does, and drops both at once', async () => {
    await wh.run('CREATE TABLE cat_dim (id int PRIMARY KEY)');
    await wh.run('CREATE TABLE cat_fact (dim_id int REFERENCES cat_dim (id))');
    const refused = await wh.run('DROP TABLE cat_dim');
    expect(refused.Status).toBe('FAILED');
    expect(refused.Error).toMatch(/cannot drop table .*cat_dim because other objects depend on it/);
    expect(await catalogKeys('cat_dim')).toEqual([['cat_dim_pkey', 'p', 'PRIMARY KEY (id)']]);
    expect((await wh.run('DROP TABLE cat_fact, cat_dim')).Status).toBe('FINISHED');
  });

  it('works for a role that cannot write the catalog', async () => {
    const role = `keys_${wh.target.Database}`.slice(0, 63);
    await wh.query(`CREATE ROLE ${role} LOGIN PASSWORD 'pw' NOSUPERUSER`);
    await wh.query(`CREATE SCHEMA owned AUTHORIZATION ${role}`);
    const { host, port } = wh.pg;
    const limited = await startEndpoint({ postgres: { host, port, user: role, password: 'pw' } });
    try {
      const { Id } = await limited.client.send(
        new BatchExecuteStatementCommand({
          ...wh.target,
          DbUser: role,
          Sqls: ['CREATE TABLE owned.k (id int PRIMARY KEY)', 'INSERT INTO owned.k VALUES (1), (1)'],
        }),
      );
      expect((await untilEnded(limited.client, Id!)).Status).toBe('FINISHED');
      expect(limited.api.informationalConstraints(wh.target.Database)).toEqual([
        { table: { schema: 'owned', table: 'k' }, kind: 'PRIMARY KEY', columns: ['id'] },
      ]);
    } finally {
      await limited.close();
      await wh.query(`DROP SCHEMA owned CASCADE; REVOKE ALL ON DATABASE ${wh.target.Database} FROM ${role}; DROP ROLE ${role}`);
    }
  });
});

describe('table attributes', () => {
  /** What svv_redshift_columns and svv_table_info show of a table's encodings, distribution and sort key. */
  const attributes = async (table: string, on: Warehouse = wh) => ({
    columns: await on.select(
      `SELECT column_name, encoding, CASE WHEN distkey THEN 'dist' ELSE '' END, sortkey FROM svv_redshift_columns WHERE table_name = :t ORDER BY ordinal_position`,
      { t: table },
    ),
    table: await on.select(`SELECT diststyle, sortkey1, sortkey_num FROM svv_table_info WHERE "table" = :t`, { t: table }),
  });

  it("runs a CREATE TABLE with Redshift's ENCODE, DISTSTYLE, DISTKEY and SORTKEY and shows them in the catalog views", async () => {
    const created = await wh.run(`CREATE TABLE attr_events (id bigint ENCODE az64, at timestamp NOT NULL, note varchar(20) DEFAULT 'ENCODE x' ENCODE zstd)
      DISTSTYLE KEY DISTKEY (id) COMPOUND SORTKEY (at, id)`);
    expect(created.Status, created.Error).toBe('FINISHED');
    expect(await attributes('attr_events')).toEqual({
      columns: [
        ['id', 'az64', 'dist', '2'],
        ['at', null, '', '1'],
        ['note', 'zstd', '', '0'],
      ],
      table: [['KEY(id)', 'at', '2']],
    });
    expect(await wh.query("SELECT column_default FROM information_schema.columns WHERE table_name = 'attr_events' AND column_name = 'note'")).toEqual([
      { column_default: "'ENCODE x'::character varying" },
    ]);
  });

  describe('of tables renamed, copied, dropped and rolled back', () => {
    // A database of its own: the test reads the attributes recorded of every table in it.
    let wh: Warehouse;
    beforeAll(async () => {
      wh = await useWarehouse('redshift_mode_attributes');
    });
    afterAll(() => wh?.close());

    it('keeps them through a rename, copies them to a table created LIKE it, drops them with the table, and records none from a rolled-back CREATE', async () => {
      await wh.run('CREATE TABLE attr_a (id int ENCODE zstd SORTKEY, v int) DISTSTYLE EVEN');
      expect((await wh.run('ALTER TABLE attr_a RENAME TO attr_b')).Status).toBe('FINISHED');
      expect((await wh.run('CREATE TABLE IF NOT EXISTS attr_like (LIKE attr_b)')).Status).toBe('FINISHED');
      const shown = {
        columns: [
          ['id', 'zstd', '', '1'],
          ['v', null, '', '0'],
        ],
        table: [['EVEN', 'id', '1']],
      };
      expect(await attributes('attr_b', wh)).toEqual(shown);
      expect(await attributes('attr_like', wh)).toEqual(shown);
      // A second CREATE TABLE IF NOT EXISTS of an existing table changes nothing.
      expect((await wh.run('CREATE TABLE IF NOT EXISTS attr_like (id int ENCODE raw) DISTSTYLE ALL')).Status).toBe('FINISHED');
      expect(await attributes('attr_like', wh)).toEqual(shown);

      expect((await wh.run('DROP TABLE attr_b')).Status).toBe('FINISHED');
      expect(await wh.query('SELECT count(*)::int AS n FROM local_redshift.table_attributes WHERE relid NOT IN (SELECT oid FROM pg_class)')).toEqual([
        { n: 0 },
      ]);

      const { Id } = await wh.client.send(
        new BatchExecuteStatementCommand({ ...wh.target, Sqls: ['CREATE TABLE attr_rolled (id int ENCODE zstd) DISTSTYLE ALL', 'SELECT 1/0'] }),
      );
      expect((await untilEnded(wh.client, Id!)).Status).toBe('FAILED');
      // Only attr_like's are left: attr_b's went with the table, attr_rolled's never committed.
      expect(await wh.query('SELECT relid::regclass::text AS t FROM local_redshift.table_attributes')).toEqual([{ t: 'attr_like' }]);
    });
  });

  it('runs a statement whose attributes do not follow the grammar as written: the database refuses it', async () => {
    const done = await wh.run('CREATE TABLE attr_bad (id int ENCODE nothing)');
    expect(done.Status).toBe('FAILED');
    expect(done.Error).toMatch(/syntax error/);
  });
});

describe('GRANT ... TO ROLE, REVOKE ... FROM ROLE', () => {
  it("runs as PostgreSQL's GRANT ... TO <role> and REVOKE ... FROM <role>: Redshift's ROLE keyword is dropped, nothing else changes", () => {
    expect(withoutRoleKeyword('GRANT SELECT, INSERT ON TABLE "analytics"."orders" TO ROLE "bi_reader"')).toBe(
      'GRANT SELECT, INSERT ON TABLE "analytics"."orders" TO "bi_reader"',
    );
    expect(withoutRoleKeyword('GRANT SELECT ON TABLE "analytics"."orders" TO GROUP "finance"')).toBe(
      'GRANT SELECT ON TABLE "analytics"."orders" TO GROUP "finance"',
    );
    expect(withoutRoleKeyword(`SELECT 'GRANT x TO ROLE "y"'`)).toBe(`SELECT 'GRANT x TO ROLE "y"'`);
    expect(withoutRoleKeyword('REVOKE UPDATE ON TABLE "analytics"."orders" FROM ROLE "bi_reader"')).toBe(
      'REVOKE UPDATE ON TABLE "analytics"."orders" FROM "bi_reader"',
    );
    expect(withoutRoleKeyword('REVOKE SELECT ON TABLE "analytics"."orders" FROM GROUP "finance"')).toBe(
      'REVOKE SELECT ON TABLE "analytics"."orders" FROM GROUP "finance"',
    );
    expect(withoutRoleKeyword('GRANT ROLE analyst TO ROLE "lead"')).toBe('GRANT analyst TO "lead"');
    expect(withoutRoleKeyword('REVOKE ADMIN OPTION FOR ROLE analyst FROM alice')).toBe('REVOKE ADMIN OPTION FOR analyst FROM alice');
  });

  it("runs Redshift's GRANT ROLE and REVOKE ROLE, and refuses PostgreSQL's GRANT of a role without ROLE", async () => {
    await wh.query(
      'DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $r$role_mode_analyst$r$) THEN CREATE ROLE role_mode_analyst; END IF; END $$',
    );
    await wh.query(
      'DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $r$role_mode_member$r$) THEN CREATE ROLE role_mode_member; END IF; END $$',
    );
    const member = async () =>
      (
        await wh.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_auth_members WHERE roleid = 'role_mode_analyst'::regrole AND member = 'role_mode_member'::regrole",
        )
      )[0]!.n;

    expect((await wh.run('GRANT ROLE role_mode_analyst TO ROLE role_mode_member')).Status).toBe('FINISHED');
    expect(await member()).toBe(1);
    expect((await wh.run('REVOKE ROLE role_mode_analyst FROM ROLE role_mode_member')).Status).toBe('FINISHED');
    expect(await member()).toBe(0);
    const postgres = await wh.run('GRANT role_mode_analyst TO role_mode_member');
    expect(postgres.Status).toBe('FAILED');
    expect(postgres.Error).toMatch(/GRANT of a role without ROLE is not supported on Amazon Redshift/);
    expect(await member()).toBe(0);
  });

  it('grants to a role and revokes from it through the endpoint', async () => {
    await wh.query(
      'DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $r$role_mode_reader$r$) THEN CREATE ROLE role_mode_reader; END IF; END $$',
    );
    const privileges = async () =>
      (
        await wh.query<{ p: string }>(
          "SELECT string_agg(privilege_type, ',' ORDER BY privilege_type) AS p FROM information_schema.role_table_grants WHERE grantee = 'role_mode_reader' AND table_name = 't'",
        )
      )[0]!.p;

    expect((await wh.run('GRANT SELECT, UPDATE ON TABLE public.t TO ROLE "role_mode_reader"')).Status).toBe('FINISHED');
    expect(await privileges()).toBe('SELECT,UPDATE');
    expect((await wh.run('REVOKE UPDATE ON TABLE public.t FROM ROLE "role_mode_reader"')).Status).toBe('FINISHED');
    expect(await privileges()).toBe('SELECT');
  });
});

describe('a query a procedure EXECUTEs, given to it as a CALL argument or parameter', () => {
  beforeAll(async () => {
    await wh.query(`CREATE OR REPLACE PROCEDURE run_query(p_query varchar(65535), INOUT p_result varchar(256)) AS $$
      BEGIN EXECUTE p_query INTO p_result; END $$ LANGUAGE plpgsql`);
  });

  it("runs in Redshift's SQL, rewritten as a statement of its own", async () => {
    const done = await wh.select(`CALL run_query('SELECT NVL(NULL, ''x'') || DATEDIFF(day, ''2024-01-01''::date, ''2024-01-31''::date)', NULL)`);

    expect(done).toEqual([['x30']]);
  });

  it('is refused as a statement of its own would be, and the CALL with it, before anything runs', async () => {
    const done = await wh.run(`CALL run_query('SELECT string_agg(b, '','') FROM t', NULL)`);

    expect(done.Status).toBe('FAILED');
    expect(done.Error).toMatch(/^ERROR: STRING_AGG is not supported on Amazon Redshift; use LISTAGG/);
  });

  it("runs in Redshift's SQL when the CALL passes it as a parameter", async () => {
    const done = await wh.select('CALL run_query(:query, NULL)', { query: "SELECT NVL(NULL, 'y') || DATEDIFF(day, '2024-01-01'::date, '2024-01-03'::date)" });

    expect(done).toEqual([['y2']]);
  });

  it('is refused when the CALL passes it as a parameter, before anything runs', async () => {
    const done = await wh.run('CALL run_query(:query, NULL)', { query: "SELECT string_agg(b, ',') FROM t" });

    expect(done.Status).toBe('FAILED');
    expect(done.Error).toMatch(/^ERROR: STRING_AGG is not supported on Amazon Redshift; use LISTAGG/);
  });
});

describe('a form Redshift does not document, sent through the endpoint', () => {
  it.each([...UNDOCUMENTED_FORMS, ...UNDOCUMENTED_CLAUSES.map(([sql, construct]) => [sql, construct] as const)])(
    '%s: fails naming %s, before it runs',
    async (sql, construct) => {
      const done = await wh.run(sql);

      expect(done.Status).toBe('FAILED');
      expect(done.Error).toContain(`ERROR: ${construct} is not supported on Amazon Redshift`);
    },
  );
});
