/**
 * The core's load control (core/call/loadControl.ts) on Effect 3's `Clock` and `Duration`.
 */
import type * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Core from "../../../core/call/loadControl.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import type * as Gate from "./gate.js"

export { latencySample, Signal, signalOfError, signalOfStatus } from "../../../core/call/loadControl.js"
export type { Settings } from "../../../core/call/loadControl.js"

const nanos = (clock: Clock.Clock): bigint => clock.unsafeCurrentTimeNanos()

/** The clock a round trip is timed by: monotonic, in ms with their fractions (see the core's). */
export const roundTripClock = (clock: Clock.Clock): number => Core.roundTripMillis(nanos(clock))

/** The load control a client's settings describe. */
export const settingsOf = (config: ClinicalConfig.Service): Core.Settings => Core.settingsOf(config, Duration.toMillis)

/** One client's load control on Effect 3's clock. */
export class LoadControl extends Core.LoadControl<Clock.Clock> {
  constructor(settings: Core.Settings, gate: Gate.Gate, onLimit: (permits: number) => void) {
    super(settings, gate, onLimit, nanos)
  }
}
