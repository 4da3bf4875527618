// A small evaluator of the identity policies in a synthesized template: is
// this request (action, resource, request context) allowed for this role?
// It knows what the stack's policies use (Allow and Deny, Action and Resource
// with * and ? wildcards, StringEquals and StringLike conditions, ${aws:...}
// policy variables); anything else makes a statement count as not allowing,
// so the answer errs towards "denied" and a test fails instead of passing.

/** Values for the pseudo parameters the template refers to. */
export const PSEUDO = {
  'AWS::Partition': 'aws',
  'AWS::Region': 'eu-central-1',
  'AWS::AccountId': '111122223333',
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackId': 'arn:aws:cloudformation:eu-central-1:111122223333:stack/AtomicPublish/6e3a3b10-0000-4000-8000-000000000000',
} as const;

type Template = { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };

/**
 * Resolves the intrinsics the stack's policies use; a reference to a
 * resource becomes `<LogicalId>`, or what `refs` says it returns (a state
 * machine's Ref is its ARN: stateMachineRefs).
 */
export function resolveValue(value: unknown, refs: Readonly<Record<string, string>> = {}): unknown {
  const resolveValueOf = (v: unknown) => resolveValue(v, refs);
  if (Array.isArray(value)) return value.map(resolveValueOf);
  if (typeof value !== 'object' || value === null) return value;
  const object = value as Record<string, unknown>;
  const [key] = Object.keys(object);
  if (Object.keys(object).length === 1 && key !== undefined) {
    const arg = object[key];
    if (key === 'Ref') return (PSEUDO as Record<string, string>)[arg as string] ?? refs[arg as string] ?? `<${arg as string}>`;
    if (key === 'Fn::GetAtt') return `<${(arg as string[]).join('.')}>`;
    if (key === 'Fn::Join') {
      const [separator, parts] = arg as [string, unknown[]];
      return (resolveValueOf(parts) as unknown[]).map(String).join(separator);
    }
    if (key === 'Fn::Split') {
      const [separator, source] = arg as [string, unknown];
      return String(resolveValueOf(source)).split(separator);
    }
    if (key === 'Fn::Select') {
      const [index, list] = arg as [number, unknown];
      return (resolveValueOf(list) as unknown[])[index];
    }
    if (key.startsWith('Fn::')) throw new Error(`iam-policy: cannot resolve ${key}`);
  }
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, resolveValueOf(v)]));
}

export interface Statement {
  readonly Effect: 'Allow' | 'Deny';
  readonly Action?: string | string[];
  readonly Resource?: string | string[];
  readonly Condition?: Record<string, Record<string, string | string[]>>;
  readonly NotAction?: unknown;
  readonly NotResource?: unknown;
  readonly Principal?: unknown;
}

export interface Request {
  readonly action: string;
  readonly resource: string;
  /** Condition keys and policy variables, e.g. `aws:userid`, `kms:ViaService`. */
  readonly context?: Record<string, string>;
}

const list = (value: string | string[] | undefined): string[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

function glob(pattern: string, value: string, caseInsensitive: boolean): boolean {
  const regex = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${regex}$`, caseInsensitive ? 'i' : '').test(value);
}

/** `${aws:userid}` and the like, from the request context; an unknown variable matches nothing. */
function substitute(value: string, context: Record<string, string>): string | undefined {
  let unknown = false;
  const result = value.replace(/\$\{([^}]+)\}/g, (_, name: string) => {
    if (name in context) return context[name]!;
    unknown = true;
    return '';
  });
  return unknown ? undefined : result;
}

function conditionsHold(condition: Statement['Condition'], context: Record<string, string>): boolean {
  for (const [operator, keys] of Object.entries(condition ?? {})) {
    for (const [key, expected] of Object.entries(keys)) {
      const actual = context[key];
      if (actual === undefined) return false;
      const values = list(expected).map((v) => substitute(v, context));
      if (operator === 'StringEquals') {
        if (!values.some((v) => v === actual)) return false;
      } else if (operator === 'StringLike') {
        if (!values.some((v) => v !== undefined && glob(v, actual, false))) return false;
      } else {
        return false;
      }
    }
  }
  return true;
}

function applies(statement: Statement, request: Request): boolean {
  if (statement.NotAction !== undefined || statement.NotResource !== undefined) return false;
  const context = request.context ?? {};
  return (
    list(statement.Action).some((a) => glob(a, request.action, true)) &&
    list(statement.Resource).some((r) => {
      const pattern = substitute(r, context);
      return pattern !== undefined && glob(pattern, request.resource, false);
    }) &&
    conditionsHold(statement.Condition, context)
  );
}

/** Allowed: some Allow statement applies and no Deny does. */
export function isAllowed(statements: readonly Statement[], request: Request): boolean {
  if (statements.some((s) => s.Effect === 'Deny' && applies(s, request))) return false;
  return statements.some((s) => s.Effect === 'Allow' && applies(s, request));
}

/**
 * The identity-policy statements of a role in the template: its inline
 * policies and every AWS::IAM::Policy attached to it, resolved. A managed
 * policy cannot be evaluated here and is an error.
 */
export function roleStatements(template: Template, roleId: string): Statement[] {
  const role = template.Resources[roleId];
  if (role?.Type !== 'AWS::IAM::Role') throw new Error(`iam-policy: ${roleId} is not a role`);
  if (role.Properties?.ManagedPolicyArns) throw new Error(`iam-policy: ${roleId} has managed policies, which this evaluator cannot read`);
  const documents: unknown[] = ((role.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? []).map((p) => p.PolicyDocument);
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = (resource.Properties?.Roles as { Ref?: string }[] | undefined) ?? [];
    if (roles.some((r) => r.Ref === roleId)) documents.push(resource.Properties!.PolicyDocument);
  }
  return documents.flatMap((document) => {
    const statements = (resolveValue(document, stateMachineRefs(template)) as { Statement: Statement | Statement[] }).Statement;
    return Array.isArray(statements) ? statements : [statements];
  });
}

/** What `Ref` returns for each state machine of the template: its ARN (the name CloudFormation would give it is its logical id here). */
export function stateMachineRefs(template: Template): Record<string, string> {
  return Object.fromEntries(
    Object.entries(template.Resources)
      .filter(([, r]) => r.Type === 'AWS::StepFunctions::StateMachine')
      .map(([id]) => [id, `arn:${PSEUDO['AWS::Partition']}:states:${PSEUDO['AWS::Region']}:${PSEUDO['AWS::AccountId']}:stateMachine:${id}`]),
  );
}
