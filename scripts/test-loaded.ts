/**
 * `npm run test:loaded [-- --runs N --busy N]`: the whole suite `--runs` times in a
 * row (default 5) while `--busy` loops (default one per core) occupy the machine, as
 * on a busy CI machine; `--busy 0` gives the suite's length on an idle one. Prints
 * each run's outcome and duration, keeps each run's log, records the range in
 * docs/results.md (scripts/suite-length.ts), and exits non-zero if any run failed.
 * Why: docs/decisions/tests-and-timing.md
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT, STATE_DIR } from '../lib/project.ts';
import { RESULTS_FILE, readResults, thisMachine } from '../local/results-file.ts';
import { renderTable } from '../local/table.ts';
import { recordSuiteRuns } from './suite-length.ts';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number, got ${process.argv[i + 1]}`);
  return value;
}

const runs = option('runs', 5);
const busy = option('busy', availableParallelism());
const logDir = join(STATE_DIR, 'test-loaded');
mkdirSync(logDir, { recursive: true });

/** One process per core spinning forever: the load. */
const loops: ChildProcess[] = Array.from({ length: busy }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
const stopLoops = () => {
  for (const loop of loops) loop.kill('SIGKILL');
};
process.on('exit', stopLoops);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopLoops();
    process.exit(130);
  });
}

interface Outcome {
  readonly run: number;
  readonly exitCode: number;
  readonly seconds: number;
  readonly summary: string;
  readonly log: string;
}

/** `npm test`, exactly as the README and CI run it; output to a log file, the summary line kept. */
function runSuite(run: number): Promise<Outcome> {
  const log = join(logDir, `run-${run}.log`);
  const file = createWriteStream(log);
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['test'], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let summary = '';
    child.stdout.on('data', (chunk: Buffer) => {
      file.write(chunk);
      const match = /(\d+) passed, (\d+) failed, (\d+) skipped/.exec(chunk.toString());
      if (match) summary = match[0];
    });
    child.stderr.on('data', (chunk: Buffer) => file.write(chunk));
    child.on('close', (code, signal) => {
      file.end();
      resolve({ run, exitCode: code ?? (signal ? 128 : 1), seconds: (Date.now() - started) / 1000, summary: summary || '(no summary line)', log });
    });
  });
}

process.stderr.write(`test:loaded: ${runs} run(s) of npm test with ${busy} busy loop(s) on ${availableParallelism()} core(s); logs in ${logDir}\n`);
const outcomes: Outcome[] = [];
for (let run = 1; run <= runs; run++) {
  process.stderr.write(`  run ${run}/${runs} ...`);
  const outcome = await runSuite(run);
  outcomes.push(outcome);
  process.stderr.write(` ${outcome.exitCode === 0 ? 'green' : `RED (exit ${outcome.exitCode})`} in ${outcome.seconds.toFixed(0)} s: ${outcome.summary}\n`);
}
stopLoops();

const failed = outcomes.filter((o) => o.exitCode !== 0);
const seconds = outcomes.map((o) => o.seconds);
process.stdout.write(
  `${renderTable(
    ['run', 'outcome', 'exit', 'seconds', 'tests', 'log'],
    outcomes.map((o) => [o.run, o.exitCode === 0 ? 'green' : 'RED', o.exitCode, o.seconds.toFixed(0), o.summary, o.log]),
    ['r', 'l', 'r', 'r', 'l', 'l'],
  )}\n`,
);
process.stdout.write(
  `${outcomes.length - failed.length} of ${outcomes.length} runs green with ${busy} busy loop(s); ${Math.min(...seconds).toFixed(0)} to ${Math.max(...seconds).toFixed(0)} s per run\n`,
);
// The measured range goes into docs/results.md, which the README links beside the test command (scripts/suite-length.ts).
writeFileSync(
  RESULTS_FILE,
  recordSuiteRuns(readResults(), {
    busy,
    seconds,
    green: outcomes.length - failed.length,
    day: new Date().toISOString().slice(0, 10),
    machine: thisMachine(),
  }),
);
process.stdout.write(`recorded in ${RESULTS_FILE}\n`);
process.exit(failed.length === 0 ? 0 : 1);
