/**
 * What the parts of QueueJobs share (test/QueueJobFailures.test.ts, QueueJobRecord, QueueWorkerLife):
 * a PersonData of the test's own, each person's answer scripted; Effect workers over it; and the
 * queue's counters read as the OpenTelemetry exporter reads them.
 */
import { Effect, Layer, Metric } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { eventually, queueOptions } from "./queueServers.js"

export const at = { operation: "medications", method: "POST", url: "https://clinical.example/api/Medications" }
export const found: PersonData.Result<PersonData.Item> = { items: [], raw: {} }
export const notFound = (errorType = "PersonNotFound") =>
  new ClinicalError.ApiError({ ...at, status: 200, errorType, errorMessage: "no such person" })

export type Answer = Effect.Effect<PersonData.Result<PersonData.Item>, ClinicalError.ClinicalError>

/**
 * A PersonData of the application's own: each person's call answered by `answer`, told how many
 * times that person was asked before. `asked()` counts every call.
 */
export const scripted = (answer: (personUid: string, before: number) => Answer) => {
  const times = new Map<string, number>()
  let calls = 0
  const layer = Layer.succeed(PersonData.PersonData, {
    get: (_operation: PersonData.Operation, personUid: string) =>
      Effect.suspend(() => {
        calls++
        const before = times.get(personUid) ?? 0
        times.set(personUid, before + 1)
        return answer(personUid, before)
      })
  } as unknown as PersonData.Service)
  return { layer, asked: () => calls }
}

export type WorkOptions = Partial<ClinicalQueue.WorkerOptions> & { readonly operation?: PersonData.Operation }

/** An Effect worker over `layer`, started; `close()` ends its scope (closing it) and waits for that. */
export const started = async (
  layer: Layer.Layer<PersonData.PersonData>,
  options: WorkOptions & { readonly sink: ClinicalQueue.Sink }
): Promise<{ readonly close: () => Promise<void> }> => {
  let stop!: () => void
  const stopped = new Promise<void>((resolve) => (stop = resolve))
  let up!: () => void
  const isUp = new Promise<void>((resolve) => (up = resolve))
  const ended = Effect.runPromise(
    Effect.scoped(
      ClinicalQueue.worker({ ...queueOptions(), operation: PersonData.medications, concurrency: 4, ...options }).pipe(
        Effect.tap(() => up()),
        Effect.zipRight(Effect.promise(() => stopped))
      )
    ).pipe(Effect.provide(layer))
  )
  await Promise.race([isUp, ended])
  return {
    close: () => {
      stop()
      return ended
    }
  }
}

/**
 * An Effect worker over `layer` until `done` holds (looked at every 20 ms); the sink's records. The
 * worker is closed before it returns.
 */
export const work = async (
  layer: Layer.Layer<PersonData.PersonData>,
  done: (records: ReadonlyArray<ClinicalQueue.JobRecord>) => Promise<boolean> | boolean,
  options?: WorkOptions
): Promise<Array<ClinicalQueue.JobRecord>> => {
  const records: Array<ClinicalQueue.JobRecord> = []
  const worker = await started(layer, {
    sink: (record) => {
      records.push(record)
    },
    ...options
  })
  try {
    await eventually(() => done(records))
  } finally {
    await worker.close()
  }
  return records
}

/** The counter `name`'s counts by the value of its tag `tag` (as the OpenTelemetry exporter reads them). */
export const countsBy = (name: string, tag: string): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const pair of Metric.unsafeSnapshot()) {
    if (pair.metricKey.name !== name) continue
    const value = String(pair.metricKey.tags.find((t) => t.key === tag)?.value)
    const count = Number((pair.metricState as { count?: number }).count ?? 0)
    if (count > 0) counts.set(value, (counts.get(value) ?? 0) + count)
  }
  return counts
}

/** What the counters counted since `before`, by tag value (the values not counted left out). */
export const since = (before: Map<string, number>, after: Map<string, number>): Record<string, number> =>
  Object.fromEntries([...after].map(([value, n]) => [value, n - (before.get(value) ?? 0)]).filter(([, n]) => n !== 0))

export const jobsByOutcome = () => countsBy("clinical_queue_jobs_total", "outcome")
export const failuresByKind = () => countsBy("clinical_queue_failures_total", "kind")

/**
 * `counted` by kind as the failures metric tags them now: a kind it counts apart under its name,
 * any other (past the 20 kinds the metric keeps apart, another test took them) as `other`.
 */
export const taggedNow = (counted: Record<string, number>): Record<string, number> => {
  const apart = failuresByKind()
  const tagged: Record<string, number> = {}
  for (const [kind, n] of Object.entries(counted)) {
    const tag = apart.has(kind) && kind !== "other" ? kind : "other"
    tagged[tag] = (tagged[tag] ?? 0) + n
  }
  return tagged
}
