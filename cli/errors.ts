/** How the command line ends: 0 done, 1 the run failed or stopped, 2 refused (nothing started). */
export const ExitCode = { OK: 0, RUN_FAILED: 1, USAGE: 2 } as const;

/** An error the CLI reports as its message alone, exiting with `exitCode`. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = ExitCode.USAGE,
  ) {
    super(message);
  }
}
