/** The value after `--name` on the command line, or `fallback` when the flag is absent; a flag without a value is refused. */
export function textOption(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const value = process.argv[i + 1];
  if (!value || value.startsWith('--')) throw new Error(`--${name} needs a value`);
  return value;
}
