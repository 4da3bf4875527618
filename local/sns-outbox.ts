/**
 * The on-call topic on one machine: what the state machine's SNS Publish
 * task sends is kept in memory and appended to a JSON-lines file. SNS's
 * own limits apply, so an alert that SNS would refuse fails here too.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SNS_MESSAGE_MAX_BYTES, SNS_SUBJECT_MAX_CHARACTERS } from '../domain/aws-limits.ts';

export interface Alert {
  readonly topicArn: string;
  readonly subject?: string;
  readonly message: string;
  readonly executionId: string;
  readonly at: string;
}

/** SNS's InvalidParameter error, as the SNS task would report it. */
export class SnsInvalidParameterError extends Error {
  override name = 'SNS.InvalidParameterException';
}

export class SnsOutbox {
  readonly alerts: Alert[] = [];

  constructor(private readonly file: string) {}

  /** The SNS Publish task: validates like SNS, keeps the alert, appends it to the outbox file. */
  publish(parameters: Record<string, unknown>, executionId: string): { MessageId: string } {
    const message = parameters.Message;
    const subject = parameters.Subject;
    if (typeof message !== 'string' || message === '') throw new SnsInvalidParameterError('Invalid parameter: Message is required');
    const bytes = Buffer.byteLength(message, 'utf8');
    if (bytes > SNS_MESSAGE_MAX_BYTES) {
      throw new SnsInvalidParameterError(`Invalid parameter: Message too long: ${bytes} bytes, at most ${SNS_MESSAGE_MAX_BYTES}`);
    }
    if (subject !== undefined && (typeof subject !== 'string' || subject.length > SNS_SUBJECT_MAX_CHARACTERS || !/^[\x20-\x7e]+$/.test(subject))) {
      throw new SnsInvalidParameterError(`Invalid parameter: Subject must be 1 to ${SNS_SUBJECT_MAX_CHARACTERS} printable ASCII characters`);
    }
    const alert: Alert = {
      topicArn: String(parameters.TopicArn ?? ''),
      ...(subject ? { subject } : {}),
      message,
      executionId,
      at: new Date().toISOString(),
    };
    this.alerts.push(alert);
    mkdirSync(dirname(this.file), { recursive: true });
    appendFileSync(this.file, `${JSON.stringify(alert)}\n`);
    return { MessageId: randomUUID() };
  }
}
