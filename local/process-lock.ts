// Cross-process coordination on one machine: is a pid alive, and a lock file
// that a crashed owner does not keep forever.
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  // A zombie still answers kill(0); containers without an init may keep them.
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return true;
  }
}

/** A lock file holding the owner's pid; a lock whose owner died is taken over. */
export async function withLock<T>(lockFile: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fs.writeFile(lockFile, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number(await fs.readFile(lockFile, 'utf8').catch(() => ''));
      const age = await fs.stat(lockFile).then(
        (s) => Date.now() - s.mtimeMs,
        () => 0,
      );
      if ((owner && !isAlive(owner)) || (!owner && age > 5_000)) {
        await fs.rm(lockFile, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`atomic-publish: ${lockFile} is held by pid ${owner}`);
      await sleep(100);
    }
  }
  try {
    return await fn();
  } finally {
    await fs.rm(lockFile, { force: true });
  }
}
