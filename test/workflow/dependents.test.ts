// The new live table is the old one in everything but rows, and what depends on
// it follows: grantees keep reading; defaults, comments and keys survive; a
// foreign key and a view follow the new table, the view's readers never erring; a
// grant made while the swap waits is not lost; a view or table the user does not
// own refuses the publish by name; Cleanup keeps an old version still read or
// referenced. Why: docs/decisions/security-policies-through-a-swap.md, publishing.md
import { beforeAll, describe, expect, it } from 'vitest';
import { quoteUser } from '../../domain/identifiers.ts';
import { ensureLocalUser, LOCAL_PIPELINE_USER, localUserPassword } from '../../local/database-users.ts';
import { withClient } from '../../local/pg-clients.ts';
import { ReaderPool, type ReaderSample } from '../../local/readers.ts';
import { useForkPerTest } from '../support/fork-per-test.ts';
import {
  caughtError,
  caughtMessage,
  type Fingerprint,
  inputFor,
  LIVE,
  namesFor,
  type TaskOverride,
  useFork,
  useWorkflowFixture,
  type Workflow,
} from '../support/workflow.ts';

const READER = 'report_reader';
const ROLE = 'report_role';
const LATE = 'late_reader';
const VIEW = 'analytics.sales_amounts';

async function asUser<T>(wf: Workflow, user: string, fn: (q: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T> {
  return withClient({ ...wf.wh.pg, user, password: localUserPassword(wf.wh.pg, user) }, (client) => fn(async (sql) => (await client.query(sql)).rows));
}

async function createRole(wf: Workflow, name: string): Promise<void> {
  await wf.query(`CREATE ROLE ${quoteUser(name)} NOLOGIN`).catch((error: { code?: string }) => {
    if (error.code !== '42710' && error.code !== '23505') throw error;
  });
}

const rowsOf = async (wf: Workflow, user: string, table: string) => Number((await asUser(wf, user, (q) => q(`SELECT count(*) AS n FROM ${table}`)))[0]!.n);
const canSelect = async (wf: Workflow, role: string, table: string) =>
  (await wf.query<{ ok: boolean }>(`SELECT has_table_privilege($1, $2, 'SELECT') AS ok`, [role, table]))[0]!.ok;

/** Runs up to `day` with `publish` wrapped around the Publish step; the execution must succeed. */
async function succeedsWithPublish(wf: Workflow, day: number, name: string, publish: TaskOverride): Promise<void> {
  wf.faults.Publish = publish;
  try {
    const result = await wf.run(inputFor(day), name);
    expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
  } finally {
    wf.reset();
  }
}

/** A Publish during which `statements` run while the swap waits for `table`'s lock (held by a gate until they are done). */
function whileSwapWaitsFor(wf: Workflow, table: string, statements: readonly string[]): TaskOverride {
  return async (input, next) => {
    const gate = await wf.wh.gate({ table });
    const publishing = next(input);
    try {
      await gate.waiting(1);
      for (const sql of statements) await wf.query(sql);
    } finally {
      await gate.release();
    }
    return publishing;
  };
}

const fixture = useWorkflowFixture('wf_dependents', async (wf) => {
  await wf.sample({ rowsPerDay: 10, sourceDays: 16, liveDays: 4 });
  await ensureLocalUser(wf.wh.pg, READER);
  await ensureLocalUser(wf.wh.pg, LATE);
  await createRole(wf, ROLE);
  for (const sql of [
    `GRANT USAGE ON SCHEMA analytics TO ${quoteUser(READER)}, ${quoteUser(LATE)}`,
    `GRANT SELECT ON ${LIVE} TO ${quoteUser(READER)}`,
    `GRANT SELECT, INSERT ON ${LIVE} TO ${quoteUser(ROLE)}`,
    `ALTER TABLE ${LIVE} ALTER COLUMN quantity SET DEFAULT 1`,
    `COMMENT ON TABLE ${LIVE} IS 'Order lines, one row per line'`,
    `COMMENT ON COLUMN ${LIVE}.amount IS 'Line amount in EUR'`,
    // A bound view, owned by the pipeline user (as the docs tell the DBA), read by the reader.
    `CREATE VIEW ${VIEW} AS SELECT order_id, line_no, amount FROM ${LIVE}`,
    `ALTER TABLE ${VIEW} OWNER TO ${quoteUser(LOCAL_PIPELINE_USER)}`,
    `GRANT SELECT ON ${VIEW} TO ${quoteUser(READER)}`,
  ]) {
    await wf.query(sql);
  }
  // Declared keys, through the endpoint as on Redshift: informational, in pg_constraint.
  for (const sql of [
    `CREATE TABLE analytics.customers (customer_id int NOT NULL, CONSTRAINT customers_pk PRIMARY KEY (customer_id))`,
    `ALTER TABLE ${LIVE} ADD CONSTRAINT sales_order_lines_pk PRIMARY KEY (order_id, line_no)`,
    `ALTER TABLE ${LIVE} ADD CONSTRAINT sales_order_lines_customer_fk FOREIGN KEY (customer_id) REFERENCES analytics.customers (customer_id)`,
    // Another table's foreign key referencing the live table, the table owned by the pipeline user.
    `CREATE TABLE analytics.order_notes (order_id bigint, line_no int, note varchar(20),
       CONSTRAINT order_notes_line_fk FOREIGN KEY (order_id, line_no) REFERENCES ${LIVE} (order_id, line_no))`,
  ]) {
    const done = await wf.wh.run(sql);
    expect(done.Status, done.Error).toBe('FINISHED');
  }
  await wf.query(`ALTER TABLE analytics.order_notes OWNER TO ${quoteUser(LOCAL_PIPELINE_USER)}`);

  // The first publish: every describe starts from what it left.
  const expected = await wf.expected(6);
  let viewRowsAtCommit: number | undefined;
  await succeedsWithPublish(wf, 6, 'dependents-first', async (input, next) => {
    const output = await next(input);
    // The swap has committed; nothing after Publish touches the view.
    viewRowsAtCommit = await rowsOf(wf, READER, VIEW);
    return output;
  });
  return { expected, viewRowsAtCommit };
});

/** The table a foreign key references now, and its definition, as the endpoint's sessions see the catalog. */
async function referenced(wf: Workflow, key: string): Promise<string[]> {
  const [row] = await wf.wh.select(
    `SELECT t.relname, pg_get_constraintdef(con.oid) FROM pg_constraint con JOIN pg_class t ON t.oid = con.confrelid WHERE con.conname = :k`,
    { k: key },
  );
  return row!.map(String);
}

/** A table's declared keys as the endpoint's sessions see the catalog (as Redshift's pg_constraint shows them). */
async function declaredKeys(wf: Workflow, table: string): Promise<string[]> {
  const rows = await wf.wh.select(
    `SELECT con.conname || ' ' || pg_get_constraintdef(con.oid) AS k FROM pg_constraint con
       JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'analytics' AND c.relname = :t ORDER BY 1`,
    { t: table },
  );
  return rows.map((r) => String(r[0]));
}

describe('after a publish', () => {
  const wf = useFork(fixture);
  let viewRowsAtCommit: number | undefined;
  let expected: Fingerprint;
  beforeAll(() => {
    ({ expected, viewRowsAtCommit } = fixture.arranged);
  });

  it('publishes the new rows', async () => {
    expect(await wf.fingerprint(LIVE)).toEqual(expected);
    expect(expected.rows).not.toBe(4 * 10);
  });

  it('a reader user and a role granted privileges on the live table keep them', async () => {
    expect(await rowsOf(wf, READER, LIVE)).toBe(expected.rows);
    expect(await canSelect(wf, ROLE, LIVE)).toBe(true);
    expect((await wf.query<{ ok: boolean }>(`SELECT has_table_privilege($1, $2, 'INSERT') AS ok`, [ROLE, LIVE]))[0]!.ok).toBe(true);
    expect((await wf.query<{ ok: boolean }>(`SELECT has_table_privilege($1, $2, 'INSERT') AS ok`, [READER, LIVE]))[0]!.ok).toBe(false);
  });

  it('keeps column defaults and the table and column comments', async () => {
    const defaults = await wf.query(
      `SELECT column_name, column_default FROM information_schema.columns
        WHERE table_schema = 'analytics' AND table_name = 'sales_order_lines' AND column_default IS NOT NULL`,
    );
    expect(defaults).toEqual([{ column_name: 'quantity', column_default: '1' }]);
    const [comments] = await wf.query(
      `SELECT obj_description($1::regclass, 'pg_class') AS tbl,
              col_description($1::regclass, (SELECT attnum FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'amount')) AS col`,
      [LIVE],
    );
    expect(comments).toEqual({ tbl: 'Order lines, one row per line', col: 'Line amount in EUR' });
  });

  it('keeps the declared keys, under their names, and the old version keeps its own', async () => {
    const keys = [
      'sales_order_lines_customer_fk FOREIGN KEY (customer_id) REFERENCES analytics.customers(customer_id)',
      'sales_order_lines_pk PRIMARY KEY (order_id, line_no)',
    ];
    expect(await declaredKeys(wf, 'sales_order_lines')).toEqual(keys);
    expect(await declaredKeys(wf, namesFor(6).previous.split('.')[1]!)).toEqual(keys);
  });

  it("re-points another table's foreign key at the new live table", async () => {
    expect(await referenced(wf, 'order_notes_line_fk')).toEqual([
      'sales_order_lines',
      'FOREIGN KEY (order_id, line_no) REFERENCES analytics.sales_order_lines(order_id, line_no)',
    ]);
  });

  it('the view on the live table showed the new rows the moment the swap committed, and keeps its owner and grants', async () => {
    expect(viewRowsAtCommit).toBe(expected.rows);
    expect(await rowsOf(wf, READER, VIEW)).toBe(expected.rows);
    const [dependency] = await wf.query<{ table: string }>(
      `SELECT DISTINCT d.refobjid::regclass::text AS table FROM pg_rewrite r JOIN pg_depend d ON d.objid = r.oid
        WHERE r.ev_class = $1::regclass AND d.refobjid <> r.ev_class`,
      [VIEW],
    );
    expect(dependency!.table).toBe(LIVE);
    const [owner] = await wf.query<{ owner: string }>(`SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE oid = $1::regclass`, [VIEW]);
    expect(owner!.owner).toBe(LOCAL_PIPELINE_USER);
    expect(await canSelect(wf, READER, VIEW)).toBe(true);
  });
});

describe('readers of the view during a publish', () => {
  const wf = useFork(fixture);
  it('see the old rows or the new ones, never an error, and the new ones from the commit on', async () => {
    const old = await wf.fingerprint(LIVE);
    const fresh = await wf.expected(7);
    const readers = new ReaderPool({ ...wf.wh.pg, user: READER, password: localUserPassword(wf.wh.pg, READER) }, 2, {
      keyExpression: 'order_id * 1000 + line_no',
      pauseMs: 1,
    });
    readers.watch(VIEW, 'before');
    let reads: ReaderSample[];
    try {
      await readers.readAll();
      await succeedsWithPublish(wf, 7, 'dependents-readers', async (input, next) => {
        readers.phase('swapping');
        const output = await next(input);
        readers.phase('committed');
        await readers.readAll();
        return output;
      });
    } finally {
      reads = await readers.close();
    }
    expect(reads.filter((r) => r.error)).toEqual([]);
    const version = (r: ReaderSample) => `${r.count}/${r.keySum}`;
    const versions = [`${old.rows}/${old.keySum}`, `${fresh.rows}/${fresh.keySum}`];
    expect(versions[0]).not.toBe(versions[1]);
    for (const read of reads) expect(versions, `${read.phase} read`).toContain(version(read));
    const committed = reads.filter((r) => r.phase === 'committed');
    expect(committed.length).toBeGreaterThanOrEqual(2);
    for (const read of committed) expect(version(read)).toBe(versions[1]);
  });
});

describe('a grant made after Publish read the catalog, before its swap', () => {
  const wf = useFork(fixture);
  it('is carried over: the swap finds the catalog changed and Publish reads it again', async () => {
    const { staging } = namesFor(8);
    expect(await canSelect(wf, LATE, LIVE)).toBe(false);
    // Held at the swap's LOCK on staging: Publish has read the catalog by then.
    await succeedsWithPublish(wf, 8, 'dependents-late-grant', whileSwapWaitsFor(wf, staging, [`GRANT SELECT ON ${LIVE} TO ${quoteUser(LATE)}`]));
    expect(await wf.fingerprint(LIVE)).toEqual(await wf.expected(8));
    expect(await rowsOf(wf, LATE, LIVE)).toBe((await wf.expected(8)).rows);
    expect(await rowsOf(wf, READER, LIVE)).toBe((await wf.expected(8)).rows);
  });
});

describe('a grant and a revoke made while the swap waits for the live table', () => {
  const wf = useFork(fixture);
  // Locally the swap's catalog check sees them (PostgreSQL took the swap's
  // snapshot after its LOCK on the live table) and Publish rebuilds the
  // swap; where the snapshot is older they reach the old version and
  // Publish carries them over after the commit (unit-tested in
  // test/domain/publish/sql/swap.test.ts). Either way none is lost.
  it('are not lost: the new live table has the grant and not the revoked privileges', async () => {
    const LATER = 'later_reader';
    await ensureLocalUser(wf.wh.pg, LATER);
    await wf.query(`GRANT USAGE ON SCHEMA analytics TO ${quoteUser(LATER)}`);
    expect(await canSelect(wf, ROLE, LIVE)).toBe(true);
    // Held at the swap's LOCK on the live table.
    await succeedsWithPublish(
      wf,
      9,
      'dependents-carry-over',
      whileSwapWaitsFor(wf, LIVE, [`GRANT SELECT ON ${LIVE} TO ${quoteUser(LATER)}`, `REVOKE ALL ON ${LIVE} FROM ${quoteUser(ROLE)}`]),
    );
    const fresh = await wf.expected(9);
    expect(await wf.fingerprint(LIVE)).toEqual(fresh);
    expect(await rowsOf(wf, LATER, LIVE)).toBe(fresh.rows);
    expect(await canSelect(wf, ROLE, LIVE)).toBe(false);
    expect(await rowsOf(wf, READER, VIEW)).toBe(fresh.rows);
  });
});

describe('a view that cannot be re-pointed', () => {
  const wf = useForkPerTest(fixture);
  it('reading a column the new table lacks refuses the publish before the swap, naming the view and the column', async () => {
    const before = await wf.fingerprint(LIVE);
    wf.faults.Publish = async (input, next) => {
      // A DBA adds a column to live mid-run, and a view reading it: staging lacks it.
      await wf.query(`ALTER TABLE ${LIVE} ADD COLUMN note varchar(20)`);
      await wf.query(`CREATE VIEW analytics.sales_notes AS SELECT order_id, note FROM ${LIVE}`);
      await wf.query(`ALTER TABLE analytics.sales_notes OWNER TO ${quoteUser(LOCAL_PIPELINE_USER)}`);
      return next(input);
    };
    try {
      const result = await wf.run(inputFor(10), 'dependents-lost-column');
      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('DependentViewError');
      expect(caughtMessage(result)).toContain('view analytics.sales_notes reads column note of analytics.sales_order_lines, which the new table lacks');
      expect(result.alerts).toHaveLength(1);
      expect(result.alerts[0]!.message).toContain('DependentViewError: publish refused before the swap: view analytics.sales_notes reads column note');
      expect(result.alerts[0]!.message).toContain('Live table: analytics.sales_order_lines untouched');
      expect(await wf.fingerprint(LIVE)).toEqual(before);
    } finally {
      wf.reset();
      await wf.query('DROP VIEW analytics.sales_notes');
      await wf.query(`ALTER TABLE ${LIVE} DROP COLUMN note`);
    }
  });

  it('owned by another user refuses the publish, naming the view, its owner and the fix', async () => {
    const before = await wf.fingerprint(LIVE);
    await wf.query(`CREATE VIEW analytics.sales_foreign AS SELECT order_id FROM ${LIVE}`);
    try {
      const result = await wf.run(inputFor(10), 'dependents-foreign-view');
      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('DependentViewError');
      expect(caughtMessage(result)).toContain(
        `view analytics.sales_foreign is owned by ${wf.wh.pg.user}, not by "${LOCAL_PIPELINE_USER}", so the publish cannot re-point it at the new table; ` +
          `run ALTER TABLE analytics.sales_foreign OWNER TO "${LOCAL_PIPELINE_USER}" as a superuser`,
      );
      expect(await wf.fingerprint(LIVE)).toEqual(before);
    } finally {
      await wf.query('DROP VIEW analytics.sales_foreign');
    }
  });
});

describe("another table's foreign key that cannot be re-pointed", () => {
  const wf = useFork(fixture);
  it('refuses the publish when that table is owned by another user, naming it, its owner and the fix', async () => {
    const before = await wf.fingerprint(LIVE);
    const created = await wf.wh.run(
      `CREATE TABLE analytics.order_tags (order_id bigint, line_no int, FOREIGN KEY (order_id, line_no) REFERENCES ${LIVE} (order_id, line_no))`,
    );
    expect(created.Status, created.Error).toBe('FINISHED');
    try {
      const result = await wf.run(inputFor(10), 'dependents-foreign-key');
      expect(result.status).toBe('FAILED');
      expect(caughtError(result)?.Error).toBe('DependentViewError');
      expect(caughtMessage(result)).toContain(
        `table analytics.order_tags has a foreign key referencing analytics.sales_order_lines and is owned by ${wf.wh.pg.user}, not by "${LOCAL_PIPELINE_USER}"`,
      );
      expect(caughtMessage(result)).toContain(`run ALTER TABLE analytics.order_tags OWNER TO "${LOCAL_PIPELINE_USER}" as a superuser, or drop the foreign key`);
      expect(await wf.fingerprint(LIVE)).toEqual(before);
    } finally {
      expect((await wf.wh.run('DROP TABLE analytics.order_tags')).Status).toBe('FINISHED');
    }
  });
});

describe('Cleanup and a view and a foreign key on an old version', () => {
  const wf = useFork(fixture);
  beforeAll(async () => {
    // Publications of days 7 to 9 after the fixture's of day 6.
    for (const day of [7, 8, 9]) {
      const result = await wf.run(inputFor(day), `dependents-before-retain-${day}`);
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
    }
  });

  it('keeps and reports the version the view reads and the key references, and the execution succeeds; once the view is gone, the next Cleanup drops it', async () => {
    // Four publications so far (days 6 to 9); keepVersions 3: the next one puts the version day 7 replaced past retention.
    const oldest = namesFor(7).previous;
    expect(await wf.tableExists(oldest)).toBe(true);
    await wf.query(`CREATE VIEW analytics.sales_archive AS SELECT order_id FROM ${oldest}`);
    // And a foreign key created on it: Redshift refuses to drop a table one references.
    const referencing = await wf.wh.run(
      `CREATE TABLE analytics.archive_refs (order_id bigint, line_no int, FOREIGN KEY (order_id, line_no) REFERENCES ${oldest} (order_id, line_no))`,
    );
    expect(referencing.Status, referencing.Error).toBe('FINISHED');
    type Output = { cleanup: { dropped: string[]; kept: { table: string; readBy: string[] }[] } };
    let kept: Output['cleanup']['kept'] = [];
    for (const [day, name] of [
      [10, 'dependents-retain-10'],
      [11, 'dependents-retain-11'],
    ] as const) {
      const result = await wf.run(inputFor(day), name);
      expect(result.status, `${result.error}: ${result.cause}`).toBe('SUCCEEDED');
      kept = [...kept, ...(result.output as Output).cleanup.kept];
    }
    expect(kept).toContainEqual({ table: oldest, readBy: ['analytics.sales_archive', 'analytics.archive_refs'] });
    expect(await wf.tableExists(oldest)).toBe(true);
    const [record] = await wf.query<{ dropped_at: unknown }>(`SELECT dropped_at FROM atomic_publish.publications WHERE old_version_table = $1`, [oldest]);
    expect(record!.dropped_at).toBeNull();

    await wf.query('DROP VIEW analytics.sales_archive');
    expect((await wf.wh.run('DROP TABLE analytics.archive_refs')).Status).toBe('FINISHED');
    const next = await wf.run(inputFor(12), 'dependents-retain-12');
    expect(next.status, `${next.error}: ${next.cause}`).toBe('SUCCEEDED');
    expect((next.output as Output).cleanup.dropped).toContain(oldest);
    expect(await wf.tableExists(oldest)).toBe(false);
  });
});
