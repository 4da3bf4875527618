import { ValidationError } from '../../domain/errors.ts';

/** Reads a required environment variable; the error names the missing one. */
export function requireEnv(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ValidationError(`environment variable ${name} is not set`);
  }
  return value;
}

export function optionalEnv(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}
