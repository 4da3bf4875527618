import { ValidationError } from '../errors.ts';
import { checkDriftColumns } from '../gate/drift.ts';
import { checkDimensionColumns } from '../gate/locate.ts';
import { checkMeasureColumns } from '../gate/tolerances.ts';
import { checkMergeColumns } from '../publish/merge.ts';
import { testsForNull } from '../redshift-sql/source-sql.ts';
import type { Pipeline } from '../spec.ts';
import { sha256 } from '../spec.ts';
import { clip, echo } from '../text.ts';
import { floorToGrain, isOnGrain, nextBoundary, parseInstant as parseIsoInstant } from '../time.ts';
import type { BatchInterval, Chunk } from './chunk.ts';
import { identityText, type LiveColumn } from './live-column.ts';
import { quarantineTableFor } from './sql/null-times.ts';

/** What StartExecution carries: `{ "pipeline": "x" }` for a scheduled run, plus `from`/`to` for a manual one. */
export interface ExecutionInput {
  readonly pipeline: string;
  readonly from?: string;
  readonly to?: string;
  /**
   * Re-run an interval already published (a source correction found after
   * publishing) as a new batch, published only if its rows differ from the
   * live ones (docs/decisions/restating-a-published-interval.md).
   */
  readonly restate?: boolean;
  /**
   * Run the reconciliation gate on the interval without publishing, as a
   * batch of its own (docs/decisions/checking-an-interval-without-publishing.md):
   * the execution ends after Reconcile with its verdict.
   */
  readonly check?: boolean;
}

/**
 * "Now" for planning: the execution's start time, so a retried Plan plans
 * the same interval; the clock when the execution gave none.
 */
export function planningTime(startedAt: unknown, clock: Date): Date {
  if (startedAt === undefined || startedAt === null || startedAt === '') return clock;
  const now = typeof startedAt === 'string' ? new Date(startedAt) : new Date(Number.NaN);
  if (Number.isNaN(now.getTime())) throw new ValidationError(`startedAt is not a time: ${clip(String(startedAt))}`);
  return now;
}

/**
 * The live table as the spec needs it, checked before anything is written:
 * it exists, timeColumn and the businessKey columns are columns of it, and
 * timeColumn is a `timestamp without time zone` (chunk boundaries are UTC
 * instants compared with the column as stored: a column with a time zone
 * would place rows by a different clock); `modifiedColumn` and the merge
 * columns as domain/publish/merge.ts checks them. Returns its column names in order.
 */
export function liveTableColumns(pipeline: Pipeline, columns: readonly LiveColumn[]): string[] {
  const { schema, table } = pipeline.target;
  const names = columns.map((c) => c.name);
  if (names.length === 0) {
    throw new ValidationError(
      `live table ${schema}.${table} does not exist: create it once with its DDL (columns, keys, encodings); atomic-publish then rebuilds it`,
    );
  }
  const required: [string, string][] = [['timeColumn', pipeline.timeColumn], ...pipeline.businessKey.map((c): [string, string] => ['businessKey', c])];
  for (const [field, column] of required) {
    if (!names.includes(column)) {
      throw new ValidationError(`pipeline ${pipeline.name}: ${field} ${column} is not a column of ${schema}.${table}`);
    }
  }
  const timeType = columns.find((c) => c.name === pipeline.timeColumn)?.dataType ?? '';
  if (timeType !== 'timestamp without time zone') {
    throw new ValidationError(
      `pipeline ${pipeline.name}: timeColumn ${pipeline.timeColumn} of ${schema}.${table} is ${timeType}; it must be a timestamp without time zone holding UTC`,
    );
  }
  checkMergeColumns(pipeline, columns);
  checkMeasureColumns(pipeline, columns);
  checkDimensionColumns(pipeline, columns);
  checkDriftColumns(pipeline, columns);
  return names;
}

/**
 * The source query must produce every column of the live table a load
 * inserts (`liveColumns`: loadedColumns' answer, without the identity
 * columns Redshift numbers).
 */
export function checkSourceColumns(pipeline: Pipeline, liveColumns: readonly string[], sourceColumns: readonly string[]): void {
  const missing = liveColumns.filter((c) => !sourceColumns.includes(c));
  if (missing.length > 0) {
    const { schema, table } = pipeline.target;
    throw new ValidationError(
      `pipeline ${pipeline.name}: the source query does not produce column(s) ${missing.join(', ')} of ${schema}.${table} (it produces: ${sourceColumns.join(', ')})`,
    );
  }
}

/**
 * The live columns the loads insert, in order, checked before anything is
 * written: an identity column the source does not produce is left out, so
 * Redshift numbers the rows. Refused: a source producing an `IDENTITY(seed,
 * step)` column; an identity column left out that is the timeColumn or a
 * businessKey column; an identity column published by a new table (the rename
 * swap, publishVia 'view'). Why: docs/decisions/identity-columns.md
 */
export function loadedColumns(pipeline: Pipeline, live: readonly LiveColumn[], sourceColumns: readonly string[]): string[] {
  const { schema, table } = pipeline.target;
  const identities = live.filter((c) => c.identity !== undefined);
  if (identities.length === 0) return live.map((c) => c.name);
  const given = identities.filter((c) => c.identity!.kind === 'always' && sourceColumns.includes(c.name));
  if (given.length > 0) {
    throw new ValidationError(
      `pipeline ${pipeline.name}: field sourceSql produces ${given.map((c) => `column ${c.name}`).join(', ')}, which ${schema}.${table} declares ${given.map((c) => identityText(c.identity!)).join(', ')}: ` +
        'Redshift numbers such a column itself and takes no value for it in an INSERT. Leave it out of the source query (each new row is numbered), ' +
        'or declare it GENERATED BY DEFAULT AS IDENTITY(seed, step) to load the values the source gives. Nothing was written',
    );
  }
  const generated = identities.filter((c) => !sourceColumns.includes(c.name));
  const keyed = generated.filter((c) => c.name === pipeline.timeColumn || pipeline.businessKey.includes(c.name));
  if (keyed.length > 0) {
    throw new ValidationError(
      `pipeline ${pipeline.name}: identity column(s) ${keyed.map((c) => c.name).join(', ')} of ${schema}.${table} are numbered by Redshift, yet the spec names them as timeColumn or businessKey, ` +
        'which the gate matches source and staging rows by: key the pipeline on columns the source query produces. Nothing was written',
    );
  }
  const byNewTable =
    pipeline.publishVia === 'view'
      ? "publishVia 'view' publishes each version as a new table"
      : pipeline.publishMode === 'swap' && pipeline.snapshotReaders !== 'in-place'
        ? 'the rename swap publishes staging as the new live table'
        : undefined;
  if (byNewTable !== undefined) {
    throw new ValidationError(
      `pipeline ${pipeline.name}: ${schema}.${table} has identity column(s) ${identities.map((c) => `${c.name} ${identityText(c.identity!)}`).join(', ')}, and ${byNewTable}, ` +
        "whose identity would count from its seed again (Redshift has no ALTER of an identity's next value) and reuse numbers the live table already gave. " +
        (pipeline.publishVia === 'view'
          ? "Publish it without publishVia 'view'"
          : "Set snapshotReaders: 'in-place': the live table's rows are then replaced in place and its own identity keeps counting") +
        '. Nothing was written',
    );
  }
  return live.filter((c) => !generated.includes(c)).map((c) => c.name);
}

/** The identity columns the loads leave out (loadedColumns), which Redshift numbers: every live column not `loaded`. */
export function generatedColumns(live: readonly LiveColumn[], loaded: readonly string[]): string[] {
  return live.filter((c) => c.identity !== undefined && !loaded.includes(c.name)).map((c) => c.name);
}

function parseInstant(field: string, value: unknown): Date {
  const date = parseIsoInstant(value);
  if (date === 'malformed') {
    throw new ValidationError(
      `input.${field} must be an ISO 8601 date or a date-time with a zone (e.g. 2026-01-01 or 2026-01-01T00:00:00Z), got ${echo(value)}`,
    );
  }
  if (date === 'not-a-date') throw new ValidationError(`input.${field} is not a real date: ${clip(String(value))}`);
  return date;
}

/** Looks up the pipeline named by an execution input; unknown names list the known ones. */
export function resolvePipeline(input: unknown, pipelines: readonly Pipeline[]): Pipeline {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationError(`execution input must be a JSON object like {"pipeline": "name"}, got ${echo(input)}`);
  }
  const name = (input as { pipeline?: unknown }).pipeline;
  if (typeof name !== 'string' || name === '') throw new ValidationError('input.pipeline is required');
  const pipeline = pipelines.find((p) => p.name === name);
  if (!pipeline) {
    throw new ValidationError(`unknown pipeline ${echo(name)}; known pipelines: ${pipelines.map((p) => p.name).join(', ') || '(none)'}`);
  }
  return pipeline;
}

/**
 * The interval a run covers: up to `to`, else the start of the current chunk in
 * the pipeline's zone; from `historyStart` for `swap`; for another mode without
 * `from` (a scheduled run), the grain unit before `to` and `lookback` units before
 * it, not before `historyStart`. A manual `from`/`to` lies on the grain, inside
 * `[historyStart, now]`. Why: docs/decisions/batches-and-identity.md, replacing-some-intervals.md
 */
export function resolveInterval(input: ExecutionInput, pipeline: Pipeline, now: Date): BatchInterval {
  const known = new Set(['pipeline', 'from', 'to', 'restate', 'check']);
  const extra = Object.keys(input).filter((key) => !known.has(key));
  if (extra.length > 0) throw new ValidationError(`input has unknown field(s): ${clip(extra.join(', '))} (allowed: pipeline, from, to, restate, check)`);
  if (isRestatement(input) && isCheck(input)) {
    throw new ValidationError(
      'input.check and input.restate exclude each other: a check publishes nothing, a restatement publishes a correction. Give one of them',
    );
  }

  const { grain, timezone } = pipeline.chunk;
  const historyStart = new Date(pipeline.historyStart);
  const to = input.to === undefined ? floorToGrain(now, grain, timezone) : parseInstant('to', input.to);
  // Without `from`, a swap rebuilds all of history; another mode loads the grain unit before `to` and `lookback` units before that.
  const from = input.from !== undefined ? parseInstant('from', input.from) : pipeline.publishMode === 'swap' ? historyStart : scheduledFrom(to, pipeline);

  if (from.getTime() >= to.getTime()) {
    throw new ValidationError(`interval is empty or reversed: from ${from.toISOString()} is not before to ${to.toISOString()}`);
  }
  for (const [field, instant] of [
    ['from', from],
    ['to', to],
  ] as const) {
    if (!isOnGrain(instant, grain, timezone)) {
      throw new ValidationError(
        `input.${field} ${instant.toISOString()} is not on a ${grain} boundary in ${timezone} (nearest earlier boundary: ${floorToGrain(instant, grain, timezone).toISOString()})`,
      );
    }
  }
  if (pipeline.publishMode === 'swap' && from.getTime() !== historyStart.getTime()) {
    throw new ValidationError(
      `pipeline ${pipeline.name} publishes by swap, which rebuilds the whole table: input.from must be omitted or equal historyStart ${historyStart.toISOString()}`,
    );
  }
  if (from.getTime() < historyStart.getTime()) {
    throw new ValidationError(
      `input.from ${from.toISOString()} is before the history of pipeline ${pipeline.name}, which starts at ${historyStart.toISOString()} (historyStart): start at or after it`,
    );
  }
  if (to.getTime() > now.getTime()) {
    throw new ValidationError(`input.to ${to.toISOString()} is in the future`);
  }
  return { from, to };
}

/** A scheduled run's start: `lookback` grain units before the newest complete one that ends at `to`, not before historyStart. */
function scheduledFrom(to: Date, pipeline: Pipeline): Date {
  const { grain, timezone } = pipeline.chunk;
  const historyStart = new Date(pipeline.historyStart);
  let from = to;
  for (let units = 0; units <= pipeline.lookback && from.getTime() > historyStart.getTime(); units += 1) {
    from = floorToGrain(new Date(from.getTime() - 1), grain, timezone);
  }
  return from.getTime() < historyStart.getTime() ? historyStart : from;
}

/** Half-open chunks covering `[from, to)` with no gap and no overlap, however many (a long batch runs in windows, domain/plan/windows.ts). */
export function planChunks(interval: BatchInterval, pipeline: Pipeline): Chunk[] {
  const { grain, timezone } = pipeline.chunk;
  const chunks: Chunk[] = [];
  let start = interval.from;
  while (start.getTime() < interval.to.getTime()) {
    const end = nextBoundary(start, grain, timezone);
    // A boundary that does not advance would loop for ever (domain/time.ts fromWallClock once did so across a DST start).
    if (end.getTime() <= start.getTime()) throw new Error(`no ${grain} boundary after ${start.toISOString()} in ${timezone}`);
    chunks.push({ index: chunks.length, start: start.toISOString(), end: end.toISOString() });
    start = end;
  }
  return chunks;
}

/** True for an input with `"restate": true`; anything but a boolean there is refused. */
export function isRestatement(input: unknown): boolean {
  if (typeof input !== 'object' || input === null || !('restate' in input)) return false;
  const restate = (input as { restate?: unknown }).restate;
  if (typeof restate !== 'boolean') throw new ValidationError(`input.restate must be true or false, got ${echo(restate)}`);
  return restate;
}

/** True for an input with `"check": true`; anything but a boolean there is refused. */
export function isCheck(input: unknown): boolean {
  if (typeof input !== 'object' || input === null || !('check' in input)) return false;
  const check = (input as { check?: unknown }).check;
  if (typeof check !== 'boolean') throw new ValidationError(`input.check must be true or false, got ${echo(check)}`);
  return check;
}

/**
 * A batch of an interval other than the one that publishes it: restatement
 * `n` (a correction published only if it differs) or check `n` (the gate
 * run without publishing). Numbered from 1 per interval and kind.
 */
export type Rerun = { readonly kind: 'restatement' | 'check'; readonly n: number };

/**
 * Same pipeline, interval and spec: same batch id. A re-run of a failed
 * batch therefore resumes it, and a replay of a published one finds it done.
 * Restatement or check `n` (n >= 1) of that batch has an id of its own, from
 * the same facts, its kind and `n`; restatement 0 is the batch itself (its
 * id as before). A bare number is a restatement's.
 */
export function batchIdFor(pipeline: Pipeline, interval: BatchInterval, rerun: number | Rerun = 0): string {
  const { kind, n } = typeof rerun === 'number' ? { kind: 'restatement', n: rerun } : rerun;
  const facts = [pipeline.name, interval.from.toISOString(), interval.to.toISOString(), pipeline.specHash];
  return sha256((n > 0 ? [...facts, `${kind} ${n}`] : facts).join('\n')).slice(0, 16);
}

/**
 * The number of the rerun of `kind` an input runs: the first 1, 2, ...
 * whose batch has not ended (`statusOf` reads a batch's status, undefined
 * when not recorded): one that failed is resumed; once all have ended, a
 * new one is started.
 */
export async function nextRerun(kind: Rerun['kind'], ended: readonly string[], statusOf: (n: number) => Promise<unknown>): Promise<Rerun> {
  for (let n = 1; ; n += 1) {
    const status = await statusOf(n);
    if (status === undefined || !ended.includes(String(status))) return { kind, n };
  }
}

/** Staging table of a batch, in the target schema. */
export function stagingTableFor(pipeline: Pipeline, batchId: string): string {
  return `${pipeline.target.table}__stg_${batchId}`;
}

/** With `publishVia: 'view'`: the version table `batchId` publishes, which the live view reads from then on. */
export function viewVersionTableFor(pipeline: Pipeline, batchId: string): string {
  return `${pipeline.target.table}__v_${batchId}`;
}

/** Name the live table takes when `batchId` replaces it: the retained old version. */
export function previousVersionTableFor(pipeline: Pipeline, batchId: string): string {
  return `${pipeline.target.table}__prev_${batchId}`;
}

/**
 * Refuses a source query that filters the interval on a column the catalog says
 * can be NULL (`nullable`) without testing it for NULL: `OR t IS NULL` lets such
 * rows through to nullTimes, `AND t IS NOT NULL` leaves them out on purpose; else
 * they would be lost unseen. Why: docs/decisions/rows-a-filter-hides.md
 */
export function checkNullTimes(pipeline: Pipeline, nullable: readonly { table: string; column: string }[]): void {
  const untested = nullable.filter((c) => !testsForNull(pipeline.sourceSql, [c.column]));
  const [first] = untested;
  if (!first) return;
  const t = first.column;
  throw new ValidationError(
    `pipeline ${pipeline.name}: field sourceSql would drop rows without a word: it filters the interval on ${untested.map((c) => `${c.table}.${c.column}`).join(', ')}, ` +
      `which can be NULL, and a row with no ${t} passes no comparison with :start and :end, so no check sees it. ` +
      `Let such rows through the filter (WHERE (${t} >= :start AND ${t} < :end) OR ${t} IS NULL) and choose with nullTimes ` +
      `what becomes of them: 'fail' (the default: the run fails naming them) or 'quarantine' (kept in ${quarantineTableFor(pipeline)}, the rest published); ` +
      `or leave them out on purpose (AND ${t} IS NOT NULL)`,
  );
}

/**
 * Type families, for comparing a source column with the live column it is
 * inserted into. Both spellings appear: information_schema's `data_type` of
 * the live table (`character varying`) and the Data API's ColumnMetadata
 * `typeName` of the source query (`varchar`). Redshift's type names and
 * aliases: "Data types", https://docs.aws.amazon.com/redshift/latest/dg/c_Supported_data_types.html.
 */
const TYPE_FAMILIES: Record<string, string> = {
  smallint: 'integer',
  integer: 'integer',
  bigint: 'integer',
  int: 'integer',
  int2: 'integer',
  int4: 'integer',
  int8: 'integer',
  numeric: 'exact numeric',
  decimal: 'exact numeric',
  real: 'float',
  'double precision': 'float',
  float: 'float',
  float4: 'float',
  float8: 'float',
  'character varying': 'string',
  character: 'string',
  varchar: 'string',
  char: 'string',
  bpchar: 'string',
  text: 'string',
  nvarchar: 'string',
  nchar: 'string',
  name: 'string',
  boolean: 'boolean',
  bool: 'boolean',
  date: 'date',
  'timestamp without time zone': 'timestamp',
  timestamp: 'timestamp',
  'timestamp with time zone': 'timestamp with time zone',
  timestamptz: 'timestamp with time zone',
  'time without time zone': 'time',
  time: 'time',
  'time with time zone': 'time with time zone',
  timetz: 'time with time zone',
  varbyte: 'binary',
  'binary varying': 'binary',
  bytea: 'binary',
};

/** Families a value may come from and still fit the family it goes into: an integer fits exact numerics and floats. */
const WIDENS_TO: Record<string, readonly string[]> = { integer: ['exact numeric', 'float'] };

/** The family of a type name; a type outside the table (SUPER, GEOMETRY...) is its own family. */
export function typeFamily(typeName: string): string {
  const name = typeName.toLowerCase().trim();
  return TYPE_FAMILIES[name] ?? name;
}

/**
 * Every live column the source query produces must come in a type of the
 * same family (or an integer where the live column is an exact numeric or a
 * float): a load inserts the source's values as they are, and text for an
 * integer column, a timestamp for a date, or a float for a numeric would be
 * converted (or refused) row by row in the middle of the load instead.
 */
export function checkSourceTypes(pipeline: Pipeline, liveColumns: readonly LiveColumn[], sourceColumns: readonly { name: string; typeName: string }[]): void {
  const { schema, table } = pipeline.target;
  const wrong: string[] = [];
  for (const live of liveColumns) {
    const source = sourceColumns.find((c) => c.name === live.name);
    if (!source) continue;
    const from = typeFamily(source.typeName);
    const to = typeFamily(live.dataType);
    if (from !== to && !(WIDENS_TO[from] ?? []).includes(to)) {
      wrong.push(`column ${live.name} is ${source.typeName} (${from}) where ${schema}.${table}.${live.name} is ${live.dataType} (${to})`);
    }
  }
  if (wrong.length > 0) {
    throw new ValidationError(
      `pipeline ${pipeline.name}: field sourceSql produces values that do not fit the live table: ${wrong.join('; ')}. Cast them in the source query to the live column's type`,
    );
  }
}
