/**
 * The queue's own failure as plain data, for both Effect lines: Redis or BullMQ failed
 * (unreachable, a command refused), or the queue refused what was asked. Its detail never holds
 * job data (ids at most) nor a Redis password. Each line's `QueueError` class holds these fields
 * and shows {@link message}.
 */
import type { InvalidConfig } from "../errors.js"

export interface QueueError {
  readonly _tag: "QueueError"
  readonly operation: string
  readonly detail: string
}

/** What a `QueueError` says. */
export const message = (error: Omit<QueueError, "_tag">): string => `queue ${error.operation} failed: ${error.detail}`

export const queueError = (operation: string, detail: string): QueueError => ({ _tag: "QueueError", operation, detail })

/**
 * A failure the core's queue decided on, as its functions return or throw it: told apart by
 * `instanceof` from what Redis or BullMQ throw. Each line makes its own class of `error`.
 */
export class Failure {
  constructor(readonly error: QueueError | InvalidConfig) {}
}

/** A `Failure` holding a `QueueError`. */
export const failure = (operation: string, detail: string): Failure => new Failure(queueError(operation, detail))

/**
 * What anything thrown by Redis or BullMQ says, as a `QueueError` of `operation` (no job data: ids
 * at most), or the core's own failure as it is.
 */
export const failureOf = (operation: string, error: unknown): QueueError | InvalidConfig =>
  error instanceof Failure ? error.error : queueError(operation, describe(error).slice(0, 300))

/**
 * The text of anything thrown, whatever it is: an `Error`, a string, an object whose `message`
 * getter throws, one with no prototype (`String()` of it throws). Never throws itself.
 */
export const describe = (thrown: unknown): string => {
  try {
    const message = (thrown as { readonly message?: unknown } | null | undefined)?.message
    if (typeof message === "string") return message
    // A string is itself; so is any other value that is not an object (a number, a symbol).
    return typeof thrown === "object" && thrown !== null ? "an object that is not an Error" : String(thrown)
  } catch {
    return "an object whose message cannot be read"
  }
}
