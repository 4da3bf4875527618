// One execution of the synthesized state machine in a process of its own, for a
// test that kills it (SIGKILL) inside the publish transaction: before Publish
// submits its swap it prints `swap-submitting` and waits for `go` on stdin; with
// `load-chunk` it prints `load-chunk-starting` before the first LoadChunk instead.
// Why: docs/decisions/tests-and-timing.md ("The fault matrix")
//
//   node --import tsx test/support/killable-run.ts <endpoint> <database> <input JSON> <execution name> <time scale> <outbox file> <lock wait ms> [load-chunk]
import { createInterface } from 'node:readline';
import { localHandlerEnvironment } from '../../local/aws-clients.ts';
import { LocalRunner } from '../../local/runner.ts';
import { statementCounter } from './statement-faults.ts';
import { suiteTargetKind } from './target-kind.ts';

const [endpoint, database, input, name, timeScale, outboxFile, lockWaitMs, hold] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
  string?,
];
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const counter = statementCounter();
const beforeBatch = {
  match: ':publish:swap:',
  async hook() {
    process.stdout.write('swap-submitting\n');
    for (let line = await lines.next(); !line.done && line.value !== 'go'; line = await lines.next());
  },
};
let letGo: Promise<void> | undefined;
const loadsLetGo = () =>
  (letGo ??= (async () => {
    process.stdout.write('load-chunk-starting\n');
    for (let line = await lines.next(); !line.done && line.value !== 'go'; line = await lines.next());
  })());
const runner = await LocalRunner.create({
  env: {
    ...localHandlerEnvironment(endpoint, database, { pollMaxDelayMs: 100 }, suiteTargetKind()),
    POWERTOOLS_LOG_LEVEL: 'WARN',
    PUBLISH_LOCK_WAIT_MS: lockWaitMs,
  },
  timeScale: Number(timeScale),
  outboxFile,
  taskOverrides:
    hold === 'load-chunk'
      ? { LoadChunk: async (taskInput, next) => (await loadsLetGo(), next(taskInput)) }
      : { Publish: (taskInput, next) => counter.within({ beforeBatch }, () => next(taskInput)) },
});
const result = await runner.run(JSON.parse(input), { name });
process.stdout.write(`ended ${result.status}\n`);
runner.close();
process.exit(0);
