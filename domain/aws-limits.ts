/**
 * Limits of the AWS services the workflow runs on: what the code must stay
 * under, and what the local engine enforces so that a test fails where AWS
 * would.
 */

/** Step Functions: an execution's input, and a state's input (after Parameters) and output, in bytes of UTF-8 JSON. */
export const STATE_PAYLOAD_MAX_BYTES = 262_144;

/** SNS Publish: a message of at most 256 KB of UTF-8. */
export const SNS_MESSAGE_MAX_BYTES = 262_144;

/** SNS Publish: a subject of printable ASCII without line breaks, "less than 100 characters long". */
export const SNS_SUBJECT_MAX_CHARACTERS = 99;
