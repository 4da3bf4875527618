/**
 * The handlers' Step Functions client: StartRun starts executions with it,
 * Plan asks it whether the execution holding a pipeline's lease still runs.
 * Locally STEP_FUNCTIONS_ENDPOINT points it at the local endpoint
 * (local/step-functions-api.ts); on AWS it is unset.
 */
import { SFNClient } from '@aws-sdk/client-sfn';
import { optionalEnv } from '../../domain/env.ts';
import { tracer } from './powertools.ts';

export const StepFunctionsEnv = {
  /** Step Functions endpoint; set only locally. */
  STEP_FUNCTIONS_ENDPOINT: 'STEP_FUNCTIONS_ENDPOINT',
} as const;

let cached: { endpoint: string | undefined; client: SFNClient } | undefined;

export function stepFunctions(env: NodeJS.ProcessEnv = process.env): SFNClient {
  const endpoint = optionalEnv(StepFunctionsEnv.STEP_FUNCTIONS_ENDPOINT, env);
  if (cached === undefined || cached.endpoint !== endpoint)
    cached = { endpoint, client: tracer.captureAWSv3Client(new SFNClient({ ...(endpoint ? { endpoint } : {}), maxAttempts: 5 })) };
  return cached.client;
}
