// Waits for something a test observes (a log line, a statement's status, a
// row) to become true. It orders a test by what happened, not by how long
// it took: the deadline only turns a hang into a readable failure and is
// no claim about speed.
import { setTimeout as sleep } from 'node:timers/promises';
import { SAFETY_NET_MS as DEADLINE_MS } from './safety-net.ts';

export async function until(condition: () => boolean | Promise<boolean>, what = 'the awaited condition'): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  for (let pause = 1; !(await condition()); pause = Math.min(pause * 2, 50)) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${DEADLINE_MS / 1000} s`);
    await sleep(pause);
  }
}
