// One execution of the synthesized state machine in a process of its own,
// for a test that kills that process (SIGKILL) inside the publish
// transaction. Before Publish submits its swap batch it prints
// `swap-submitting` and waits for a line `go` on stdin, so the test can
// set a lock gate first and then know the swap is inside its transaction.
// With `load-chunk` as the last argument it holds the LoadChunks instead:
// before the first one runs it prints `load-chunk-starting` and waits for
// `go`, so the test can gate staging and kill the process while the chunk
// loads run.
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
