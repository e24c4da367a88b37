/**
 * An operation's name as errors show it: a definition the application wrote may hold anything
 * there, and only a name of the documented shape is shown.
 */

/** What an operation's name may be: a letter, then letters, digits, `_`, `.` or `-`; at most 64. */
export const OPERATION_NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/

/** The operation's name for an error about it: its own when valid, else `unknown`. */
export const nameOf = (op: { readonly name?: unknown } | null | undefined): string =>
  typeof op?.name === "string" && OPERATION_NAME.test(op.name) ? op.name : "unknown"
