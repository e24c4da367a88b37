/**
 * The queue's own failure: Redis or BullMQ failed (unreachable, a command refused), or the queue
 * refused what was asked. Its detail never holds job data (ids at most) nor a Redis password.
 */
import * as Schema from "effect/Schema"
import { InvalidConfig } from "../../ClinicalError.js"

/** Redis or BullMQ failed (unreachable, a command refused), or the queue refused what was asked. */
export class QueueError extends Schema.TaggedError<QueueError>()("QueueError", {
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `queue ${this.operation} failed: ${this.detail}`
  }
}

/**
 * A Redis or BullMQ failure as a `QueueError` (its message carries no job data: ids at most), or
 * the `InvalidConfig` the queue's own record gave (another key, another operation) as it is.
 */
export const queueError = (operation: string) => (error: unknown): QueueError | InvalidConfig =>
  error instanceof QueueError || error instanceof InvalidConfig ? error : new QueueError({
    operation,
    detail: describe(error).slice(0, 300)
  })

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
