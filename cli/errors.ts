/** How the command line ends: 0 done, 1 the run failed or stopped, 2 refused (nothing started). */
export const ExitCode = { OK: 0, RUN_FAILED: 1, USAGE: 2 } as const;

/**
 * What kind of error ended a command, as `--json` prints it
 * (`{"error": {"kind", "message", "exitCode"}}`): the command line was
 * wrong (usage), Plan's checks refused the input (refused), an endpoint did
 * not answer (unreachable), or anything else (error).
 */
export type ErrorKind = 'usage' | 'refused' | 'unreachable' | 'error';

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
