/**
 * The SQL of LoadChunk: one transaction per chunk (clear, if the chunk may
 * hold rows of an earlier load; insert; record), and the name it runs under.
 */
import { type BatchRef, ChunkStatus } from '../../batch.ts';
import { extractColumn } from '../../extract-column.ts';
import { qualifiedName, quoteIdent, sqlLiteral } from '../../identifiers.ts';
import type { Chunk } from '../../plan/chunk.ts';
import { inlineParameters } from '../../redshift-sql/parameters.ts';
import type { Pipeline } from '../../spec.ts';
import { MANIFEST as M, type Statement, timestampParam } from '../../sql/statement.ts';

/** A chunk as the Map hands it to LoadChunk: Plan adds what the manifest says of its earlier loads. */
export interface ChunkToLoad extends Chunk {
  /**
   * The chunk's generation (`chunks.attempt`) when Plan handed it out: the
   * load records it, and names its statement with it. Absent in an item of
   * a Plan from before version 6 of the manifest: 0.
   */
  readonly generation?: number;
  /**
   * Its interval may hold rows of an earlier load (a chunk found stale, or
   * left LOADING or CANCELLED before version 6): the load clears it first.
   */
  readonly clear?: boolean;
  /** The id of this generation's load an ended execution left running: LoadChunk waits for it instead of submitting. */
  readonly running?: string;
}

/**
 * The name every load of this chunk's generation runs under: a retry or a
 * re-run finds a load still running by it (ListStatements matches names by
 * prefix; the trailing `:load` keeps chunk 1 from matching chunk 10).
 */
export function loadStatementName(pipeline: Pipeline, batch: BatchRef, chunk: ChunkToLoad): string {
  return `${loadStatementPrefix(pipeline.name, batch.batchId)}${chunk.index}:g${chunk.generation ?? 0}:load`;
}

/** What the names of every chunk load of the batch begin with. */
export function loadStatementPrefix(pipeline: string, batchId: string): string {
  return `atomic-publish:${pipeline}:load-chunk:${batchId}:`;
}

/** The chunk index a load statement's name carries; undefined for another name. */
export function chunkOfLoadStatement(prefix: string, name: string): number | undefined {
  const match = name.startsWith(prefix) ? /^(\d+):g\d+:load$/.exec(name.slice(prefix.length)) : null;
  return match ? Number(match[1]) : undefined;
}

/**
 * The source rows of `[start, end)` into staging. The outer filter keeps
 * the half-open interval even if the source query is looser.
 */
export function insertIntervalSql(pipeline: Pipeline, batch: BatchRef): string {
  const t = quoteIdent(extractColumn(pipeline));
  const columns = batch.columns.map(quoteIdent).join(', ');
  return `INSERT INTO ${qualifiedName(pipeline.target.schema, batch.stagingTable)} (${columns})
          SELECT ${columns} FROM (${pipeline.sourceSql}
) AS src
           WHERE src.${t} >= :start AND src.${t} < :end`;
}

/** The statements of one chunk's load and their parameters (BatchExecuteStatement takes one set for all of them). */
export interface ChunkLoad {
  readonly sqls: string[];
  readonly parameters: Readonly<Record<string, string>>;
  /** Whether the source is read once (load_chunk records the INSERT's own row count) or twice (a count beside the INSERT). */
  readonly sourceReads: 1 | 2;
}

/** The largest INSERT load_chunk takes (its parameter's varchar length). */
const MAX_INLINED_INSERT = 65_535;

/**
 * One chunk's load as one BatchExecuteStatement transaction, values as one set of
 * parameters: the DELETE of its interval only when an earlier load may have left
 * rows there (before the INSERT: https://docs.aws.amazon.com/redshift/latest/dg/c_write_readwrite.html),
 * then the INSERT and the `chunk_loads` record. The INSERT runs inside the
 * manifest's load_chunk, its interval inlined (no parameters reach an EXECUTE), and
 * the record counts what it inserted: the source is read once. A source that cannot
 * be inlined safely (domain/redshift-sql/parameters.ts inlineParameters) is loaded
 * as before, the record counting the interval's source rows in the same snapshot.
 * Nothing here depends on the time it is built, so every attempt sends the same
 * request (its ClientToken dedupes it). It reads no table another load writes and
 * takes no lock, so loads run side by side. Why: docs/decisions/loading.md
 */
export function loadChunkSqls(pipeline: Pipeline, batch: BatchRef, chunk: ChunkToLoad): ChunkLoad {
  const t = quoteIdent(extractColumn(pipeline));
  const interval = { start: timestampParam(chunk.start), end: timestampParam(chunk.end) };
  const clear = chunk.clear ? [`DELETE FROM ${qualifiedName(pipeline.target.schema, batch.stagingTable)} WHERE ${t} >= :start AND ${t} < :end`] : [];
  const record = {
    batch_id: batch.batchId,
    chunk_index: String(chunk.index),
    generation: String(chunk.generation ?? 0),
  };
  const insert = inlineParameters(insertIntervalSql(pipeline, batch), { start: sqlLiteral(interval.start), end: sqlLiteral(interval.end) });
  if (insert !== undefined && Buffer.byteLength(insert) <= MAX_INLINED_INSERT) {
    return {
      sqls: [...clear, `CALL ${M}.load_chunk(:batch_id, CAST(:chunk_index AS int), CAST(:generation AS int), :insert)`],
      parameters: { ...(chunk.clear ? interval : {}), ...record, insert },
      sourceReads: 1,
    };
  }
  const count = `INSERT INTO ${M}.chunk_loads (batch_id, chunk_index, generation, rows_written, loaded_at)
          SELECT :batch_id, CAST(:chunk_index AS int), CAST(:generation AS int), COUNT(*), GETDATE()
            FROM (${pipeline.sourceSql}
) AS src
           WHERE src.${t} >= :start AND src.${t} < :end`;
  return { sqls: [...clear, insertIntervalSql(pipeline, batch), count], parameters: { ...interval, ...record }, sourceReads: 2 };
}

/**
 * Whether a load of the chunk's generation committed: asked only when a
 * load under the chunk's statement name ran before (one that finished may
 * belong to a manifest since dropped, whose generation numbers repeat).
 */
export function chunkLoaded(batchId: string, chunk: ChunkToLoad): Statement {
  return {
    sql: `SELECT COUNT(*) AS loaded FROM ${M}.chunk_state
           WHERE batch_id = :batch_id AND chunk_index = CAST(:chunk_index AS int) AND generation = CAST(:generation AS int)
             AND status = ${sqlLiteral(ChunkStatus.DONE)}`,
    parameters: { batch_id: batchId, chunk_index: String(chunk.index), generation: String(chunk.generation ?? 0) },
  };
}
