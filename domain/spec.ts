import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from './errors.ts';
import { type CheckAction, type DeclaredChecks, type DriftChecks, type MeasureTolerance, type Severity } from './gate/config.ts';
import { checksSchema } from './gate/schema.ts';
import type { ChunkGrain } from './plan/chunk.ts';
import { sourceSqlProblem } from './redshift-sql/source-sql.ts';
import { parseTableDdl, SqlSyntaxError, type TableDdl, TableDdlError } from './redshift-sql/table-ddl.ts';
import { MAX_EXECUTION_NAME_LENGTH, MAX_SCHEDULED_PIPELINE_NAME_LENGTH } from './run-name.ts';
import { checked, identifier, integer, normalizeSourceSql, positiveInteger, section, withDefault } from './schema-fields.ts';
import { MANIFEST_SCHEMA } from './sql/statement.ts';
import { clip, echo } from './text.ts';
import { isOnGrain, parseInstant } from './time.ts';

export type PublishMode = 'swap' | 'replace-intervals' | 'merge';
/** How the live name is switched to a new version: see PipelineSpec.publishVia. */
export type PublishVia = 'rename' | 'view';
export const PUBLISH_VIA: readonly PublishVia[] = ['rename', 'view'];
/** What a swap does for readers holding an older snapshot: see PipelineSpec.snapshotReaders. */
export type SnapshotReaders = 'wait' | 'in-place';
export const SNAPSHOT_READERS: readonly SnapshotReaders[] = ['wait', 'in-place'];
/** What becomes of source rows whose time column is NULL: see PipelineSpec.nullTimes. */
export type NullTimes = 'fail' | 'quarantine';
export const NULL_TIMES: readonly NullTimes[] = ['fail', 'quarantine'];

/** Publish modes this version can run (docs/reference/pipeline-spec.md, "Publish modes"). */
export const SUPPORTED_PUBLISH_MODES: readonly PublishMode[] = ['swap', 'replace-intervals', 'merge'];

/**
 * Most grain units a scheduled run re-reads behind the newest complete one:
 * a scheduled run stays within one window of chunks (domain/plan/windows.ts).
 */
export const MAX_LOOKBACK = 999;

/** What a pipeline author writes (see pipelines/). */
export interface PipelineSpec {
  /** Unique name: lower-case letters, digits, underscores. Used in batch ids, metrics and schedules. */
  readonly name: string;
  readonly description?: string;
  /** The live table readers query. It must exist before the first run: its DDL owns columns, keys and encodings. */
  readonly target: { readonly schema: string; readonly table: string };
  /**
   * SELECT producing the live table's columns for the half-open interval
   * `[:start, :end)`. Both placeholders are required; they are bound as parameters.
   */
  readonly sourceSql: string;
  /**
   * Column (in the source result and the live table) whose value places a
   * row in a chunk, unless `modifiedColumn` is named: then it is the event
   * time, stored and reported, and `modifiedColumn` places rows in chunks.
   */
  readonly timeColumn: string;
  /**
   * The source's modification time (in the source result and the live
   * table, a timestamp without time zone, UTC): with it, the batch
   * interval, chunks, the load's filter and Reconcile's counts are on this
   * column, so a row changed or entered late for an old event (an old
   * `timeColumn`) is found by the run covering its change. `publishMode:
   * 'merge'` only. @default - rows are extracted by `timeColumn`
   */
  readonly modifiedColumn?: string;
  readonly chunk: {
    readonly grain: ChunkGrain;
    /** IANA time zone in which chunk boundaries fall. @default 'UTC' */
    readonly timezone?: string;
    /** Chunks loaded at once. @default 4 */
    readonly maxConcurrency?: number;
    /**
     * Rows a chunk should hold, about: Plan counts the source's rows per
     * `grain` unit (one grouped count) and merges adjacent units up to this
     * many; a unit holding more stays one chunk. Boundaries stay on the
     * grain, half-open, in `timezone`. A resumed batch keeps the chunks it
     * was planned with. @default - one chunk per grain unit
     */
    readonly targetRows?: number;
  };
  /** First instant of the data (ISO 8601); a full rebuild starts here. Must lie on a chunk boundary. */
  readonly historyStart: string;
  /** Columns that identify a row. */
  readonly businessKey: readonly string[];
  /**
   * How staging reaches the live table, in one transaction, the replaced rows kept
   * as the old version: `'swap'` renames in a rebuild of all history; `'replace-intervals'`
   * replaces the batch's intervals only; `'merge'` upserts by `businessKey` (needs `merge`).
   * Each in full: docs/reference/pipeline-spec.md, "Publish modes".
   * @default 'swap'
   */
  readonly publishMode?: PublishMode;
  /** `publishMode: 'merge'` only, and required with it. */
  readonly merge?: {
    /**
     * Column of the live table (a number, date or timestamp) ordering two versions
     * of a key's row: a staging row wins only when its value is greater (or the
     * live row has none), so an older row never overwrites a newer one and a
     * re-read changes nothing. Why: docs/decisions/merge.md
     */
    readonly versionColumn: string;
    /**
     * Boolean column of the live table: a staging row where it is true
     * deletes the live row of its key (if the staging row is newer) and is
     * not inserted; live rows never hold true. @default - no soft deletes
     */
    readonly softDeleteColumn?: string;
  };
  /**
   * Grain units before the newest complete one that every scheduled run of a
   * `replace-intervals` or `merge` pipeline loads again, so a row up to this many
   * units late is published by the next run, exactly once. 0 to MAX_LOOKBACK; not
   * with `swap`. Why: docs/decisions/replacing-some-intervals.md
   * @default 0
   */
  readonly lookback?: number;
  /**
   * How readers are switched to the new rows: `'rename'`, the live table renamed
   * to its old version and staging to the live name; `'view'`, the live name a
   * bound view over `<table>__v_<batch id>`, switched by one `CREATE OR REPLACE
   * VIEW`. With `'view'` the live name must already be that view (Plan refuses a
   * table and prints the SQL). Why: docs/decisions/publishing-through-a-view.md
   * @default 'rename'
   */
  readonly publishVia?: PublishVia;
  /**
   * `publishMode: 'swap'`, `publishVia: 'rename'` only. `'wait'`: the rename swap,
   * after the snapshots holding a lock (SVV_TRANSACTIONS); one holding none then
   * reads a table it does not know. `'in-place'`: live rows deleted and staging's
   * inserted in one transaction, so every snapshot reads the old rows or the new.
   * Why, and its cost: docs/decisions/snapshot-readers-without-locks.md
   * @default 'wait'
   */
  readonly snapshotReaders?: SnapshotReaders;
  /**
   * Source rows whose `timeColumn` is NULL, which no chunk loads: Reconcile counts
   * those the source's own filter lets through (`... OR t IS NULL`) and `'fail'`s
   * the batch naming a few keys, or `'quarantine'`s them into
   * `<schema>.<table>__quarantine` as rows rejected and publishes the rest.
   * Why: docs/decisions/rows-with-no-time.md
   * @default 'fail'
   */
  readonly nullTimes?: NullTimes;
  readonly checks?: {
    /** Publish an empty staging table. @default false */
    readonly allowEmpty?: boolean;
    /**
     * Exact numeric live columns Reconcile sums per chunk on both sides: a sum that
     * differs fails `staging_sums_match_source` (the alert gives source - staging),
     * unless within `tolerance` (`absolute`, or `relative` 0 to 1 of the source's
     * sum); a floating-point column only with a tolerance. Plan checks the columns.
     * Why: docs/decisions/content-checksum-in-the-gate.md, drift-against-live-and-tolerances.md
     * @default none
     */
    readonly measures?: readonly (
      | string
      | { readonly column: string; readonly tolerance?: { readonly absolute?: string | number; readonly relative?: number } }
    )[];
    /**
     * Reconcile compares, per chunk, an order-independent checksum over
     * every published column of each row on both sides (same pass as the
     * counts): a corrected value or a swapped key fails
     * `staging_content_matches_source` even when counts and sums agree.
     * @default true
     */
    readonly contentChecksum?: boolean;
    /**
     * Business dimension columns of the live table (at most
     * MAX_DIMENSIONS, e.g. region, product line) by which Reconcile, only
     * when the gate failed, splits each differing chunk beside the day:
     * the alert then names the day and the dimension values whose rows,
     * sums or checksum disagree. Plan refuses a column the live table
     * lacks or of a floating-point type. @default none (by day only)
     */
    readonly dimensions?: readonly string[];
    // The declared checks below run after the gate's own, each with a `severity`
    // (`block` by default; `warn` records, logs and publishes) and a `tolerance`
    // (offending rows allowed, default 0). Why: docs/decisions/declared-checks-with-severity.md
    /**
     * Columns of staging that must hold no NULL: a name, or `{ column, severity,
     * tolerance, action }`; `action: 'quarantine'` moves the rows to the quarantine
     * (see `quarantine`; severity and tolerance then do not apply). @default none
     */
    readonly notNull?: readonly (
      | string
      | { readonly column: string; readonly severity?: Severity; readonly tolerance?: number; readonly action?: CheckAction }
    )[];
    /** A column's values must be among `values` (a NULL is left to notNull); `action` as for notNull. @default none */
    readonly acceptedValues?: readonly {
      readonly column: string;
      readonly values: readonly (string | number)[];
      readonly severity?: Severity;
      readonly tolerance?: number;
      readonly action?: CheckAction;
    }[];
    /**
     * A text column's values must match `regex`, a POSIX regular expression
     * (Redshift's `~`; sent as a parameter, backslashes allowed), e.g. a
     * date or a number kept as text that would not parse; a NULL is left
     * to notNull. Plan refuses a column that is not of a character type.
     * `action` as for notNull. @default none
     */
    readonly pattern?: readonly {
      readonly column: string;
      readonly regex: string;
      readonly severity?: Severity;
      readonly tolerance?: number;
      readonly action?: CheckAction;
    }[];
    /**
     * Every staging row's `columns` (all not NULL) exist as `parent.columns`
     * in the parent table: detail rows are not published before their
     * master rows. The alert samples the missing keys. @default none
     */
    readonly references?: readonly {
      readonly columns: readonly string[];
      readonly parent: { readonly schema: string; readonly table: string; readonly columns: readonly string[] };
      readonly severity?: Severity;
      readonly tolerance?: number;
    }[];
    /**
     * Custom checks: one SELECT returning the offending rows, naming
     * staging as `{staging}` (replaced with the quoted staging table, also
     * inside a string literal); other tables it reads must name their
     * schema. No parameters are bound. @default none
     */
    readonly sql?: readonly { readonly name: string; readonly sql: string; readonly severity?: Severity; readonly tolerance?: number }[];
    /**
     * Moves rows breaking a row-level rule (a NULL businessKey column, a key on rows
     * of different content, a check with `action: 'quarantine'`) into
     * `<schema>.<table>__quarantine`; the batch publishes without them while within
     * every limit given (`maxRows`, `maxPct` of the interval's source rows; one at
     * least), else `quarantine_within_tolerance` blocks it. Why: docs/decisions/quarantine-for-row-level-rules.md
     * @default - nothing is quarantined (NULL-time rows aside: nullTimes)
     */
    readonly quarantine?: { readonly maxRows?: number; readonly maxPct?: number };
    /**
     * Staging against what readers see now over the batch interval: `rowCount` per
     * chunk may fall or rise by at most the percents given (a chunk live lacks
     * passes); `nullRate` per column may exceed live's NULL share by at most
     * `maxIncreasePoints`. Each with a `severity` and `minRows` (default 100); not
     * with `merge` and a `modifiedColumn`. Why: docs/decisions/drift-against-live-and-tolerances.md
     * @default none
     */
    readonly drift?: {
      readonly rowCount?: { readonly maxDecreasePct?: number; readonly maxIncreasePct?: number; readonly minRows?: number; readonly severity?: Severity };
      readonly nullRate?: { readonly columns?: readonly string[]; readonly maxIncreasePoints: number; readonly minRows?: number; readonly severity?: Severity };
    };
  };
  /**
   * `slaMinutes`: page when the live data was published longer ago than
   * this. `maxDataLagMinutes`: also page when the newest event time in the
   * live table is older than this (the source stopped delivering, or runs
   * publish nothing newer). `expectedRunMinutes`: page when a run takes
   * longer than this from its start to its publish (RunDurationSeconds).
   * @default - maxDataLagMinutes: no data-lag alarm; expectedRunMinutes: half the SLA (a failed run can still be re-run within it)
   */
  readonly freshness: { readonly slaMinutes: number; readonly maxDataLagMinutes?: number; readonly expectedRunMinutes?: number };
  /** EventBridge Scheduler expression, e.g. `cron(0 6 * * ? *)`, in `timezone`. @default - no schedule */
  readonly schedule?: { readonly expression: string; readonly timezone?: string };
  /** Old versions kept for rollback after a publish. @default 3 */
  readonly retention?: { readonly keepVersions?: number };
  /**
   * Writers of the live table other than this pipeline: the swap refuses a live
   * table whose columns or fingerprint changed since Plan. `expectedWriters`: rows
   * at or after the batch's `to` are theirs, left out of the fingerprint and carried
   * over. `watch`: the live watch compares the live table between runs with what
   * its latest publication recorded (default true for `swap`, false in place: a
   * full scan). Why: docs/decisions/publishing.md, docs/decisions/live-watch.md
   */
  readonly outOfBand?: { readonly expectedWriters?: boolean; readonly watch?: boolean };
  /**
   * The live table's next DDL, the body of a CREATE TABLE (`(<columns>) <attributes>`),
   * validated at synth time; the input `{"pipeline": ..., "migrate": true}` rebuilds
   * the live table with it. Ship it with the `sourceSql` producing its columns: normal
   * runs are refused until it has run. `renames`: a DDL column copied from a live
   * column of another name. Why: docs/decisions/migrating-a-live-table.md
   * @default - no migration
   */
  readonly migration?: { readonly ddl: string; readonly renames?: Readonly<Record<string, string>> };
}

/** A validated spec with defaults applied. */
export interface Pipeline {
  readonly name: string;
  readonly description: string;
  readonly target: { readonly schema: string; readonly table: string };
  readonly sourceSql: string;
  readonly timeColumn: string;
  readonly modifiedColumn?: string;
  readonly chunk: { readonly grain: ChunkGrain; readonly timezone: string; readonly maxConcurrency: number; readonly targetRows?: number };
  readonly historyStart: string;
  readonly businessKey: readonly string[];
  readonly publishMode: PublishMode;
  readonly merge?: { readonly versionColumn: string; readonly softDeleteColumn?: string };
  readonly lookback: number;
  readonly publishVia: PublishVia;
  readonly snapshotReaders: SnapshotReaders;
  readonly nullTimes: NullTimes;
  readonly checks: {
    readonly allowEmpty: boolean;
    /** The measures' columns, in the spec's order. */
    readonly measures: readonly string[];
    /** The tolerances declared with measures, by column; left out when none is. */
    readonly measureTolerances?: Readonly<Record<string, MeasureTolerance>>;
    readonly contentChecksum: boolean;
    readonly dimensions?: readonly string[];
    /** Absent unless the spec declares it (see PipelineSpec.checks.quarantine). */
    readonly quarantine?: { readonly maxRows?: number; readonly maxPct?: number };
    /** Left out when not declared. */
    readonly drift?: DriftChecks;
  } & DeclaredChecks;
  readonly freshness: { readonly slaMinutes: number; readonly maxDataLagMinutes?: number; readonly expectedRunMinutes?: number };
  readonly schedule?: { readonly expression: string; readonly timezone: string };
  readonly retention: { readonly keepVersions: number };
  readonly outOfBand: { readonly expectedWriters: boolean; readonly watch: boolean };
  /** The migration DDL as written (without trailing semicolons) and as parsed, and its renames (new column -> live column). */
  readonly migration?: { readonly ddl: string; readonly table: TableDdl; readonly renames: Readonly<Record<string, string>> };
  /**
   * Set only on a migration batch's pipeline (domain/migration/migration.ts
   * migrationPipeline): the new table's columns the migration copies, in
   * its order, and the live column each is copied from (`from`, the same
   * name unless migration.renames says otherwise); its sourceSql reads them
   * from the live table.
   */
  readonly migrating?: { readonly columns: readonly string[]; readonly from: readonly string[] };
  /** sha256 of the fields that decide the published rows: frozen into every batch. */
  readonly specHash: string;
}

/**
 * Longest target table name: derived names (`<table>__stg_<batch id>`,
 * `<table>__prev_<batch id>`) must still fit 63 characters.
 */
export const MAX_TABLE_NAME_LENGTH = 40;
export const MAX_MAP_CONCURRENCY = 40;
const GRAINS = ['hour', 'day', 'month'] as const satisfies readonly ChunkGrain[];
const SCHEDULE = /^(cron|rate|at)\(.+\)$/;
/** Problems a rejection lists before it only counts the rest. */
const MAX_LISTED_PROBLEMS = 10;

export function isValidTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

// The schema: one piece per section of the spec, each field with the
// message a pipeline author reads after the field's path ("chunk.grain must
// be one of hour, day, month"). Defaults are applied here; a section may be
// left out when all its fields have defaults. New sections (more checks,
// publish modes, chunk targets) add a piece and a line in pipelineSchema.

const timezone = checked<string>((value) => (typeof value === 'string' && isValidTimeZone(value) ? undefined : `${echo(value)} is not an IANA time zone`));

// The query itself; inside the statements built around it, definePipeline checks it (domain/plan/source-sql.ts).
const sourceSqlSchema = checked<string>((value) => (typeof value === 'string' ? sourceSqlProblem(value, []) : 'must be a SELECT statement')).transform(
  normalizeSourceSql,
);

const historyStartSchema = checked<string>((value) =>
  parseInstant(value) instanceof Date
    ? undefined
    : 'must be an ISO 8601 date or time with a zone that exists, e.g. 2026-01-01 (midnight UTC) or 2026-01-01T00:00:00+01:00',
);

const targetSchema = section({
  schema: identifier.refine((schema) => schema !== MANIFEST_SCHEMA, { error: `must not be the manifest schema ${MANIFEST_SCHEMA}` }),
  table: identifier.refine((table) => table.length <= MAX_TABLE_NAME_LENGTH, {
    error: `must be at most ${MAX_TABLE_NAME_LENGTH} characters (derived staging and old-version names must fit)`,
  }),
});

const chunkSchema = section({
  grain: z.enum(GRAINS, { error: `must be one of ${GRAINS.join(', ')}` }),
  timezone: withDefault(timezone, 'UTC'),
  maxConcurrency: withDefault(integer(1, MAX_MAP_CONCURRENCY), 4),
  targetRows: z.preprocess((value) => value ?? undefined, positiveInteger(' (rows per chunk, about)').optional()),
});

const businessKeySchema = z.array(identifier, { error: 'must list at least one column' }).min(1, { error: 'must list at least one column' });

const publishModeSchema = checked<PublishMode>((value) =>
  (SUPPORTED_PUBLISH_MODES as readonly unknown[]).includes(value)
    ? undefined
    : `${echo(value)} is not supported by this version (supported: ${SUPPORTED_PUBLISH_MODES.join(', ')})`,
);

const publishViaSchema = checked<PublishVia>((value) =>
  (PUBLISH_VIA as readonly unknown[]).includes(value) ? undefined : `${echo(value)} must be one of ${PUBLISH_VIA.join(', ')}`,
);

const mergeSchema = z
  .object(
    {
      versionColumn: identifier,
      softDeleteColumn: z.preprocess((value) => value ?? undefined, identifier.optional()),
    },
    { error: 'must be an object with a versionColumn' },
  )
  .optional();

const freshnessSchema = section({
  slaMinutes: integer(1, 24 * 60, ' (at most a day)'),
  maxDataLagMinutes: integer(1, 366 * 24 * 60, ' (at most a year)').optional(),
  // A Standard execution runs at most a year; the stack's timeout stops it far sooner.
  expectedRunMinutes: integer(1, 366 * 24 * 60, ' (at most a year)').optional(),
});

const scheduleSchema = z
  .object(
    {
      expression: checked<string>((value) =>
        typeof value === 'string' && SCHEDULE.test(value) ? undefined : 'must be an EventBridge Scheduler expression: cron(...), rate(...) or at(...)',
      ),
      timezone: z.preprocess((value) => value ?? undefined, timezone.optional()),
    },
    { error: 'must be an object with an expression' },
  )
  .optional();

const retentionSchema = section({
  keepVersions: withDefault(integer(0, 100), 3),
});

const outOfBandSchema = section({
  expectedWriters: withDefault(z.boolean({ error: 'must be true or false' }), false),
  watch: z.boolean({ error: 'must be true or false' }).optional(),
});

/** The migration DDL without surrounding blanks and trailing semicolons. */
function normalizeDdl(ddl: string): string {
  return ddl.replace(/[\s;]+$/, '').trim();
}

const migrationSchema = z
  .object(
    {
      ddl: z.string({ error: 'must be the body of a CREATE TABLE: (<columns>) <table attributes>' }).transform((ddl, ctx) => {
        try {
          return { ddl: normalizeDdl(ddl), table: parseTableDdl(normalizeDdl(ddl)) };
        } catch (error) {
          if (!(error instanceof TableDdlError || error instanceof SqlSyntaxError)) throw error;
          ctx.addIssue({ code: 'custom', message: `${error instanceof SqlSyntaxError ? 'does not parse: ' : ''}${error.message}` });
          return z.NEVER;
        }
      }),
      renames: withDefault(z.record(z.string(), identifier, { error: 'must map new column names to live column names' }), {}),
    },
    { error: 'must be an object with a ddl' },
  )
  .optional();

const pipelineSchema = z
  .object({
    name: identifier,
    description: withDefault(z.string({ error: 'must be a string' }), ''),
    target: targetSchema,
    sourceSql: sourceSqlSchema,
    timeColumn: identifier,
    modifiedColumn: z.preprocess((value) => value ?? undefined, identifier.optional()),
    chunk: chunkSchema,
    historyStart: historyStartSchema,
    businessKey: businessKeySchema,
    publishMode: withDefault(publishModeSchema, 'swap'),
    merge: z.preprocess((value) => value ?? undefined, mergeSchema),
    lookback: withDefault(integer(0, MAX_LOOKBACK, ' (grain units a scheduled run re-reads: at most one window of chunks)'), 0),
    publishVia: withDefault(publishViaSchema, 'rename'),
    snapshotReaders: withDefault(
      checked<SnapshotReaders>((value) =>
        (SNAPSHOT_READERS as readonly unknown[]).includes(value) ? undefined : `${echo(value)} must be one of ${SNAPSHOT_READERS.join(', ')}`,
      ),
      'wait',
    ),
    nullTimes: withDefault(
      checked<NullTimes>((value) =>
        (NULL_TIMES as readonly unknown[]).includes(value) ? undefined : `${echo(value)} must be one of ${NULL_TIMES.join(', ')}`,
      ),
      'fail',
    ),
    checks: checksSchema,
    freshness: freshnessSchema,
    schedule: scheduleSchema,
    retention: retentionSchema,
    outOfBand: outOfBandSchema,
    migration: migrationSchema,
  })
  .superRefine(
    (spec, ctx) => {
      const columns = spec.migration?.ddl.table.columns ?? [];
      const time = columns.find((c) => c.name === spec.timeColumn);
      if (time?.type !== 'timestamp without time zone') {
        ctx.addIssue({
          code: 'custom',
          path: ['migration', 'ddl'],
          message: time
            ? `declares timeColumn ${spec.timeColumn} as ${time.type}; it must stay a timestamp without time zone holding UTC`
            : `does not declare timeColumn ${spec.timeColumn}: the migration copies rows by it`,
        });
      }
      const missing = spec.businessKey.filter((k) => !columns.some((c) => c.name === k));
      if (missing.length > 0)
        ctx.addIssue({ code: 'custom', path: ['migration', 'ddl'], message: `does not declare businessKey column(s) ${missing.join(', ')}` });
      for (const [to, from] of Object.entries(spec.migration?.renames ?? {})) {
        const problem = !columns.some((c) => c.name === to)
          ? `names ${to}, which migration.ddl does not declare`
          : [spec.timeColumn, ...spec.businessKey].includes(to) || [spec.timeColumn, ...spec.businessKey].includes(from)
            ? `renames ${from} to ${to}, but timeColumn and businessKey columns keep their names (the copy and the swap find rows by them)`
            : columns.some((c) => c.name === from)
              ? `copies ${from} into ${to}, but migration.ddl declares ${from} too: rename it, or copy it in a later run`
              : undefined;
        if (problem) ctx.addIssue({ code: 'custom', path: ['migration', 'renames', to], message: problem });
      }
    },
    {
      when: (payload) =>
        (payload.value as { migration?: unknown }).migration !== undefined &&
        !payload.issues.some((issue) => ['migration', 'timeColumn', 'businessKey'].includes(String(issue.path?.[0]))),
    },
  )
  .superRefine(
    (spec, ctx) => {
      const { grain, timezone } = spec.chunk;
      if (!isOnGrain(parseInstant(spec.historyStart) as Date, grain, timezone)) {
        ctx.addIssue({ code: 'custom', path: ['historyStart'], message: `${clip(spec.historyStart)} is not on a ${grain} boundary in ${timezone}` });
      }
    },
    // Checked whenever the fields it compares are valid, whatever else is wrong.
    { when: (payload) => !payload.issues.some((issue) => ['chunk', 'historyStart'].includes(String(issue.path?.[0]))) },
  )
  .superRefine(
    (spec, ctx) => {
      if (spec.schedule && spec.name.length > MAX_SCHEDULED_PIPELINE_NAME_LENGTH) {
        ctx.addIssue({
          code: 'custom',
          path: ['name'],
          message: `must be at most ${MAX_SCHEDULED_PIPELINE_NAME_LENGTH} characters for a pipeline with a schedule: its runs are named <name>-scheduled-20260401T060000Z, and an execution name holds at most ${MAX_EXECUTION_NAME_LENGTH}`,
        });
      }
    },
    { when: (payload) => !payload.issues.some((issue) => ['name', 'schedule'].includes(String(issue.path?.[0]))) },
  )
  .superRefine(
    (spec, ctx) => {
      if (spec.publishMode === 'swap' && spec.lookback > 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['lookback'],
          message:
            'applies only to publish modes that load some intervals (replace-intervals, merge): a swap rebuilds all of history on every run; remove lookback or change publishMode',
        });
      }
      if (spec.publishMode !== 'swap' && spec.publishVia === 'view') {
        ctx.addIssue({
          code: 'custom',
          path: ['publishVia'],
          message: `"view" switches whole versions of the table and works with publishMode swap only; publishMode ${spec.publishMode} changes rows of the live table in place: use publishVia "rename" (the default)`,
        });
      }
      if (spec.snapshotReaders === 'in-place' && (spec.publishMode !== 'swap' || spec.publishVia !== 'rename')) {
        ctx.addIssue({
          code: 'custom',
          path: ['snapshotReaders'],
          message:
            spec.publishMode !== 'swap'
              ? `"in-place" applies to publishMode swap only: publishMode ${spec.publishMode} already changes rows of the live table in place, which every snapshot reads as old or new; remove snapshotReaders`
              : '"in-place" applies to publishVia "rename" only: a view is switched by CREATE OR REPLACE VIEW, not by rewriting rows; remove snapshotReaders or use publishVia "rename"',
        });
      }
      if (spec.snapshotReaders === 'in-place' && spec.outOfBand.expectedWriters) {
        ctx.addIssue({
          code: 'custom',
          path: ['snapshotReaders'],
          message:
            '"in-place" cannot be used with outOfBand.expectedWriters: it deletes every live row in its transaction, the rows those writers added since Plan with them, where the rename swap carries them over; remove one of the two',
        });
      }
    },
    {
      when: (payload) =>
        !payload.issues.some((issue) => ['publishMode', 'lookback', 'publishVia', 'snapshotReaders', 'outOfBand'].includes(String(issue.path?.[0]))),
    },
  )
  .superRefine(
    (spec, ctx) => {
      if (spec.checks.drift !== undefined && spec.publishMode === 'merge' && spec.modifiedColumn !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['checks', 'drift'],
          message: `cannot be used with publishMode merge and a modifiedColumn: staging holds only the rows modified in the batch interval, which says nothing about how many rows or NULLs live holds; remove checks.drift or extract by timeColumn`,
        });
      }
    },
    { when: (payload) => !payload.issues.some((issue) => ['publishMode', 'modifiedColumn', 'checks'].includes(String(issue.path?.[0]))) },
  )
  .superRefine((spec, ctx) => mergeProblems(spec, ctx), {
    when: (payload) =>
      !payload.issues.some((issue) => ['publishMode', 'merge', 'modifiedColumn', 'timeColumn', 'businessKey'].includes(String(issue.path?.[0]))),
  });

/** What `merge` and `modifiedColumn` need of the rest of the spec (domain/publish/sql/merge.ts). */
function mergeProblems(
  spec: {
    publishMode: PublishMode;
    merge?: { versionColumn: string; softDeleteColumn?: string | undefined } | undefined;
    modifiedColumn?: string | undefined;
    businessKey: string[];
  },
  ctx: z.RefinementCtx,
): void {
  const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
  if (spec.publishMode === 'merge' && spec.merge === undefined) {
    issue(
      ['merge'],
      'is required with publishMode merge: name merge.versionColumn, the live column (a version number or modification time) that decides which of two rows of a business key is newer',
    );
  }
  if (spec.publishMode !== 'merge' && spec.merge !== undefined) {
    issue(['merge'], `applies to publishMode merge only (this pipeline publishes by ${spec.publishMode}): remove merge or set publishMode "merge"`);
  }
  if (spec.publishMode !== 'merge' && spec.modifiedColumn !== undefined) {
    issue(
      ['modifiedColumn'],
      spec.publishMode === 'replace-intervals'
        ? 'cannot be used with publishMode replace-intervals: staging would hold only the rows modified in the batch interval, and replacing their event-time intervals with them would delete the rest of those intervals; use publishMode "merge" to extract by modification time, or remove modifiedColumn'
        : 'cannot be used with publishMode swap, which rebuilds all of history by timeColumn on every run: use publishMode "merge" to extract by modification time, or remove modifiedColumn',
    );
  }
  const { merge } = spec;
  if (merge === undefined) return;
  if (spec.businessKey.includes(merge.versionColumn)) {
    issue(['merge', 'versionColumn'], `${merge.versionColumn} is a businessKey column: name the column whose value grows with each new version of a row`);
  }
  if (merge.softDeleteColumn !== undefined && (spec.businessKey.includes(merge.softDeleteColumn) || merge.softDeleteColumn === merge.versionColumn)) {
    issue(['merge', 'softDeleteColumn'], `${merge.softDeleteColumn} is a businessKey or the version column: name the boolean column that marks a deleted row`);
  }
}

/** `chunk.grain`, `businessKey[1]`: a field as the author wrote it. */
function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');
}

/** One message for every wrong field: `pipeline x: chunk.grain must be ...`, or `pipeline x: 2 problems: ...; ...`. */
function rejection(name: unknown, issues: readonly z.core.$ZodIssue[]): ValidationError {
  const problems = issues.map((issue) => `${fieldPath(issue.path)} ${issue.message}`);
  const label = `pipeline ${clip(String(name), 128)}:`;
  if (problems.length === 1) return new ValidationError(`${label} ${problems[0]}`);
  const listed = problems.slice(0, MAX_LISTED_PROBLEMS);
  if (problems.length > listed.length) listed.push(`and ${problems.length - listed.length} more`);
  return new ValidationError(`${label} ${problems.length} problems: ${listed.join('; ')}`);
}

/**
 * Validates a spec by the schema and applies its defaults; a rejection
 * names the pipeline and every wrong field. definePipeline
 * (domain/define-pipeline.ts) calls it, then checks the source query inside
 * the statements built around it.
 */
export function validateSpec(spec: PipelineSpec): Pipeline {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw new ValidationError('pipeline spec must be an object');
  const parsed = pipelineSchema.safeParse(spec);
  if (!parsed.success) throw rejection(spec.name, parsed.error.issues);
  const valid = parsed.data;
  const { schedule } = valid;
  const normalized: Omit<Pipeline, 'specHash'> = {
    name: valid.name,
    description: valid.description,
    target: valid.target,
    sourceSql: valid.sourceSql,
    timeColumn: valid.timeColumn,
    ...(valid.modifiedColumn === undefined ? {} : { modifiedColumn: valid.modifiedColumn }),
    chunk: chunkSettings(valid.chunk),
    historyStart: valid.historyStart,
    businessKey: valid.businessKey,
    publishMode: valid.publishMode,
    ...(valid.merge === undefined ? {} : { merge: mergeSettings(valid.merge) }),
    lookback: valid.lookback,
    publishVia: valid.publishVia,
    snapshotReaders: valid.snapshotReaders,
    nullTimes: valid.nullTimes,
    checks: valid.checks,
    freshness: valid.freshness,
    // A schedule runs in the chunk zone unless it says otherwise.
    ...(schedule ? { schedule: { expression: schedule.expression, timezone: schedule.timezone ?? valid.chunk.timezone } } : {}),
    retention: valid.retention,
    // The watch costs a swap one scan of the table it publishes; in place, a scan of the whole live table: asked for.
    outOfBand: { expectedWriters: valid.outOfBand.expectedWriters, watch: valid.outOfBand.watch ?? valid.publishMode === 'swap' },
    ...(valid.migration ? { migration: { ...valid.migration.ddl, renames: valid.migration.renames } } : {}),
  };
  return { ...normalized, specHash: specHash(normalized) };
}

/** The merge section without an absent softDeleteColumn. */
function mergeSettings(merge: { versionColumn: string; softDeleteColumn?: string | undefined }): NonNullable<Pipeline['merge']> {
  return merge.softDeleteColumn === undefined
    ? { versionColumn: merge.versionColumn }
    : { versionColumn: merge.versionColumn, softDeleteColumn: merge.softDeleteColumn };
}

/** The chunk section without an absent targetRows. */
function chunkSettings(chunk: z.output<typeof chunkSchema>): Pipeline['chunk'] {
  const { targetRows, ...rest } = chunk;
  return targetRows === undefined ? rest : { ...rest, targetRows };
}

/**
 * sha256 of what decides the published rows, so tuning concurrency, the
 * chunk target (a batch records the chunks it was planned with), the SLA, the schedule, retention, out-of-band writers (each Plan freezes that
 * setting into its BatchRef) or the description neither fails a run in
 * flight (SpecChangedError) nor turns a failed batch into a new one.
 */
function specHash(pipeline: Omit<Pipeline, 'specHash'>): string {
  const dataDefinition = {
    name: pipeline.name,
    target: pipeline.target,
    sourceSql: pipeline.sourceSql,
    timeColumn: pipeline.timeColumn,
    // Absent (left out of the JSON) unless named: existing hashes stay.
    modifiedColumn: pipeline.modifiedColumn,
    merge: pipeline.merge,
    chunk: { grain: pipeline.chunk.grain, timezone: pipeline.chunk.timezone },
    historyStart: (parseInstant(pipeline.historyStart) as Date).toISOString(),
    businessKey: pipeline.businessKey,
    publishMode: pipeline.publishMode,
    // A batch planned for one way cannot be published the other way; left
    // out for 'rename' so that the hashes of existing pipelines stay.
    publishVia: pipeline.publishVia === 'rename' ? undefined : pipeline.publishVia,
    checks: checksHashed(pipeline.checks),
  };
  return sha256(canonicalJson(dataDefinition));
}

/** The checks as the spec hash sees them: the gate's fields left out at their defaults, so that the hashes of existing pipelines stay. */
function checksHashed(checks: Pipeline['checks']): Record<string, unknown> {
  return {
    allowEmpty: checks.allowEmpty,
    // A measure with a tolerance as { column, tolerance }; plain names as before.
    measures:
      checks.measures.length > 0
        ? checks.measures.map((column) => (checks.measureTolerances?.[column] === undefined ? column : { column, tolerance: checks.measureTolerances[column] }))
        : undefined,
    contentChecksum: checks.contentChecksum ? undefined : false,
    // dimensions: left out, since they decide no published row, only how a failed gate's difference is
    // located; declaring one to look into a failed batch resumes that batch instead of starting a new one.
    // The declared checks decide what publishes: in the hash when declared.
    notNull: checks.notNull.length > 0 ? checks.notNull : undefined,
    acceptedValues: checks.acceptedValues.length > 0 ? checks.acceptedValues : undefined,
    pattern: checks.pattern.length > 0 ? checks.pattern : undefined,
    references: checks.references.length > 0 ? checks.references : undefined,
    sql: checks.sql.length > 0 ? checks.sql : undefined,
    quarantine: checks.quarantine,
    // Drift against live decides what may publish: in the hash when declared.
    drift: checks.drift,
  };
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** JSON with object keys sorted, so equal specs hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
