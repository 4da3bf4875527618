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

/**
 * Redshift Data API: a row of a statement's result of at most 64 KB, and a
 * whole result of at most 500 MB, as the database returns them; over
 * either, the statement fails ("Troubleshooting issues for Amazon Redshift
 * Data API", https://docs.aws.amazon.com/redshift/latest/mgmt/data-api-troubleshooting.html:
 * "Packet for query is too large", "Database response exceeded size limit").
 */
export const DATA_API_ROW_MAX_BYTES = 65_536;
export const DATA_API_RESULT_MAX_BYTES = 500 * 1024 * 1024;
