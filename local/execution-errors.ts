// Step Functions' refusals of StartExecution, as the local runner and its
// endpoint (local/step-functions-api.ts) throw them.

/** StartExecution refused the input (as Step Functions does for input over 256 KB). */
export class StartExecutionError extends Error {
  override name = 'ValidationException';
}

/** StartExecution refused the name: one that breaks Step Functions' rules for names (domain/run-name.ts). */
export class InvalidNameError extends Error {
  override name = 'InvalidName';
}

/**
 * StartExecution refused the name: an execution of that name has ended,
 * or is running with another input. (While it runs with the same input,
 * StartExecution returns it instead.)
 * https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html
 */
export class ExecutionAlreadyExistsError extends Error {
  override name = 'ExecutionAlreadyExists';
}
