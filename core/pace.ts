/**
 * How fast persons are being read, and how long the rest should take at that pace: for the
 * progress of `batch` and `queue work` and for `queue status`. Plain arithmetic on counts and
 * times, so that each caller says "unknown" the same way (no rate before time has passed, no end
 * while nothing moves).
 */

/** Persons per second between two counts `millis` apart; `undefined` when no time passed. */
export const perSecond = (before: number, after: number, millis: number): number | undefined =>
  millis > 0 ? ((after - before) * 1000) / millis : undefined

/** How long `left` persons should take at `rate` persons per second (ms); `undefined` when nothing is left or nothing moves. */
export const timeLeftMillis = (left: number, rate: number | undefined): number | undefined =>
  left > 0 && rate !== undefined && rate > 0 ? (left / rate) * 1000 : undefined
