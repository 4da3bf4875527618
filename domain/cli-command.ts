/**
 * The command that starts an execution input, for a person to repeat:
 * `atomic-publish run|backfill|check|rollback <pipeline> ...` (cli/main.ts)
 * where the command line has one for it, otherwise the AWS CLI's
 * start-execution with the input itself (a group, a restatement, a
 * migration). The command line prints it in its next steps; an alert can
 * print it too.
 */

/** The program name of the command line (package.json `bin`). */
export const CLI_NAME = 'atomic-publish';

/** A shell word: as it is when it needs no quoting, else in single quotes. */
export function shellWord(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

type Input = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is Input => typeof value === 'object' && value !== null && !Array.isArray(value);
const onlyKeys = (input: Input, keys: readonly string[]) => Object.keys(input).every((k) => keys.includes(k));
const isText = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** The atomic-publish command for an input it has one for, else undefined. */
function atomicPublishCommand(input: Input): string | undefined {
  const { pipeline, from, to, check, rollback } = input;
  if (!isText(pipeline)) return undefined;
  const command = (name: string, flags: [string, unknown][]) =>
    [CLI_NAME, name, shellWord(pipeline), ...flags.filter(([, v]) => v !== undefined).map(([f, v]) => `--${f} ${shellWord(String(v))}`)].join(' ');
  const flagValues = [from, to].every((v) => v === undefined || isText(v));
  if (rollback !== undefined) {
    if (!onlyKeys(input, ['pipeline', 'rollback']) || !isObject(rollback) || !onlyKeys(rollback, ['to']) || !(rollback.to === undefined || isText(rollback.to)))
      return undefined;
    return command('rollback', [['to', rollback.to]]);
  }
  if (!flagValues) return undefined;
  if (check !== undefined) {
    return check === true && onlyKeys(input, ['pipeline', 'from', 'to', 'check']) && from !== undefined && to !== undefined
      ? command('check', [
          ['from', from],
          ['to', to],
        ])
      : undefined;
  }
  if (!onlyKeys(input, ['pipeline', 'from', 'to'])) return undefined;
  // `run` takes no --from: an input with one is a backfill's, which needs both.
  if (from === undefined) return command('run', [['to', to]]);
  return to === undefined
    ? undefined
    : command('backfill', [
        ['from', from],
        ['to', to],
      ]);
}

/**
 * The command that starts `input`: the atomic-publish command that starts
 * the same input, or `aws stepfunctions start-execution` with it on
 * `stateMachine`, a shell word for the state machine's ARN (the ARN through
 * shellWord, or a variable that holds it, `"$ATOMIC_PUBLISH_STATE_MACHINE_ARN"`).
 */
export function commandFor(input: unknown, stateMachine: string): string {
  return (
    (isObject(input) ? atomicPublishCommand(input) : undefined) ??
    `aws stepfunctions start-execution --state-machine-arn ${stateMachine} --input ${shellWord(JSON.stringify(input))}`
  );
}
