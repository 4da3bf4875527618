// A LocalRunner whose warehouse cannot be reached: the Data API endpoint is a
// loopback port nothing listens on. Alerts go to a temporary outbox.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localHandlerEnvironment } from '../../local/aws-clients.ts';
import { LocalRunner, type LocalRunnerOptions } from '../../local/runner.ts';

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function unreachableRunner(
  options: Pick<LocalRunnerOptions, 'taskOverrides' | 'functionTimeoutsSeconds'> = {},
): Promise<{ runner: LocalRunner; close: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'atomic-publish-unreachable-'));
  const runner = await LocalRunner.create({
    env: { ...localHandlerEnvironment(`http://127.0.0.1:${await closedPort()}`, 'dev'), POWERTOOLS_LOG_LEVEL: 'CRITICAL' },
    timeScale: 0.001,
    outboxFile: join(dir, 'alerts.jsonl'),
    ...options,
  });
  return {
    runner,
    close: () => {
      runner.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
