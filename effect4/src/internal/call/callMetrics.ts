/**
 * The metrics a call records, tagged once per operation (a metric tagged on every call cost its
 * key's making each time), and the call's record in them and in its span.
 */
import type * as Fiber from "effect/Fiber"
import * as Metric from "effect/Metric"
import type { ClinicalError, Operation } from "../../ClinicalError.js"
import * as HttpSpan from "../observability/httpSpan.js"
import * as Telemetry from "../observability/telemetry.js"

export const refusedByCircuit = Metric.withAttributes(Telemetry.refusedByLoadControl, { reason: "circuit-open" })
export const refusedByBudget = Metric.withAttributes(Telemetry.refusedByLoadControl, { reason: "retry-budget" })

/** The metrics of one operation. */
class OperationMetrics {
  readonly attempts: Metric.Metric<number, unknown>
  private readonly failures = new Map<string, Metric.Metric<number, unknown>>()
  private readonly retries = new Map<string, Metric.Metric<number, unknown>>()
  constructor(private readonly operation: Operation) {
    this.attempts = Metric.withAttributes(Telemetry.attemptsPerCall, { operation })
  }
  /** The failures counter of an error's tag (a small fixed set). */
  failure(tag: string): Metric.Metric<number, unknown> {
    let metric = this.failures.get(tag)
    if (metric === undefined) {
      this.failures.set(
        tag,
        metric = Metric.withAttributes(Telemetry.failures, { operation: this.operation, error: tag })
      )
    }
    return metric
  }
  /** The retries counter of a cause (network, timeout, a status: a small set). */
  retry(cause: string): Metric.Metric<number, unknown> {
    let metric = this.retries.get(cause)
    if (metric === undefined) {
      this.retries.set(cause, metric = Metric.withAttributes(Telemetry.retries, { operation: this.operation, cause }))
    }
    return metric
  }
}

/** The metrics of a client's operations, each tagged once (the names come from code: a small fixed set). */
export class CallMetrics {
  private readonly byOperation = new Map<Operation, OperationMetrics>()

  constructor(private readonly tracePropagation: boolean) {}

  of(operation: Operation): OperationMetrics {
    let metrics = this.byOperation.get(operation)
    if (metrics === undefined) this.byOperation.set(operation, metrics = new OperationMetrics(operation))
    return metrics
  }

  /**
   * A call's end, in the fiber that runs it and with no Effect of its own: the attempts histogram,
   * the failures counter, and (when someone could see it) the span's attributes.
   */
  record(
    fiber: Fiber.Fiber<unknown, unknown>,
    operation: Operation,
    attempts: number,
    status: number | undefined,
    error: ClinicalError | undefined
  ): void {
    const metrics = this.of(operation)
    metrics.attempts.updateUnsafe(attempts, fiber.context)
    if (error !== undefined) metrics.failure(error._tag).updateUnsafe(1, fiber.context)
    const span = fiber.cache.span
    if (span?._tag === "Span" && HttpSpan.observed(fiber, this.tracePropagation)) {
      span.attribute("clinical.attempts", attempts)
      if (status !== undefined) span.attribute("http.response.status_code", status)
      if (error !== undefined) span.attribute("clinical.error", error._tag)
    }
  }
}
