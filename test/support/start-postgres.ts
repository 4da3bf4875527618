// Child process for test/local/postgres.test.ts: starts the local PostgreSQL
// on the data directory given as argument, prints its connection as one JSON
// line, and stays alive until killed.
import { startLocalPostgres } from '../../local/postgres.ts';

const server = await startLocalPostgres({ dataDir: process.argv[2], log: () => undefined });
process.stdout.write(`${JSON.stringify({ port: server.port, dataDir: server.dataDir })}\n`);
setInterval(() => undefined, 60_000);
