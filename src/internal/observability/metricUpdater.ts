/**
 * A metric updated from a callback with the fiber's metric labels, as `Metric.unsafeUpdate` would,
 * at the cost of the update alone. A tagged `Metric` rebuilds its whole label set, a new
 * `MetricKey` (hashing its name, description and labels) and looks its hook up in the registry on
 * every update; on the call's hot path that was most of what recording two histograms cost. Here
 * the hook is looked up once per label set the fiber carries (almost always the same array) and
 * kept; the key, and so the series it updates, is the one `Metric.unsafeUpdate` finds.
 */
import * as Metric from "effect/Metric"
import type * as MetricHook from "effect/MetricHook"
import * as MetricKey from "effect/MetricKey"
import type * as MetricKeyType from "effect/MetricKeyType"
import type * as MetricLabel from "effect/MetricLabel"

/** Updates the metric by `value`, labelled with `fiberLabels` (`FiberRef.currentMetricLabels`) as well as its own. */
export type Updater = (value: number, fiberLabels: ReadonlyArray<MetricLabel.MetricLabel>) => void

/** The updater of the metric with key `key` (its own labels included). */
export const updater = (
  key: MetricKey.MetricKey<MetricKeyType.MetricKeyType<number, unknown>>
): Updater => {
  const hooks = new WeakMap<ReadonlyArray<MetricLabel.MetricLabel>, MetricHook.MetricHook<number, unknown>>()
  return (value, fiberLabels) => {
    let hook = hooks.get(fiberLabels)
    if (hook === undefined) {
      hook = Metric.globalMetricRegistry.get(MetricKey.taggedWithLabels(key, fiberLabels))
      hooks.set(fiberLabels, hook)
    }
    hook.update(value)
  }
}
