import { buildApp } from '../lib/app.ts';

// Context: `warehouse` (cdk.json default: serverless workgroup "analytics", database "dev"),
// `secretArn` (credentials secret of the cluster or workgroup), `secretKmsKeyArn` (the
// customer-managed key of that secret), `handlerRoleName` (the step handlers' IAM role,
// default "<stack name>-handlers" in lower case), `alarmEmail` (on-call subscription).
// cdk-nag's AWS Solutions checks run in buildApp: a finding without an acknowledgement fails the synth.
const { app } = buildApp();
app.synth();
