// Which test files need a PostgreSQL: those whose imports within test/ reach
// an `inject('pg')` of the one the global setup starts (test/support/warehouse.ts
// and the files that inject it themselves), and those that start one of their
// own for a process they spawn (its data folder in ATOMIC_PUBLISH_PG_DIR).
// vitest.unit.config.ts runs the others without any (`npm run test:unit`).
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

const INJECTS_PG = /\binject\(\s*['"]pg['"]\s*\)|\bATOMIC_PUBLISH_PG_DIR\b/;
const RELATIVE_IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|(?:^|\n)\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/g;

/** Whether `file` (absolute), or a module of `testRoot` it imports, injects the test PostgreSQL or starts one. */
export function needsDatabase(file: string, testRoot: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  if (INJECTS_PG.test(text)) return true;
  for (const match of text.matchAll(RELATIVE_IMPORT)) {
    const target = resolve(dirname(file), match[1] ?? match[2]!);
    if (target.startsWith(testRoot) && needsDatabase(target, testRoot, seen)) return true;
  }
  return false;
}
