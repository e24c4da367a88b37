/**
 * Active jobs whose worker stopped answering (killed, frozen, cut off from Redis), and when BullMQ
 * will take them back: judged from each active job's lock (pure: tests drive it with lock TTLs).
 *
 * A live worker renews its jobs' locks every half lock duration, so a lock never falls far under
 * half of it: one that did was not renewed, and one that is gone has lapsed. A lapsed lock's job is
 * moved back to waiting at the next stall check of any worker (every stall interval); a lock that
 * is lapsing, once it lapses and a check comes.
 */

/** The workers' timings, as the last worker to start recorded them in the queue's meta. */
export interface Timings {
  readonly lockMillis: number
  readonly stalledMillis: number
}

/** Active jobs of a worker that stopped answering, and the longest until all are taken back. */
export interface Unanswered {
  readonly jobs: number
  readonly backWithinMillis: number
}

/** Room for a renewal running late (an event loop busy for a moment) before a lock counts as not renewed. */
export const RENEWAL_SLACK_MILLIS = 1_000

/**
 * From the active jobs' lock TTLs (PTTL: -2 when the lock is gone, -1 when it has no TTL), the
 * jobs of workers that stopped answering; `undefined` when there is none. Without the timings
 * (workers that did not record them), only lapsed locks are judged, and taken back "within" a
 * stall interval of BullMQ's default (30 s).
 */
export const unansweredOf = (lockTtls: ReadonlyArray<number>, timings: Timings | undefined): Unanswered | undefined => {
  const stalledMillis = timings?.stalledMillis ?? 30_000
  let jobs = 0
  let longest = 0
  for (const ttl of lockTtls) {
    if (ttl === -2) {
      jobs++
      longest = Math.max(longest, stalledMillis)
    } else if (timings !== undefined && ttl >= 0 && ttl < timings.lockMillis / 2 - RENEWAL_SLACK_MILLIS) {
      jobs++
      longest = Math.max(longest, ttl + stalledMillis)
    }
  }
  return jobs === 0 ? undefined : { jobs, backWithinMillis: longest }
}
