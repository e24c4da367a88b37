/**
 * What the parts of QueueRuns share (test/QueueEnqueueFailures.test.ts, QueueEnqueueEnds,
 * QueueRunRecords): the persons the mock serves them, the queue's meta keys, the enqueue as a caller
 * reads its outcome, status by run, BullMQ's own view of the queue, and Redis's commands as MONITOR
 * shows them.
 */
import { Queue } from "bullmq"
import { Effect, Either } from "effect"
import { PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { MockClinicalServer } from "effect-clinical/testing"
import { settingsOf } from "../../src/internal/queue/queueSettings.js"
import { connect, eventually, queueOptions } from "./queueServers.js"

export const META = "bull:test:effect-clinical"
export const LOCK = `${META}:enqueuing`

/** Persons the mock knows: the fixture's three, under new PersonUids. */
export const persons: Array<MockClinicalServer.MockPerson> = Array.from({ length: 20 }, (_, i) => ({
  ...MockClinicalServer.fixturePersons[i % 3]!,
  personUid: `RuN${i.toString(36).padStart(5, "0")}Zk9wXy${(i * 7919).toString(36)}mN==`
}))
export const uids = (from: number, to: number): Array<string> =>
  persons.slice(from, to).map((person) => person.personUid)

export const settings = () => Either.getOrThrow(settingsOf(queueOptions()))

export type Input = Iterable<string> | AsyncIterable<string>

export const tryEnqueue = (input: Input, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Effect.runPromise(Effect.either(
    ClinicalQueue.enqueue(
      { ...queueOptions(), operation: PersonData.medications, backoff: "10 millis", ...options },
      input
    )
  ))

export const enqueue = async (input: Input, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Either.getOrThrow(await tryEnqueue(input, options))

export const failure = <A, E>(outcome: Either.Either<A, E>): E | undefined =>
  Either.isLeft(outcome) ? outcome.left : undefined

export const status = (run?: number) => Effect.runPromise(ClinicalQueue.status(queueOptions(), { run }))

/** BullMQ's own view of the queue, over a connection of the test's. */
export const bullOf = () => new Queue("test", { connection: connect() })

/** Commands Redis runs, as MONITOR shows them (commands run inside a script marked `lua`). */
export const monitored = async () => {
  const seen: Array<{ readonly args: ReadonlyArray<string>; readonly lua: boolean }> = []
  const feed = await connect().monitor()
  feed.on("monitor", (_time: string, args: Array<string>, source: string) => seen.push({ args, lua: source === "lua" }))
  /** Sends `mark` through another connection and waits until the feed shows it: all before it is seen. */
  const mark = async (text: string) => {
    await connect().echo(text)
    await eventually(() => seen.some(({ args }) => args[0]?.toLowerCase() === "echo" && args[1] === text))
    return seen.findIndex(({ args }) => args[0]?.toLowerCase() === "echo" && args[1] === text)
  }
  return { seen, mark, stop: () => feed.disconnect() }
}
