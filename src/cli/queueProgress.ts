/**
 * What `queue work` and `queue status` report of a queue: the progress line and bar (this
 * process's counts, the fleet's run, the queue's depth), `--until-empty`'s test, and the gauges
 * `--metrics-port` serves.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Metrics from "../../core/observability/metrics.js"
import { perSecond, timeLeftMillis } from "../../core/pace.js"
import { recordDepth } from "../../core/queue/queueWorker.js"
import { ClinicalQueue } from "../bullmq.js"
import { gauge } from "../internal/observability/telemetry.js"
import { meter } from "../internal/queue/jobProcessor.js"
import * as Render from "./render.js"

// ---------------------------------------------------------------------------------------------

const paused = gauge(Metrics.queuePaused)
const redisUp = gauge(Metrics.queueRedisUp)
const runPersons = gauge(Metrics.queueRun)

/**
 * The queue's gauges from a status read now: its depth by state, whether it is paused, its latest
 * run's persons (the fleet's). What `--metrics-port` serves is read for each scrape (a second old at most).
 */
const refreshGauges = (options: ClinicalQueue.QueueOptions, queue: string) =>
  Effect.flatMap(ClinicalQueue.status(options, { failuresByKind: false }), (now) => {
    const persons = Metric.tagged(runPersons, "queue", queue)
    const run = now.run === undefined ? [] : [
      ["enqueued", now.run.persons],
      ["done", now.run.done],
      ["failed", now.run.failed]
    ] as const
    return Effect.zipRight(
      Effect.sync(() => recordDepth(meter, queue, now)),
      Effect.all([
        Metric.set(Metric.tagged(paused, "queue", queue), now.isPaused ? 1 : 0),
        ...run.map(([state, n]) => Metric.set(Metric.tagged(persons, "state", state), n))
      ], { discard: true })
    )
  })

/** {@link refreshGauges} as the metrics' refresh: whether it could read Redis goes to `clinical_queue_redis_up`. */
export const gaugesFrom = (options: ClinicalQueue.QueueOptions, queue: string) => () =>
  Effect.runPromise(
    refreshGauges(options, queue).pipe(
      Effect.zipRight(Metric.set(Metric.tagged(redisUp, "queue", queue), 1)),
      Effect.tapErrorCause(() => Metric.set(Metric.tagged(redisUp, "queue", queue), 0))
    )
  )

/** Persons of the queue not done yet: waiting, active or retrying. */
export const leftIn = (now: ClinicalQueue.Status): number => now.waiting + now.prioritized + now.active + now.delayed

/** The persons finished in the status's run, by the whole fleet. */
export const finishedIn = (now: ClinicalQueue.Status): number => (now.run?.done ?? 0) + (now.run?.failed ?? 0)

/** The whole fleet's pace over the run from `before` to `after`, `millis` apart; none across two runs. */
export const fleetPace = (
  before: ClinicalQueue.Status,
  after: ClinicalQueue.Status,
  millis: number
): number | undefined =>
  before.run?.run === after.run?.run ? perSecond(finishedIn(before), finishedIn(after), millis) : undefined

/**
 * One progress line of `queue work`: this process's counts, time and rate; the run's (the whole
 * fleet's) with, when an earlier line of the same run gives its pace, the time left; the queue's.
 */
export const progressLine = (
  counts: { readonly done: number; readonly failed: number },
  elapsedMillis: number,
  now: ClinicalQueue.Status,
  earlier: { readonly status: ClinicalQueue.Status; readonly millis: number } | undefined
): string => {
  const parts = progressParts(counts, elapsedMillis, now, earlier)
  return `queue work: ${parts.here}${parts.run === "" ? "" : `; ${parts.run}`}; queue: ${parts.queue}${parts.notes}`
}

/**
 * The progress bar's text at a terminal: the run (the fleet's) first, then this process's counts,
 * then what needs an eye (a pause, a worker that stopped answering); the bar is the run's share done.
 */
export const progressBar = (
  counts: { readonly done: number; readonly failed: number },
  elapsedMillis: number,
  now: ClinicalQueue.Status,
  earlier: { readonly status: ClinicalQueue.Status; readonly millis: number } | undefined,
  columns: number | undefined
): string => {
  const parts = progressParts(counts, elapsedMillis, now, earlier)
  const run = now.run
  const fraction = run === undefined || run.persons === 0 ? 0 : (run.done + run.failed) / run.persons
  return Render.bar(fraction, `${parts.run === "" ? "" : `${parts.run}; `}${parts.here}${parts.notes}`, columns)
}

/** A progress report's parts: this process's, the run's, the queue's, and what needs an eye. */
const progressParts = (
  counts: { readonly done: number; readonly failed: number },
  elapsedMillis: number,
  now: ClinicalQueue.Status,
  earlier: { readonly status: ClinicalQueue.Status; readonly millis: number } | undefined
) => {
  const here = perSecond(0, counts.done + counts.failed, elapsedMillis) ?? 0
  const fleetRate = earlier === undefined ? undefined : fleetPace(earlier.status, now, elapsedMillis - earlier.millis)
  const timeLeft = timeLeftMillis(leftIn(now), fleetRate)
  return {
    here: `${counts.done} done, ${counts.failed} failed here in ${Render.duration(elapsedMillis)} (${
      here.toFixed(1)
    }/s)`,
    run: now.run === undefined
      ? ""
      : `run ${now.run.run}: ${now.run.done} done, ${now.run.failed} failed of ${now.run.persons}` +
        (now.run.enqueued ? "" : " enqueued so far") +
        (fleetRate === undefined ? "" : ` (${fleetRate.toFixed(1)}/s)`) +
        (timeLeft === undefined ? "" : `, about ${Render.duration(timeLeft)} left`),
    queue: `${
      now.waiting + now.prioritized
    } waiting, ${now.active} active, ${now.delayed} delayed, ${now.failed} failed`,
    notes: (now.isPaused ? `; paused: ${Render.printable(now.pausedBecause ?? "by an operator")}` : "") +
      (now.unanswered === undefined ? "" : `; ${unansweredText(now.unanswered)}`)
  }
}

/** What a progress line or the status table says of active jobs whose worker stopped answering. */
export const unansweredText = (unanswered: NonNullable<ClinicalQueue.Status["unanswered"]>): string =>
  `${unanswered.jobs} active held by a worker that stopped answering: ` +
  `taken back within ${Render.duration(unanswered.backWithinMillis)}`

/** Whether `--until-empty` is done: nothing waiting, active or retrying, and no enqueue still adding. */
export const isDrained = (now: ClinicalQueue.Status): boolean => leftIn(now) === 0 && !now.enqueuing
