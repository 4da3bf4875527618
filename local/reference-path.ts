/**
 * Amazon States Language reference paths, the form InputPath, ItemsPath,
 * MaxConcurrencyPath and MaxItemsPerBatchPath take: `$`, then `.name`,
 * `['name']` or `[index]` steps, no wildcards or filters.
 * https://states-language.net/spec.html#ref-paths
 */
const STEP = /^(?:\.([A-Za-z_][\w-]*)|\['([^']*)'\]|\[(\d+)\])/;

/** The value `path` names in `input`, undefined where a step finds nothing; throws for a text that is not a reference path. */
export function referencePath(input: unknown, path: string): unknown {
  if (!path.startsWith('$')) throw new Error(`reference path ${path} has no local equivalent (reference paths start at $)`);
  let rest = path.slice(1);
  let value: unknown = input;
  while (rest.length > 0) {
    const step = STEP.exec(rest);
    if (!step) throw new Error(`reference path ${path} has no local equivalent (names and indexes only)`);
    const key = step[1] ?? step[2] ?? Number(step[3]);
    value = value !== null && typeof value === 'object' ? (value as Record<string | number, unknown>)[key] : undefined;
    rest = rest.slice(step[0].length);
  }
  return value;
}
