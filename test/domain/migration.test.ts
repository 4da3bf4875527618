import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../domain/errors.ts';
import {
  copiedColumns,
  isMigrated,
  isMigrationInput,
  migrationFacts,
  migrationInterval,
  migrationPipeline,
  migrationProblems,
  migrationSpecHash,
} from '../../domain/migration.ts';
import { liveTableFacts } from '../../domain/dependents.ts';
import { batchIdFor } from '../../domain/plan.ts';
import { parseTableDdl } from '../../domain/redshift-sql/table-ddl.ts';
import { carryOverRows, catchUpRows } from '../../domain/sql/out-of-band.ts';
import { errorOf, pipelineWith } from './fixtures.ts';

const DDL = `(order_id bigint NOT NULL ENCODE az64, ordered_at timestamp NOT NULL, amount numeric(14, 2) ENCODE az64,
  channel varchar(16) DEFAULT 'web' ENCODE zstd, PRIMARY KEY (order_id)) DISTSTYLE KEY DISTKEY (order_id) COMPOUND SORTKEY (ordered_at, order_id);`;
const pipeline = pipelineWith({ migration: { ddl: DDL } });
const LIVE = ['order_id bigint', 'ordered_at timestamp without time zone', 'amount numeric(12,2)', 'note character varying(20)'];
const NOW = new Date('2026-03-10T12:00:00Z');

describe('migration.ddl in the spec', () => {
  it('is parsed into the columns with their catalog types and the Redshift attributes', () => {
    expect(pipeline.migration?.ddl.endsWith(';')).toBe(false);
    expect(pipeline.migration?.table).toEqual({
      columns: [
        { name: 'order_id', type: 'bigint', hasDefault: false, notNull: true },
        { name: 'ordered_at', type: 'timestamp without time zone', hasDefault: false, notNull: true },
        { name: 'amount', type: 'numeric(14,2)', hasDefault: false, notNull: false },
        { name: 'channel', type: 'character varying(16)', hasDefault: true, notNull: false },
      ],
      attributes: { encodings: { order_id: 'az64', amount: 'az64', channel: 'zstd' }, distStyle: 'key', distKey: 'order_id', sortStyle: 'compound', sortKey: ['ordered_at', 'order_id'] },
    });
  });

  it('leaves the spec hash of normal runs alone; a migration batch has its own hash and batch id', () => {
    expect(pipeline.specHash).toBe(pipelineWith().specHash);
    const interval = { from: new Date(pipeline.historyStart), to: new Date('2026-03-01T00:00:00Z') };
    expect(batchIdFor(migrationPipeline(pipeline, ['order_id']), interval)).not.toBe(batchIdFor(pipeline, interval));
    expect(migrationPipeline(pipeline, ['order_id']).specHash).toBe(migrationSpecHash(pipeline));
  });

  it('runs as a swap placed by the time column, whatever the pipeline publishes by', () => {
    const merging = pipelineWith({ migration: { ddl: DDL }, publishMode: 'merge', merge: { versionColumn: 'amount' }, modifiedColumn: 'ordered_at', lookback: 2 });
    const replacing = pipelineWith({ migration: { ddl: DDL }, publishMode: 'replace-intervals', lookback: 2 });

    for (const migrating of [migrationPipeline(merging, ['order_id', 'ordered_at']), migrationPipeline(replacing, ['order_id', 'ordered_at'])]) {
      expect(migrating).toMatchObject({ publishMode: 'swap', lookback: 0, outOfBand: { expectedWriters: true } });
      expect(migrating.modifiedColumn).toBeUndefined();
      expect(migrating.merge).toBeUndefined();
    }
  });

  it.each([
    ['(order_id bigint, ordered_at timestamp); DROP TABLE analytics.orders', /migration\.ddl must be one column list in parentheses/],
    ['(order_id bigint, ordered_at timestamp) WITH (fillfactor = 10)', /migration\.ddl unexpected WITH after the column list \(allowed: DISTSTYLE/],
    ['(order_id bigint ENCODE gzip, ordered_at timestamp)', /migration\.ddl column order_id: ENCODE gzip is not a Redshift encoding/],
    ['(order_id bigint, ordered_at timestamp) DISTKEY (customer_id)', /migration\.ddl its attributes name column\(s\) customer_id, which it does not declare/],
    ['(order_id bigint, ordered_at timestamp) DISTSTYLE SOMETIMES', /DISTSTYLE SOMETIMES is not one of AUTO, EVEN, KEY, ALL/],
    ['(LIKE analytics.orders)', /must hold columns and PRIMARY KEY, UNIQUE or FOREIGN KEY constraints only/],
    ['(order_id serial, ordered_at timestamp)', /uses SERIAL types, which Amazon Redshift does not support/],
    ['(order_id bigint, ordered_at timestamp', /the column list is not closed/],
    ['order_id bigint', /does not parse|must begin with the column list/],
    ['(order_id bigint, ordered_at timestamptz)', /declares timeColumn ordered_at as timestamp with time zone; it must stay a timestamp without time zone/],
    ['(order_id bigint)', /does not declare timeColumn ordered_at/],
    ['(id bigint, ordered_at timestamp)', /does not declare businessKey column\(s\) order_id/],
  ])('refuses %s at synth time, naming migration.ddl and what is wrong', (ddl, message) => {
    const error = errorOf(() => pipelineWith({ migration: { ddl } }));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error.message).toMatch(/^pipeline orders: /);
    expect(error.message).toMatch(message);
  });
});

describe('migration.renames', () => {
  const renaming = pipelineWith({ migration: { ddl: DDL, renames: { channel: 'note' } } });

  it('copies a live column into a new name: the copy, the carry-over and the catch-up read the old name', () => {
    const migrating = migrationPipeline(renaming, LIVE.map((c) => c.split(' ')[0]!));
    expect(migrating.migrating).toEqual({ columns: ['order_id', 'ordered_at', 'amount', 'channel'], from: ['order_id', 'ordered_at', 'amount', 'note'] });
    expect(migrating.sourceSql).toContain('SELECT "order_id", "ordered_at", "amount", "note" AS "channel" FROM "analytics"."orders"');
    expect(carryOverRows(migrating, 'stg', migrating.migrating!.columns, '2026-03-01T00:00:00.000Z', migrating.migrating!.from)).toMatch(
      /^INSERT INTO "analytics"\."stg" \("order_id", "ordered_at", "amount", "channel"\) SELECT "order_id", "ordered_at", "amount", "note" FROM "analytics"\."orders" WHERE/,
    );
    expect(catchUpRows(migrating, 'prev', migrating.migrating!.columns, '2026-03-01T00:00:00.000Z', 1, migrating.migrating!.from)[4]).toContain(
      'INSERT INTO "analytics"."orders" ("order_id", "ordered_at", "amount", "channel") SELECT o."order_id", o."ordered_at", o."amount", o."note" FROM',
    );
  });

  it('is part of the migration\'s batch identity', () => {
    expect(migrationSpecHash(renaming)).not.toBe(migrationSpecHash(pipeline));
  });

  it('names a bound view reading the renamed column, and a rename of a column the live table lacks', () => {
    const view = { schema: 'reporting', view: 'v', definition: 'SELECT ...', owner: 'IAMR:steps', columns: ['note'] };
    expect(migrationProblems(renaming, LIVE, [view])).toEqual([
      expect.stringContaining('view reporting.v reads column note (renamed to channel by migration.renames) of analytics.orders, and a bound view\'s text names the old column'),
    ]);
    expect(migrationProblems(pipelineWith({ migration: { ddl: DDL, renames: { channel: 'memo' } } }), LIVE, [])).toEqual([
      'migration.renames copies memo into channel, but the live table analytics.orders has no column memo',
    ]);
  });

  it.each([
    [{ nothing: 'note' }, /migration\.renames\.nothing names nothing, which migration\.ddl does not declare/],
    [{ ordered_at: 'created_at' }, /renames created_at to ordered_at, but timeColumn and businessKey columns keep their names/],
    [{ channel: 'amount' }, /copies amount into channel, but migration\.ddl declares amount too/],
    [{ channel: 'Not An Identifier' }, /migration\.renames\.channel/],
  ])('refuses %j at synth time', (renames, message) => {
    expect(() => pipelineWith({ migration: { ddl: DDL, renames } })).toThrow(message);
  });
});

describe('parseTableDdl', () => {
  it('takes column-level DISTKEY and SORTKEY, and a string that reads like an attribute stays a string', () => {
    const { columns, attributes } = parseTableDdl(`(a int DISTKEY, b varchar(8) DEFAULT 'ENCODE zstd' SORTKEY, "Mixed" char(2)) BACKUP NO`);
    expect(attributes).toEqual({ encodings: {}, distStyle: 'key', distKey: 'a', sortStyle: 'compound', sortKey: ['b'] });
    expect(columns.map((c) => `${c.name} ${c.type}`)).toEqual(['a integer', 'b character varying(8)', 'Mixed character(2)']);
  });

  it('refuses two sort keys or two distribution keys', () => {
    expect(() => parseTableDdl('(a int SORTKEY) SORTKEY (a)')).toThrow(/SORTKEY is declared twice/);
    expect(() => parseTableDdl('(a int DISTKEY, b int) DISTKEY (b)')).toThrow(/DISTKEY is declared twice/);
  });
});

describe('a migration input', () => {
  it('is recognised by its migrate field', () => {
    expect(isMigrationInput({ pipeline: 'orders', migrate: true })).toBe(true);
    expect(isMigrationInput({ pipeline: 'orders' })).toBe(false);
  });

  it('copies all history up to the start of the current grain unit, or up to `to`', () => {
    expect(migrationInterval({ pipeline: 'orders', migrate: true }, pipeline, NOW)).toEqual({ from: new Date('2026-01-01T00:00:00Z'), to: new Date('2026-03-10T00:00:00Z') });
    expect(migrationInterval({ pipeline: 'orders', migrate: true, to: '2026-02-01' }, pipeline, NOW).to).toEqual(new Date('2026-02-01T00:00:00Z'));
  });

  it.each([
    [{ pipeline: 'orders', migrate: true, from: '2026-02-01' }, /unknown field\(s\): from \(allowed: pipeline, migrate, to; a migration copies all history from historyStart\)/],
    [{ pipeline: 'orders', migrate: 'yes' }, /input\.migrate must be true, got "yes"/],
    [{ pipeline: 'orders', migrate: true, to: '2026-02-01T05:00:00Z' }, /input\.to .* is not on a day boundary/],
  ])('refuses %j', (input, message) => {
    expect(() => migrationInterval(input, pipeline, NOW)).toThrow(message);
  });

  it('is refused for a pipeline without migration.ddl, saying what to add', () => {
    expect(() => migrationInterval({ pipeline: 'orders', migrate: true }, pipelineWith(), NOW)).toThrow(/declares no migration: add migration\.ddl/);
  });
});

describe('a migration batch', () => {
  it('reads the columns both tables have from the live table itself, its writers expected', () => {
    const migrating = migrationPipeline(pipeline, LIVE.map((c) => c.split(' ')[0]!));
    expect(copiedColumns(pipeline, ['order_id', 'ordered_at', 'amount', 'note'])).toEqual(['order_id', 'ordered_at', 'amount']);
    expect(migrating.sourceSql).toBe(
      'SELECT "order_id", "ordered_at", "amount" FROM "analytics"."orders" WHERE "ordered_at" >= :start AND "ordered_at" < :end',
    );
    expect(migrating.outOfBand.expectedWriters).toBe(true);
    expect(migrating.migrating).toEqual({ columns: ['order_id', 'ordered_at', 'amount'], from: ['order_id', 'ordered_at', 'amount'] });
  });

  it('is done once the live table has exactly the DDL columns and types', () => {
    expect(isMigrated(pipeline, LIVE)).toBe(false);
    expect(isMigrated(pipeline, ['order_id bigint', 'ordered_at timestamp without time zone', 'amount numeric(14,2)', 'channel character varying(16)'])).toBe(true);
  });

  it('carries no defaults or keys of the old table into the new one: the DDL declares its own', () => {
    const facts = liveTableFacts([
      { kind: 'default', name: 'amount', detail: '0', extra: '', fact: 'a' },
      { kind: 'key', name: 'orders_pk', detail: 'PRIMARY KEY (order_id)', extra: 'p', fact: 'b' },
      { kind: 'grant', name: 'user:bi', detail: 'SELECT', extra: '', fact: 'c' },
    ]);
    const carried = migrationFacts(facts);
    expect([carried.defaults.size, carried.keys.length, carried.grants.length]).toEqual([0, 0, 1]);
  });

  it('catches up, by business key, rows of the old version the swap missed', () => {
    const sql = catchUpRows(pipeline, 'orders__prev_x', ['order_id', 'ordered_at'], '2026-03-01T00:00:00.000Z', 5_000);
    expect(sql.slice(0, 4)).toEqual(['SET LOCAL statement_timeout TO 5000', 'LOCK "analytics"."orders"', 'LOCK "analytics"."orders__prev_x"', 'SET LOCAL statement_timeout TO 0']);
    expect(sql[4]).toContain(`WHERE o."ordered_at" >= CAST('2026-03-01 00:00:00.000' AS timestamp) AND NOT EXISTS (SELECT 1 FROM "analytics"."orders" AS l WHERE l."order_id" = o."order_id")`);
  });
});

describe('migrationProblems', () => {
  const view = (columns: string[]) => ({ schema: 'reporting', view: 'v', definition: 'SELECT ...', owner: 'IAMR:steps', columns });

  it('names a bound view reading a column the DDL drops, and what to change', () => {
    const [problem] = migrationProblems(pipeline, LIVE, [view(['order_id', 'note'])]);
    expect(problem).toBe(
      'view reporting.v reads column note of analytics.orders, which migration.ddl drops; keep the column in migration.ddl, or change the view so it no longer reads it ' +
        '(or re-create it WITH NO SCHEMA BINDING, a late-binding view the swap does not touch) and run the migration again',
    );
  });

  it('names a bound view reading a column whose type the DDL changes', () => {
    expect(migrationProblems(pipeline, LIVE, [view(['amount'])])).toEqual([
      expect.stringContaining('view reporting.v reads column amount (numeric(12,2) now, numeric(14,2) in migration.ddl) of analytics.orders, whose type migration.ddl changes'),
    ]);
  });

  it('refuses a copied column changing to another kind of value, and a live table without the time column', () => {
    const problems = migrationProblems(pipeline, ['order_id character varying(20)', 'amount numeric(12,2)'], []);
    expect(problems).toEqual([
      'the live table analytics.orders has no column ordered_at (timeColumn) to copy its rows by',
      expect.stringContaining('migration.ddl changes column order_id from character varying(20) to bigint, another kind of value'),
    ]);
  });

  it('refuses a new NOT NULL column without a DEFAULT: the copied rows have no value for it', () => {
    const strict = pipelineWith({ migration: { ddl: '(order_id bigint PRIMARY KEY, ordered_at timestamp, region char(2) NOT NULL, seen boolean NOT NULL DEFAULT false)' } });
    expect(strict.migration?.table.columns.map((c) => c.notNull)).toEqual([true, false, true, true]);
    expect(migrationProblems(strict, LIVE, [])).toEqual([
      'migration.ddl adds column region as NOT NULL without a DEFAULT, and the copied rows have no value for it; give it a DEFAULT or let it be NULL',
    ]);
  });

  it('finds nothing wrong with widened types and views reading kept columns', () => {
    expect(migrationProblems(pipeline, LIVE, [view(['order_id', 'ordered_at'])])).toEqual([]);
  });
});
