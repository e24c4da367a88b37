/**
 * The metrics a call records, tagged once per operation (a metric tagged on every call cost its
 * key's making each time), and the call's record in them and in its span.
 */
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as MetricKey from "effect/MetricKey"
import * as MetricLabel from "effect/MetricLabel"
import type * as Tracer from "effect/Tracer"
import type { ClinicalError, Operation } from "../../ClinicalError.js"
import type * as FiberSpan from "../observability/fiberSpan.js"
import * as MetricUpdater from "../observability/metricUpdater.js"
import * as Telemetry from "../observability/telemetry.js"

export const refusedByCircuit = Metric.tagged(Telemetry.refusedByLoadControl, "reason", "circuit-open")
export const refusedByBudget = Metric.tagged(Telemetry.refusedByLoadControl, "reason", "retry-budget")

/** Tagged metrics of one operation, built once rather than on every call. */
const operationMetrics = (operation: Operation) => {
  const retries = Metric.tagged(Telemetry.retries, "operation", operation)
  const failures = Metric.tagged(Telemetry.failures, "operation", operation)
  const byCause = new Map<string, Metric.Metric.Counter<number>>()
  const byTag = new Map<string, Metric.Metric.Counter<number>>()
  const memo = (
    cache: Map<string, Metric.Metric.Counter<number>>,
    base: Metric.Metric.Counter<number>,
    key: string,
    value: string
  ) => {
    let metric = cache.get(value)
    if (metric === undefined) cache.set(value, metric = Metric.tagged(base, key, value))
    return metric
  }
  return {
    attempts: MetricUpdater.updater(
      MetricKey.taggedWithLabels(Telemetry.attemptsPerCallKey, [MetricLabel.make("operation", operation)])
    ),
    retry: (cause: string) => memo(byCause, retries, "cause", cause),
    failure: (tag: string) => memo(byTag, failures, "error", tag)
  }
}

/** The metrics of a client's operations, each tagged once (the names come from code: a small fixed set). */
export class CallMetrics {
  private readonly byOperation = new Map<Operation, ReturnType<typeof operationMetrics>>()

  of(operation: Operation) {
    let metrics = this.byOperation.get(operation)
    if (metrics === undefined) this.byOperation.set(operation, metrics = operationMetrics(operation))
    return metrics
  }

  /**
   * A call's end in one step: attempts histogram, failures counter, span attributes (`span`: where
   * the call's attributes go). Metrics are updated with the fiber's metric tags, as `Metric.update` would.
   */
  record(
    fiber: FiberSpan.AnyFiber,
    operation: Operation,
    span: Tracer.AnySpan | undefined,
    attempts: number,
    status: number | undefined,
    error: ClinicalError | undefined
  ): void {
    const tags = fiber.getFiberRef(FiberRef.currentMetricLabels)
    const m = this.of(operation)
    m.attempts(attempts, tags)
    if (error !== undefined) m.failure(error._tag).unsafeUpdate(1, tags)
    if (span !== undefined && span._tag === "Span") {
      span.attribute("clinical.attempts", attempts)
      if (status !== undefined) span.attribute("http.response.status_code", status)
      if (error !== undefined) span.attribute("clinical.error", error._tag)
    }
  }
}
