/**
 * How the command line ends: 0 done, 1 the run failed or stopped, 2 refused
 * (nothing started), 130 interrupted by Ctrl-C (an execution it followed
 * goes on; cli/interrupt.ts).
 */
export const ExitCode = { OK: 0, RUN_FAILED: 1, USAGE: 2, INTERRUPTED: 130 } as const;

/**
 * What kind of error ended a command, as `--json` prints it
 * (`{"error": {"kind", "message", "exitCode"}}`): the command line was
 * wrong (usage), Plan's checks refused the input (refused), an endpoint did
 * not answer (unreachable), Ctrl-C before anything started (interrupted),
 * or anything else (error).
 */
export type ErrorKind = 'usage' | 'refused' | 'unreachable' | 'interrupted' | 'error';

/** An error the CLI reports as its message alone, exiting with `exitCode`. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = ExitCode.USAGE,
    readonly kind: ErrorKind = 'usage',
  ) {
    super(message);
  }
}
