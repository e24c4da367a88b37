/**
 * The queue's own failure, as this line's class (the fields and message of core/queue/queueError.ts):
 * Redis or BullMQ failed (unreachable, a command refused), or the queue refused what was asked. Its
 * detail never holds job data (ids at most) nor a Redis password.
 */
import * as Schema from "effect/Schema"
import type * as Errors from "../../../core/errors.js"
import * as Core from "../../../core/queue/queueError.js"
import { InvalidConfig } from "../../ClinicalError.js"

export { describe } from "../../../core/queue/queueError.js"

/** Redis or BullMQ failed (unreachable, a command refused), or the queue refused what was asked. */
export class QueueError extends Schema.TaggedError<QueueError>()("QueueError", {
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return Core.message(this)
  }
}

/** The core's failure as this line's class. */
export const fromCore = (error: Core.QueueError | Errors.InvalidConfig): QueueError | InvalidConfig =>
  error._tag === "QueueError"
    ? new QueueError({ operation: error.operation, detail: error.detail })
    : new InvalidConfig({ setting: error.setting, reason: error.reason })

/**
 * A Redis or BullMQ failure as a `QueueError` (its message carries no job data: ids at most), or
 * the `InvalidConfig` the queue's own record gave (another key, another operation) as it is.
 */
export const queueError = (operation: string) => (error: unknown): QueueError | InvalidConfig =>
  error instanceof QueueError || error instanceof InvalidConfig ? error : fromCore(Core.failureOf(operation, error))

/** What the core threw, its own failure as this line's class (anything else as it is). */
export const rethrown = (error: unknown): never => {
  throw error instanceof Core.Failure ? fromCore(error.error) : error
}
