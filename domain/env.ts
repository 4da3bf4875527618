import { ValidationError } from './errors.ts';

/** Environment variables as a process sees them. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Reads a required environment variable; the error names the missing one. */
export function requireEnv(name: string, env: Environment): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ValidationError(`environment variable ${name} is not set`);
  }
  return value;
}

/** Reads an optional environment variable; empty counts as unset. */
export function optionalEnv(name: string, env: Environment): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}
