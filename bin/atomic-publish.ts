// The command line (cli/main.ts). From a clone: `npm run cli -- <command>`;
// installed (npm link): `atomic-publish <command>` (bin/atomic-publish.js).

import { ExitCode } from '../cli/errors.ts';
import { RESTORE_TERMINAL } from '../cli/interrupt.ts';
import { main } from '../cli/main.ts';
import { silenceSdkNodeNotice } from '../local/aws-clients.ts';

silenceSdkNodeNotice();
const stop = new AbortController();
// Ctrl-C: the command ends as cli/interrupt.ts says (`local up` stops its engine; a command following
// a run stops following, the run goes on). A second one ends the process at once.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (!stop.signal.aborted) return stop.abort();
    if (process.stderr.isTTY) process.stderr.write(RESTORE_TERMINAL);
    process.exit(ExitCode.INTERRUPTED);
  });
}
const code = await main(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(`${text}\n`),
  stderr: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
  tty: process.stderr.isTTY === true,
  ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
  signal: stop.signal,
});
process.exit(code);
