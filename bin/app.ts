import { buildApp } from '../lib/app.ts';

// Context: `warehouse` (cdk.json default: serverless workgroup "analytics", database "dev"),
// `secretArn` (credentials secret of the cluster or workgroup), `alarmEmail` (on-call subscription).
const { app } = buildApp();
app.synth();
