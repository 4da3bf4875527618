// The command line (cli/main.ts). From a clone: `npm run cli -- <command>`;
// installed (npm link): `atomic-publish <command>` (bin/atomic-publish.js).
import { silenceSdkNodeNotice } from '../local/aws-clients.ts';
import { main } from '../cli/main.ts';

silenceSdkNodeNotice();
const stop = new AbortController();
// Ctrl-C ends `local up`; a command that follows a run stops following (the run goes on).
const serving = process.argv.slice(2).includes('local');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stop.abort();
    if (!serving) process.exit(130);
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
