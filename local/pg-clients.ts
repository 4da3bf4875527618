// PostgreSQL clients and pools that survive the server going away.
//
// node-postgres emits 'error' on a client whose connection is lost (a server
// restart, pg_terminate_backend), even when the query it was running already
// failed with the database's message; an 'error' event nobody listens to
// ends the Node process. A pg.Pool listens only on its idle clients, and its
// end() resolves before the sockets of the clients it ends have closed. The
// helpers here close both gaps.
import pg from 'pg';

export type ConnectionLost = (error: Error) => void;

/** A client (not yet connected) whose lost connection is reported to `onLost` instead of thrown. */
export function newClient(config: pg.ClientConfig, onLost: ConnectionLost = () => undefined): pg.Client {
  const client = new pg.Client(config);
  client.on('error', onLost);
  return client;
}

/** Connects a client, runs `fn` with it, and ends it (its socket closed) whatever happened. */
export async function withClient<T>(config: pg.ClientConfig, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = newClient(config);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface PoolEvents {
  /** An idle connection was lost; the pool has already dropped it. */
  onIdleLost?: (error: Error) => void;
  /** A checked-out connection was lost; its running query fails too, and the client must be released with an error. */
  onBusyLost?: (client: pg.PoolClient, error: Error) => void;
}

const openClients = new WeakMap<pg.Pool, Set<pg.Client>>();

/** A pool whose every connection, idle or checked out, has an 'error' listener. Close it with endPool(). */
export function newPool(config: pg.PoolConfig, events: PoolEvents = {}): pg.Pool {
  const pool = new pg.Pool(config);
  const open = new Set<pg.Client>();
  const busy = new Set<pg.Client>();
  openClients.set(pool, open);
  pool.on('error', (error) => events.onIdleLost?.(error));
  pool.on('acquire', (client) => busy.add(client));
  pool.on('release', (_error: Error | undefined, client: pg.PoolClient) => busy.delete(client));
  pool.on('connect', (client) => {
    open.add(client);
    client.once('end', () => open.delete(client));
    // The pool's own listener covers an idle client; this one a checked-out client.
    client.on('error', (error) => {
      if (busy.has(client)) events.onBusyLost?.(client as pg.PoolClient, error);
    });
  });
  return pool;
}

/** Ends the pool and waits until every one of its connections has closed. */
export async function endPool(pool: pg.Pool): Promise<void> {
  const open = [...(openClients.get(pool) ?? [])];
  const closed = open.map((client) => new Promise((resolve) => client.once('end', resolve)));
  await pool.end();
  await Promise.all(closed);
}
