/** What the scenarios' service of fixed capacity (`capacityServer.ts`) is told, and what it counts. */

/** What the service does from `at` (ms after its first request) until the next phase; what it does not say is as normal. */
export interface Phase {
  readonly at: number
  readonly latencyMillis?: number
  /**
   * The latency grows from `latencyMillis` at this phase's start to this at the next phase's start
   * (a service slowing down by degrees).
   */
  readonly latencyToMillis?: number
  /** Every request answered with this status at once (503: the service down). */
  readonly status?: number
  /** The port closed: connections refused. */
  readonly closed?: boolean
  /** A share of data requests answered 500 at once. */
  readonly failingShare?: number
}

export interface Plan {
  readonly capacity: number
  readonly retryAfterSeconds?: number
  /** Requests beyond the capacity wait their turn at the service (first come, first served) instead of a 429. */
  readonly queueExcess?: boolean
  /**
   * The phases' time starts once the service has answered this many data requests, not with its
   * first request: an outage meant to strike a batch that has found its pace does so however slowly
   * a loaded machine starts the batch (one 2 s late saw the outage before any answer).
   */
  readonly phasesAfterAnswers?: number
  readonly phases: ReadonlyArray<Phase>
}

/** The counts of one 100 ms bucket. */
export interface Bucket {
  /** Data requests that arrived (answered, refused or failed). */
  readonly requests: number
  readonly tokenRequests: number
  readonly throttled: number
  readonly failed: number
  /** The most data requests in flight during it (those waiting at the service included). */
  readonly peakInFlight: number
}

export interface Stats {
  readonly answered: number
  readonly throttled: number
  readonly failed: number
  readonly tokenRequests: number
  readonly peakInFlight: number
  /** When the first request came (epoch ms): the time bucket 0 starts. */
  readonly startedAt: number | undefined
  /** When the phases' time started (epoch ms): `startedAt` unless the plan says `phasesAfterAnswers`. */
  readonly phasesStartedAt: number | undefined
  readonly buckets: ReadonlyArray<Bucket>
}

export const BUCKET_MILLIS = 100
