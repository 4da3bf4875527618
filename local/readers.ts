import type pg from 'pg';
import { quoteIdent } from '../domain/identifiers.ts';
import { newClient } from './pg-clients.ts';
import type { PgConnection } from './postgres.ts';

export interface ReaderSample {
  readonly at: number;
  readonly table: string;
  readonly count?: number;
  readonly error?: string;
}

/**
 * Dashboard users: connections that count the rows of a table over and
 * over, recording what each read returned and when. They read through
 * PostgreSQL directly, as a BI tool would, not through the Data API.
 */
export class ReaderPool {
  private clients: pg.Client[] = [];
  private samples: ReaderSample[] = [];
  private loops: Promise<void>[] = [];
  private running = false;

  constructor(
    private readonly conn: PgConnection & { database: string },
    private readonly size: number,
    private readonly pauseMs = 15,
  ) {}

  /** Starts polling `schema.table` (replacing any earlier watch). */
  watch(table: string): void {
    const [schema, name] = table.split('.');
    const sql = `SELECT COUNT(*) AS n FROM ${quoteIdent(schema!)}.${quoteIdent(name!)}`;
    this.samples = [];
    this.running = true;
    this.loops = Array.from({ length: this.size }, async (_, i) => {
      const client = (this.clients[i] ??= await this.connect());
      while (this.running) {
        // Stamped when the read starts: a read sees the table as of its start
        // (or later, if it waited for the swap's lock), never earlier.
        const at = Date.now();
        try {
          const result = await client.query(sql);
          this.samples.push({ at, table, count: Number(result.rows[0].n) });
        } catch (error) {
          this.samples.push({ at, table, error: (error as Error).message });
        }
        await new Promise((resolve) => setTimeout(resolve, this.pauseMs));
      }
    });
  }

  private async connect(): Promise<pg.Client> {
    // A lost connection fails the next read, which is recorded as a sample.
    const client = newClient(this.conn);
    await client.connect();
    return client;
  }

  /** Lets the readers take a few more reads after the run ended. */
  async settle(ms = 400): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** Stops polling and returns every read, oldest first. */
  async stop(): Promise<ReaderSample[]> {
    this.running = false;
    await Promise.allSettled(this.loops);
    return [...this.samples].sort((a, b) => a.at - b.at);
  }

  async close(): Promise<void> {
    this.running = false;
    await Promise.allSettled(this.loops);
    await Promise.allSettled(this.clients.map((c) => c.end()));
    this.clients = [];
  }
}
