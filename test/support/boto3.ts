// boto3, driven through a python subprocess (test/support/boto3_calls.py),
// for tests of what the local endpoints answer the other SDK: botocore's
// serializer and parser, its client-side validation and its paginators.
//
//   describe.skipIf(!hasBoto3())('...', () => { ... await boto3Calls({ 'redshift-data': endpoint }, [{ service: 'redshift-data', operation: 'list_databases', params }]) });
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./boto3_calls.py', import.meta.url));

export interface Boto3Call {
  readonly service: 'redshift-data' | 'stepfunctions';
  /** boto3's method name: `list_tables`. */
  readonly operation: string;
  readonly params?: Record<string, unknown>;
  /** Page through the operation's paginator with this PaginationConfig (`{ PageSize: 2 }`). */
  readonly paginate?: Record<string, unknown>;
}

export type Boto3Result =
  | { readonly response: Record<string, unknown> }
  | { readonly pages: Record<string, unknown>[] }
  | { readonly error: { readonly code: string; readonly message: string } };

let available: boolean | undefined;

/** Whether python3 here imports boto3. */
export function hasBoto3(): boolean {
  if (available === undefined) {
    try {
      execFileSync('python3', ['-c', 'import boto3'], { stdio: 'ignore' });
      available = true;
    } catch {
      available = false;
    }
  }
  return available;
}

/** Runs `calls` in order in one python process; one result per call. */
export function boto3Calls(endpoints: Partial<Record<Boto3Call['service'], string>>, calls: readonly Boto3Call[]): Promise<Boto3Result[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`boto3_calls.py exited ${code}: ${err}`));
      else resolve(JSON.parse(out) as Boto3Result[]);
    });
    child.stdin.end(JSON.stringify({ endpoints, calls }));
  });
}
