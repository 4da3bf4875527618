import { buildApp } from '../lib/app.ts';

// Context: `warehouse` (cdk.json default: serverless workgroup "analytics", database "dev"),
// `secretArn` (cluster credentials secret), `alarmEmail` (on-call subscription).
const { app } = buildApp();
app.synth();
