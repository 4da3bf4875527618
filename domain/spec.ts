import { createHash } from 'node:crypto';
import { ValidationError } from './errors.ts';
import { validateIdentifier } from './identifiers.ts';
import { isOnGrain, parseInstant } from './time.ts';

export type ChunkGrain = 'hour' | 'day' | 'month';
export type PublishMode = 'swap' | 'replace-intervals' | 'merge';

/** Publish modes this version can run; the others are planned (see README). */
export const SUPPORTED_PUBLISH_MODES: readonly PublishMode[] = ['swap'];

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
  /** Column (in the source result and the live table) whose value places a row in a chunk. */
  readonly timeColumn: string;
  readonly chunk: {
    readonly grain: ChunkGrain;
    /** IANA time zone in which chunk boundaries fall. @default 'UTC' */
    readonly timezone?: string;
    /** Chunks loaded at once. @default 4 */
    readonly maxConcurrency?: number;
  };
  /** First instant of the data (ISO 8601); a full rebuild starts here. Must lie on a chunk boundary. */
  readonly historyStart: string;
  /** Columns that identify a row. */
  readonly businessKey: readonly string[];
  /** @default 'swap' */
  readonly publishMode?: PublishMode;
  readonly checks?: {
    /** Publish an empty staging table. @default false */
    readonly allowEmpty?: boolean;
  };
  /** Page when no publish happened for this long. */
  readonly freshness: { readonly slaMinutes: number };
  /** EventBridge Scheduler expression, e.g. `cron(0 6 * * ? *)`, in `timezone`. @default - no schedule */
  readonly schedule?: { readonly expression: string; readonly timezone?: string };
  /** Old versions kept for rollback after a publish. @default 3 */
  readonly retention?: { readonly keepVersions?: number };
}

/** A validated spec with defaults applied. */
export interface Pipeline {
  readonly name: string;
  readonly description: string;
  readonly target: { readonly schema: string; readonly table: string };
  readonly sourceSql: string;
  readonly timeColumn: string;
  readonly chunk: { readonly grain: ChunkGrain; readonly timezone: string; readonly maxConcurrency: number };
  readonly historyStart: string;
  readonly businessKey: readonly string[];
  readonly publishMode: PublishMode;
  readonly checks: { readonly allowEmpty: boolean };
  readonly freshness: { readonly slaMinutes: number };
  readonly schedule?: { readonly expression: string; readonly timezone: string };
  readonly retention: { readonly keepVersions: number };
  /** sha256 of the fields that decide the published rows: frozen into every batch. */
  readonly specHash: string;
}

/**
 * Longest target table name: derived names (`<table>__stg_<batch id>`,
 * `<table>__prev_<batch id>`) must still fit 63 characters.
 */
export const MAX_TABLE_NAME_LENGTH = 40;
export const MAX_MAP_CONCURRENCY = 40;
const GRAINS: readonly ChunkGrain[] = ['hour', 'day', 'month'];
const SCHEDULE = /^(cron|rate|at)\(.+\)$/;

function fail(pipeline: string, field: string, message: string): never {
  throw new ValidationError(`pipeline ${pipeline}: ${field} ${message}`);
}

function identifierField(pipeline: string, field: string, value: unknown): string {
  try {
    return validateIdentifier(value, field);
  } catch (error) {
    throw new ValidationError(`pipeline ${pipeline}: ${(error as Error).message}`);
  }
}

export function isValidTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** Validates a spec; every message names the pipeline and the field. */
export function definePipeline(spec: PipelineSpec): Pipeline {
  if (typeof spec !== 'object' || spec === null) throw new ValidationError('pipeline spec must be an object');
  const name = typeof spec.name === 'string' ? spec.name : String(spec.name);
  identifierField(name, 'name', spec.name);

  const schema = identifierField(name, 'target.schema', spec.target?.schema);
  const table = identifierField(name, 'target.table', spec.target?.table);
  if (table.length > MAX_TABLE_NAME_LENGTH) {
    fail(name, 'target.table', `must be at most ${MAX_TABLE_NAME_LENGTH} characters (derived staging and old-version names must fit)`);
  }
  if (schema === 'atomic_publish') fail(name, 'target.schema', 'must not be the manifest schema atomic_publish');

  if (typeof spec.sourceSql !== 'string' || spec.sourceSql.trim() === '') fail(name, 'sourceSql', 'must be a SELECT statement');
  for (const placeholder of [':start', ':end']) {
    if (!new RegExp(`${placeholder}\\b`).test(spec.sourceSql)) {
      fail(name, 'sourceSql', `must use the ${placeholder} placeholder (rows in [:start, :end))`);
    }
  }
  const sourceSql = spec.sourceSql.replace(/[\s;]+$/, '').trim();
  if (sourceSql.includes(';')) fail(name, 'sourceSql', 'must be one statement (no ";")');

  const timeColumn = identifierField(name, 'timeColumn', spec.timeColumn);

  const grain = spec.chunk?.grain;
  if (!GRAINS.includes(grain)) fail(name, 'chunk.grain', `must be one of ${GRAINS.join(', ')}`);
  const timezone = spec.chunk.timezone ?? 'UTC';
  if (!isValidTimeZone(timezone)) fail(name, 'chunk.timezone', `"${timezone}" is not an IANA time zone`);
  const maxConcurrency = spec.chunk.maxConcurrency ?? 4;
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > MAX_MAP_CONCURRENCY) {
    fail(name, 'chunk.maxConcurrency', `must be an integer from 1 to ${MAX_MAP_CONCURRENCY}`);
  }

  const historyStart = parseInstant(spec.historyStart);
  if (!(historyStart instanceof Date)) {
    fail(name, 'historyStart', 'must be an ISO 8601 date or time with a zone that exists, e.g. 2026-01-01 (midnight UTC) or 2026-01-01T00:00:00+01:00');
  }
  if (!isOnGrain(historyStart, grain, timezone)) {
    fail(name, 'historyStart', `${spec.historyStart} is not on a ${grain} boundary in ${timezone}`);
  }

  if (!Array.isArray(spec.businessKey) || spec.businessKey.length === 0) {
    fail(name, 'businessKey', 'must list at least one column');
  }
  const businessKey = spec.businessKey.map((column, i) => identifierField(name, `businessKey[${i}]`, column));

  const publishMode = spec.publishMode ?? 'swap';
  if (!SUPPORTED_PUBLISH_MODES.includes(publishMode)) {
    fail(name, 'publishMode', `"${publishMode}" is not supported by this version (supported: ${SUPPORTED_PUBLISH_MODES.join(', ')})`);
  }

  const slaMinutes = spec.freshness?.slaMinutes;
  if (!Number.isInteger(slaMinutes) || slaMinutes < 1 || slaMinutes > 24 * 60) {
    fail(name, 'freshness.slaMinutes', 'must be an integer from 1 to 1440 (one alarm period of at most a day)');
  }

  let schedule: Pipeline['schedule'];
  if (spec.schedule !== undefined) {
    if (typeof spec.schedule !== 'object' || spec.schedule === null) fail(name, 'schedule', 'must be an object with an expression');
    if (typeof spec.schedule.expression !== 'string' || !SCHEDULE.test(spec.schedule.expression)) {
      fail(name, 'schedule.expression', 'must be an EventBridge Scheduler expression: cron(...), rate(...) or at(...)');
    }
    const scheduleTimezone = spec.schedule.timezone ?? timezone;
    if (!isValidTimeZone(scheduleTimezone)) fail(name, 'schedule.timezone', `"${scheduleTimezone}" is not an IANA time zone`);
    schedule = { expression: spec.schedule.expression, timezone: scheduleTimezone };
  }

  const keepVersions = spec.retention?.keepVersions ?? 3;
  if (!Number.isInteger(keepVersions) || keepVersions < 0 || keepVersions > 100) {
    fail(name, 'retention.keepVersions', 'must be an integer from 0 to 100');
  }

  const normalized = {
    name,
    description: spec.description ?? '',
    target: { schema, table },
    sourceSql,
    timeColumn,
    chunk: { grain, timezone, maxConcurrency },
    historyStart: spec.historyStart,
    businessKey,
    publishMode,
    checks: { allowEmpty: spec.checks?.allowEmpty ?? false },
    freshness: { slaMinutes },
    ...(schedule ? { schedule } : {}),
    retention: { keepVersions },
  };
  // The hash covers what decides the published rows, so tuning concurrency,
  // the SLA, the schedule, retention or the description neither fails a run
  // in flight (SpecChangedError) nor turns a failed batch into a new one.
  const dataDefinition = {
    name,
    target: normalized.target,
    sourceSql,
    timeColumn,
    chunk: { grain, timezone },
    historyStart: historyStart.toISOString(),
    businessKey,
    publishMode,
    checks: normalized.checks,
  };
  return { ...normalized, specHash: sha256(canonicalJson(dataDefinition)) };
}

/** Validates a list of specs and rejects duplicate names and shared target tables. */
export function definePipelines(specs: readonly PipelineSpec[]): Pipeline[] {
  const pipelines = specs.map(definePipeline);
  const seen = new Set<string>();
  const targets = new Map<string, string>();
  for (const pipeline of pipelines) {
    if (seen.has(pipeline.name)) throw new ValidationError(`pipeline ${pipeline.name}: name is used twice`);
    seen.add(pipeline.name);
    // The publish guard serializes publishers per pipeline: two pipelines on one table would race.
    const target = `${pipeline.target.schema}.${pipeline.target.table}`;
    const other = targets.get(target);
    if (other) throw new ValidationError(`pipeline ${pipeline.name}: target ${target} is already published by pipeline ${other}`);
    targets.set(target, pipeline.name);
  }
  return pipelines;
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
