/**
 * Where the command line finds the deployed (or local) parts: the state
 * machine, the Step Functions, Data API and CloudWatch endpoints and the
 * warehouse target, from flags first and then the environment. The
 * warehouse target is read from the variables the handlers read
 * (domain/warehouse-target.ts), so one set of variables serves both.
 */
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { SFNClient } from '@aws-sdk/client-sfn';
import { commandFor, shellWord } from '../domain/cli-command.ts';
import { dataApiSettingsFromEnv, WarehouseEnv, warehouseTargetFromEnv } from '../domain/warehouse-target.ts';
import { DEFAULT_POLL, Warehouse } from '../functions/commons/warehouse.ts';
import { CliError, ExitCode } from './errors.ts';
import { inCliTerms } from './terms.ts';

/** Environment variables the CLI reads besides the warehouse's. */
export const CliEnv = {
  STATE_MACHINE_ARN: 'ATOMIC_PUBLISH_STATE_MACHINE_ARN',
  SFN_ENDPOINT: 'ATOMIC_PUBLISH_SFN_ENDPOINT',
  CLOUDWATCH_ENDPOINT: 'ATOMIC_PUBLISH_CLOUDWATCH_ENDPOINT',
} as const;

export interface GlobalOptions {
  readonly json?: boolean;
  readonly stateMachineArn?: string;
  readonly sfnEndpoint?: string;
  readonly dataApiEndpoint?: string;
  readonly cloudwatchEndpoint?: string;
  readonly region?: string;
}

export interface Context {
  readonly json: boolean;
  stateMachineArn(): string;
  sfn(): SFNClient;
  warehouse(): Warehouse;
  cloudWatch(): CloudWatchClient;
  /** Where each part is reached, for error messages. */
  readonly where: { readonly sfn: string; readonly dataApi: string };
  /** A message of the workflow's (a refusal, an alert's next step) in the command line's terms: flags and commands (cli/terms.ts). */
  terms(message: string): string;
  /** The command that starts an execution input (domain/cli-command.ts commandFor), to repeat. */
  commandFor(input: unknown): string;
}

export function contextFrom(options: GlobalOptions, env: NodeJS.ProcessEnv): Context {
  const region = options.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  const common = { ...(region ? { region } : {}), maxAttempts: 2 };
  const sfnEndpoint = options.sfnEndpoint ?? env[CliEnv.SFN_ENDPOINT];
  const dataApiEndpoint = options.dataApiEndpoint ?? env[WarehouseEnv.DATA_API_ENDPOINT];
  const cloudwatchEndpoint = options.cloudwatchEndpoint ?? env[CliEnv.CLOUDWATCH_ENDPOINT];
  let sfn: SFNClient | undefined;
  let warehouse: Warehouse | undefined;
  let cloudWatch: CloudWatchClient | undefined;
  const configuredArn = options.stateMachineArn ?? env[CliEnv.STATE_MACHINE_ARN];
  // In a printed command: the ARN, or the variable that should hold it.
  const stateMachine = configuredArn ? shellWord(configuredArn) : `"$${CliEnv.STATE_MACHINE_ARN}"`;
  return {
    json: options.json === true,
    where: { sfn: sfnEndpoint ?? 'Step Functions (AWS)', dataApi: dataApiEndpoint ?? 'the Redshift Data API (AWS)' },
    terms: (message) => inCliTerms(message, stateMachine),
    commandFor: (input) => commandFor(input, stateMachine),
    stateMachineArn: () => {
      const arn = configuredArn;
      if (!arn)
        throw new CliError(
          `no state machine: pass --state-machine-arn or set ${CliEnv.STATE_MACHINE_ARN} (the stack's StateMachineArn output; \`local up\` prints the local one)`,
          ExitCode.USAGE,
        );
      return arn;
    },
    sfn: () => (sfn ??= new SFNClient({ ...common, ...(sfnEndpoint ? { endpoint: sfnEndpoint } : {}) })),
    warehouse: () => {
      if (!warehouse) {
        let target;
        try {
          target = warehouseTargetFromEnv(env);
        } catch (error) {
          throw new CliError(`no warehouse target: ${(error as Error).message} (the stack's warehouse; \`local up\` prints the local one)`, ExitCode.USAGE);
        }
        const settings = dataApiSettingsFromEnv(env);
        const client = new RedshiftDataClient({ ...common, ...(dataApiEndpoint ? { endpoint: dataApiEndpoint } : {}) });
        warehouse = new Warehouse(client, target, {
          ...DEFAULT_POLL,
          ...(settings.pollMaxDelayMs ? { maxDelayMs: settings.pollMaxDelayMs } : {}),
          timeoutMs: 60_000,
        });
      }
      return warehouse;
    },
    cloudWatch: () => (cloudWatch ??= new CloudWatchClient({ ...common, ...(cloudwatchEndpoint ? { endpoint: cloudwatchEndpoint } : {}) })),
  };
}

/** Whether an SDK error is the network's (nothing answered), not the service's. */
export function isUnreachable(error: unknown): boolean {
  const e = error as { code?: string; name?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown } | undefined;
  const codes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ECONNRESET', 'EHOSTUNREACH', 'ETIMEDOUT', 'EAI_AGAIN']);
  if (e?.code && codes.has(e.code)) return true;
  if (e?.name === 'TimeoutError') return true;
  if (e?.cause !== undefined && e.cause !== error && isUnreachable(e.cause)) return true;
  const errors = (error as { errors?: { code?: string }[] })?.errors;
  return Array.isArray(errors) && errors.some((x) => x.code !== undefined && codes.has(x.code));
}
