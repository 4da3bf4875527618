/**
 * The SQL of PublishGroup: every member's swap in ONE transaction, all or
 * none (domain/groups.ts).
 */

/**
 * Statements a group swap has once whatever its members: the bounded lock
 * wait (SET LOCAL statement_timeout) and the lock of the publications.
 */
export const GROUP_SWAP_SHARED_STATEMENTS = 2;

/**
 * Statements each member adds at least: LOCK of its staging and of its live
 * table, its guard (assert_publishable), its catalog check, two renames,
 * and its publication, attempt and batch recorded.
 */
export const MEMBER_SWAP_MIN_STATEMENTS = 9;
