/**
 * List prices (US East, N. Virginia; no free tier, no Savings Plans) the bench and
 * `atomic-publish plan` turn counts into dollars with: Step Functions Standard per
 * state transition, retries counted; Lambda per request and per GB-second at the
 * memory configured, billed per 1 ms. The Data API has no price of its own; the
 * warehouse time its statements take is not in these figures.
 * https://aws.amazon.com/step-functions/pricing/ https://aws.amazon.com/lambda/pricing/
 */
import { stateMachineDefinition } from '../lib/definition.ts';
import type { Template } from '../local/template.ts';

export const PRICES = {
  stepFunctionsPerTransition: 0.025 / 1000,
  lambdaPerRequest: 0.2 / 1_000_000,
  lambdaPerGbSecond: { arm64: 0.0000133334, x86_64: 0.0000166667 },
} as const;

export type Architecture = keyof typeof PRICES.lambdaPerGbSecond;

/** Each Lambda Task state's function as the template builds it (lib/step-handler.ts): memory and architecture. */
export function lambdaFunctions(template: Template): Record<string, { memoryMb: number; architecture: Architecture }> {
  const { taskFunctions } = stateMachineDefinition(template);
  return Object.fromEntries(
    Object.entries(taskFunctions).map(([state, logicalId]) => {
      const props = (template.Resources[logicalId]?.Properties ?? {}) as { MemorySize?: number; Architectures?: string[] };
      // Lambda's own defaults when the template sets none: 128 MB, x86_64.
      const architecture = props.Architectures?.[0] === 'arm64' ? 'arm64' : 'x86_64';
      return [state, { memoryMb: Number(props.MemorySize ?? 128), architecture }];
    }),
  );
}

export interface CostPerChunk {
  readonly transitions: number;
  readonly lambdaRequests: number;
  readonly lambdaGbSeconds: Readonly<Record<Architecture, number>>;
}

export interface Cost {
  readonly stepFunctions: number;
  readonly lambdaRequests: number;
  readonly lambdaDuration: number;
  readonly total: number;
}

/** Dollars per 1,000 chunks for these per-chunk counts. */
export function costPer1000Chunks(perChunk: CostPerChunk): Cost {
  const stepFunctions = 1000 * perChunk.transitions * PRICES.stepFunctionsPerTransition;
  const lambdaRequests = 1000 * perChunk.lambdaRequests * PRICES.lambdaPerRequest;
  const lambdaDuration =
    1000 * (perChunk.lambdaGbSeconds.arm64 * PRICES.lambdaPerGbSecond.arm64 + perChunk.lambdaGbSeconds.x86_64 * PRICES.lambdaPerGbSecond.x86_64);
  return { stepFunctions, lambdaRequests, lambdaDuration, total: stepFunctions + lambdaRequests + lambdaDuration };
}

/**
 * What a run costs per chunk, as `npm run bench` measured it on the sample
 * (docs/develop.md, "Bench": the whole run's figures over its chunks, so the
 * fixed states of a run are spread over them): the CLI's `plan` estimate.
 * Lambda GB-seconds follow from the measured duration ($0.0004 per 1,000
 * chunks on arm64).
 */
export const MEASURED_PER_CHUNK: CostPerChunk & { readonly dataApiRequests: number } = {
  transitions: 1.17,
  lambdaRequests: 1.08,
  lambdaGbSeconds: { arm64: 0.03, x86_64: 0 },
  dataApiRequests: 4.6,
};
