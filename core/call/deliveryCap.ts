/**
 * A cap on the concurrency limit from what the service delivers, beside the latency signal: at most
 * `gain` times the requests the service answers in a round trip, its bandwidth-delay product (BBR's
 * estimate, whose `cwnd_gain` is 2): the delivery rate of recent intervals times the round trip of
 * a request that did not wait. A service of K at once answers K / S a millisecond, with round trips
 * of S at the least: K in a round trip, whatever S is, so that the cap stays near 2K while the
 * service slows down. The latency signal tells a line from a slower service by an experiment, and a
 * line that builds while the service keeps slowing is seen late: without the cap, 16 to 19 were open
 * at a service of 8 whose answers slowed from 15 ms to 300 ms (issue 50; the model, 13 to 19).
 *
 * An interval is as many 2xx answers as the limit lets out (at least `minAnswers`); its rate is
 * the mean of its answers' samples ({@link sampleOf}). An interval in which the client never
 * filled its limit measured the client, not the service (BBR's "application limited"), and is not
 * kept. The rate is the mean of the last `intervals` intervals' rates, or the latest's when higher:
 * their best, as BBR takes it, picked the interval that noise made fastest (0.157 answers a ms
 * measured at a service delivering 0.095), and the cap with it; their mean alone held down a rate
 * that grows. Counting an interval's answers over the time they spanned instead measured bursts:
 * answers that come together span no time.
 *
 * The window's numbers are changed in place: no object per answer (the hot path).
 */

/** The settings of the cap. */
export interface Settings {
  /** The cap over the bandwidth-delay product. */
  readonly gain: number
  /** The fewest answers an interval counts. */
  readonly minAnswers: number
  /** The intervals the window keeps. */
  readonly intervals: number
}

export const DEFAULTS: Settings = { gain: 2, minAnswers: 4, intervals: 10 }

/**
 * What one answer says the service delivers (answers a ms): the requests out when it was sent, itself
 * included, over its round trip. A service that answers in turn had answered those ahead of it by
 * the time it answered it (Little's law); unlike counting answers over the time they span, a burst
 * of answers at one instant measures the same. `undefined` for a round trip of no time.
 */
export const sampleOf = (inFlightAtSend: number, roundTripMillis: number): number | undefined =>
  roundTripMillis > 0 ? Math.max(1, inFlightAtSend) / roundTripMillis : undefined

/**
 * The least cap: BBR's least congestion window (4 packets). Below it, rounding down kept a limit
 * of 1 at 1 for good: one request at a time answered a little slower than the fastest measures
 * under one a round trip, and twice that rounds down to 1 (a batch back from an outage stayed at a
 * twentieth of its pace). From 4, the cap rises while answers take under 1.6 times the fastest.
 */
export const LEAST_CAP = 4

/** The cap a rate and an unwaited round trip give: `Infinity` (no cap) until both are known, else at least {@link LEAST_CAP}. */
export const capOf = (settings: Settings, rate: number, roundTripMillis: number): number =>
  rate > 0 && Number.isFinite(roundTripMillis)
    ? Math.max(LEAST_CAP, Math.floor(settings.gain * rate * roundTripMillis))
    : Number.POSITIVE_INFINITY

/** The last intervals' delivery rate and fastest round trip, and the interval under way. */
export class DeliveryWindow {
  private readonly rates: Float64Array
  private readonly fastests: Float64Array
  private kept = 0
  private next = 0
  private meanRate = 0
  private latestRate = 0
  private fastestKept = Number.POSITIVE_INFINITY
  // The interval under way.
  private answers = 0
  private samples = 0
  private sampleSum = 0
  private intervalFastest = Number.POSITIVE_INFINITY
  private filled = false

  constructor(private readonly settings: Settings) {
    this.rates = new Float64Array(settings.intervals)
    this.fastests = new Float64Array(settings.intervals)
  }

  /**
   * The delivery rate (answers a ms; 0 while no interval is kept): the mean of the intervals kept,
   * or the latest's when higher, so that a rate that grows (the limit in slow start, the service
   * back) is not held down by the mean of its past.
   */
  rate(): number {
    return Math.max(this.meanRate, this.latestRate)
  }

  /** The fastest round trip of the intervals kept (`Infinity` while none is). */
  fastest(): number {
    return this.fastestKept
  }

  /**
   * A 2xx answer after `roundTripMillis`, its request sent with `inFlightAtSend` out under
   * `permits`: whether it ended an interval that was kept (the rate and the fastest round trip may
   * have changed).
   */
  answered(roundTripMillis: number, inFlightAtSend: number, permits: number): boolean {
    this.answers++
    const sample = sampleOf(inFlightAtSend, roundTripMillis)
    if (sample !== undefined) {
      this.samples++
      this.sampleSum += sample
    }
    if (roundTripMillis < this.intervalFastest) this.intervalFastest = roundTripMillis
    if (inFlightAtSend >= permits) this.filled = true
    if (this.answers < Math.max(this.settings.minAnswers, permits)) return false
    const kept = this.filled && this.samples > 0
    if (kept) this.keep(this.sampleSum / this.samples, this.intervalFastest)
    this.answers = 0
    this.samples = 0
    this.sampleSum = 0
    this.intervalFastest = Number.POSITIVE_INFINITY
    this.filled = false
    return kept
  }

  private keep(rate: number, fastest: number): void {
    this.latestRate = rate
    this.rates[this.next] = rate
    this.fastests[this.next] = fastest
    this.next = (this.next + 1) % this.settings.intervals
    this.kept = Math.min(this.kept + 1, this.settings.intervals)
    let sum = 0
    this.fastestKept = Number.POSITIVE_INFINITY
    for (let i = 0; i < this.kept; i++) {
      sum += this.rates[i]!
      if (this.fastests[i]! < this.fastestKept) this.fastestKept = this.fastests[i]!
    }
    this.meanRate = sum / this.kept
  }
}
