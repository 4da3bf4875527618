import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { quoteIdent } from '../domain/identifiers.ts';
import { newClient } from './pg-clients.ts';
import type { PgConnection } from './postgres.ts';

export interface ReaderSample {
  /** Which reader took it (0-based). */
  readonly reader: number;
  /** When the read started: a read sees the table as of its start (or later, if it waited for the swap's lock), never earlier. */
  readonly at: number;
  readonly table: string;
  /** What the caller was doing while the read ran (see `phase`); `a -> b` when the phase changed during the read. */
  readonly phase: string;
  readonly count?: number;
  /** Sum of the key expression over the table, when the pool has one: tells apart tables of equal size. */
  readonly keySum?: string;
  readonly error?: string;
}

export interface ReaderPoolOptions {
  /** A SQL expression over the table's columns whose sum fingerprints the rows (trusted text, not input). @default - counts only */
  readonly keyExpression?: string;
  /** Pause between a reader's reads, leaving the machine to the run being watched. @default 15 */
  readonly pauseMs?: number;
}

/**
 * Dashboard users: connections that read a table over and over, recording
 * what each read returned. They read through PostgreSQL directly, as a BI
 * tool would, not through the Data API. `readAll()` is the barrier a caller
 * uses to know every reader has read at a given point, whatever the
 * machine's speed.
 */
export class ReaderPool {
  private clients: pg.Client[] = [];
  private samples: ReaderSample[] = [];
  private loops: Promise<void>[] = [];
  private running = false;
  private currentPhase = 'start';
  private readonly started: number[];
  private readonly finished: number[];
  private waiters: { after: number[]; resolve: () => void }[] = [];

  constructor(
    private readonly conn: PgConnection & { database: string },
    private readonly size: number,
    private readonly options: ReaderPoolOptions = {},
  ) {
    this.started = Array.from({ length: size }, () => 0);
    this.finished = Array.from({ length: size }, () => 0);
  }

  /** Starts reading `schema.table` in a loop (replacing any earlier watch), the reads labelled `phase` until told otherwise. */
  watch(table: string, phase = 'start'): void {
    this.currentPhase = phase;
    const [schema, name] = table.split('.');
    const key = this.options.keyExpression ? `, COALESCE(SUM(${this.options.keyExpression}), 0) AS k` : '';
    const sql = `SELECT COUNT(*) AS n${key} FROM ${quoteIdent(schema!)}.${quoteIdent(name!)}`;
    this.samples = [];
    this.running = true;
    this.loops = Array.from({ length: this.size }, async (_, reader) => {
      const client = (this.clients[reader] ??= await this.connect());
      while (this.running) {
        const at = Date.now();
        const phase = this.currentPhase;
        this.started[reader]! += 1;
        const during = () => (this.currentPhase === phase ? phase : `${phase} -> ${this.currentPhase}`);
        try {
          const { rows } = await client.query(sql);
          const row = rows[0] as { n: string; k?: string };
          this.samples.push({ reader, at, table, phase: during(), count: Number(row.n), ...(row.k === undefined ? {} : { keySum: String(row.k) }) });
        } catch (error) {
          this.samples.push({ reader, at, table, phase: during(), error: (error as Error).message });
        }
        this.finished[reader]! += 1;
        this.wake();
        await sleep(this.options.pauseMs ?? 15);
      }
    });
  }

  /** Labels the reads that run from now on. */
  phase(label: string): void {
    this.currentPhase = label;
  }

  /** Resolves once every reader has finished a read that started after this call. */
  readAll(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push({ after: [...this.started], resolve });
    });
  }

  private wake(): void {
    const ready = this.waiters.filter((w) => w.after.every((n, i) => this.finished[i]! > n));
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => !ready.includes(w));
    for (const waiter of ready) waiter.resolve();
  }

  private async connect(): Promise<pg.Client> {
    // A lost connection fails the next read, which is recorded as a sample.
    const client = newClient(this.conn);
    await client.connect();
    return client;
  }

  /** Stops reading and returns every read, oldest first. */
  async stop(): Promise<ReaderSample[]> {
    this.running = false;
    await Promise.allSettled(this.loops);
    return [...this.samples].sort((a, b) => a.at - b.at);
  }

  /** Stops reading, closes the connections and returns every read, oldest first. */
  async close(): Promise<ReaderSample[]> {
    const samples = await this.stop();
    await Promise.allSettled(this.clients.map((c) => c.end()));
    this.clients = [];
    return samples;
  }
}
