import { join } from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import { Architecture, type CfnFunction, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../domain/names.ts';
import { CODE_VERSION, PROJECT_ROOT } from './project.ts';
import { ENTRY_METADATA_KEY, type FunctionStepName, stepEntry, stepSettings } from './workflow-steps.ts';

export interface StepHandlerProps {
  /** The Task state (or event-driven step) this function serves; picks `functions/<step>/index.ts` and the timeout. */
  readonly state: FunctionStepName;
  /** Extra environment (the warehouse target); merged over the common variables. */
  readonly environment?: Record<string, string>;
  /**
   * Execution role, shared by the steps so that they act as one database user
   * (see PublishWorkflow). The function's log group is granted to it.
   * @default - a role of its own with the AWSLambdaBasicExecutionRole managed policy (CDK's default)
   */
  readonly role?: IRole;
  /**
   * Retention of the function's log group.
   * @default RetentionDays.THREE_MONTHS
   */
  readonly logRetention?: RetentionDays;
}

/** Roles whose X-Ray wildcard is acknowledged already. */
const TRACED_ROLES = new WeakSet<IRole>();

/** The parser's WebAssembly module, relative to the project root. */
const PARSER_WASM = 'node_modules/libpg-query/wasm/libpg-query.wasm';

/**
 * ESM banner: esbuild turns a CommonJS dependency's `require` into a shim
 * that throws in an ES module unless a real `require` is in scope; the
 * parser's loader (CommonJS too) finds its WebAssembly module through
 * `__dirname`, which an ES module does not define either.
 */
const ESM_BANNER = [
  "import { createRequire as __atomicPublishCreateRequire } from 'node:module';",
  "import { fileURLToPath as __atomicPublishFileURLToPath } from 'node:url';",
  'const require = __atomicPublishCreateRequire(import.meta.url);',
  'const __filename = __atomicPublishFileURLToPath(import.meta.url);',
  "const __dirname = __filename.slice(0, __filename.lastIndexOf('/'));",
].join(' ');

/**
 * How every step handler is bundled. The handlers validate the pipeline
 * specs at import with PostgreSQL's parser (libpg-query, WebAssembly), which
 * loads `libpg-query.wasm` from beside the bundle: the hook copies it there.
 */
export const STEP_BUNDLING = {
  format: OutputFormat.ESM,
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: ESM_BANNER,
  externalModules: [],
  minify: false,
  sourceMap: true,
  forceDockerBundling: false,
  commandHooks: {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (inputDir: string, outputDir: string) => [`cp "${join(inputDir, PARSER_WASM)}" "${outputDir}"`],
  },
} satisfies BundlingOptions;

/**
 * One step handler: bundled locally with esbuild into one ES module (the AWS
 * SDK included, so the deployed code runs the SDK version it was tested with).
 */
export class StepHandler extends NodejsFunction {
  /** The handler module relative to the project root, e.g. `functions/plan/index.ts`. */
  public readonly entryPath: string;

  constructor(scope: Construct, id: string, props: StepHandlerProps) {
    const entryPath = stepEntry(props.state);
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: props.logRetention ?? RetentionDays.THREE_MONTHS,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    super(scope, id, {
      description: `atomic-publish ${props.state} step (${entryPath})`,
      entry: join(PROJECT_ROOT, entryPath),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: join(PROJECT_ROOT, 'package-lock.json'),
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: 256,
      timeout: Duration.minutes(stepSettings(props.state).timeoutMinutes),
      logGroup,
      // X-Ray: the handlers' Powertools Tracer records each invocation and its AWS SDK calls (functions/commons/powertools.ts).
      tracing: Tracing.ACTIVE,
      ...(props.role ? { role: props.role } : {}),
      environment: {
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        CODE_VERSION,
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
      bundling: STEP_BUNDLING,
    });
    this.entryPath = entryPath;
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'The runtime is pinned, not floated: the bundle is built for Node.js 22 (esbuild target node22), so a newer runtime ' +
        '(nodejs24.x) is a deliberate change of the build target, not a side effect of the next synth. Lambda supports nodejs22.x ' +
        'until 30 April 2027 (Lambda runtimes, https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html).',
    });
    // A given role gets no logging permissions from CDK: allow writing to this
    // function's own log group only (the group exists, so no CreateLogGroup).
    if (props.role) logGroup.grantWrite(props.role);
    // Active tracing grants the role xray:PutTraceSegments and xray:PutTelemetryRecords (once per role: several functions may share one).
    if (this.role && !TRACED_ROLES.has(this.role)) {
      TRACED_ROLES.add(this.role);
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Active tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which take no resource-level permissions: IAM takes only ' +
          'Resource "*" (AWSXRayDaemonWriteAccess grants them so; https://docs.aws.amazon.com/lambda/latest/dg/services-xray.html).',
      });
    }
    (this.node.defaultChild as CfnFunction).addMetadata(ENTRY_METADATA_KEY, entryPath);
  }

  /**
   * The state machine invokes the function by its unqualified ARN (the Task's
   * Resource), so that is all a grant needs; CDK's default adds `<arn>:*`,
   * every version and alias, which none of our callers invoke.
   */
  public override get resourceArnsForGrantInvoke(): string[] {
    return [this.functionArn];
  }
}
