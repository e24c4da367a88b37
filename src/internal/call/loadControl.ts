/**
 * The core's load control (core/call/loadControl.ts) on Effect 3's `Clock`.
 */
import type * as Clock from "effect/Clock"
import * as Core from "../../../core/call/loadControl.js"
import type * as Gate from "./gate.js"

export { latencySample, Signal, signalOfError, signalOfStatus } from "../../../core/call/loadControl.js"
export type { Settings } from "../../../core/call/loadControl.js"

/** A clock's monotonic time in ns, as this line reads it. */
export const nanos = (clock: Clock.Clock): bigint => clock.unsafeCurrentTimeNanos()

/** The clock a round trip is timed by: monotonic, in ms with their fractions (see the core's). */
export const roundTripClock = (clock: Clock.Clock): number => Core.roundTripMillis(nanos(clock))

/** One client's load control on Effect 3's clock. */
export class LoadControl extends Core.LoadControl<Clock.Clock> {
  constructor(settings: Core.Settings, gate: Gate.Gate, onLimit: (permits: number) => void) {
    super(settings, gate, onLimit, nanos)
  }
}
