/**
 * What the parts of the queue at work share (test/QueueEnqueue.test.ts, QueueWork, QueueMisbehaving,
 * QueueEnqueueInput, QueueRunCounts): the persons the mock serves them, Redis's whole contents, and
 * Effect workers over the mock with the token shared through Redis.
 */
import { Effect, Layer } from "effect"
import { ClinicalClient, type ClinicalConfig, PersonData, TokenStore } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { MockClinicalServer } from "effect-clinical/testing"
import { connect, eventually, KEY, mock, queueOptions, redis, status } from "./queueServers.js"
import * as RedisServer from "./RedisServer.js"

/** Persons the mock knows: the fixture's three, under new PersonUids. */
export const people = (n: number): Array<MockClinicalServer.MockPerson> =>
  Array.from({ length: n }, (_, i) => ({
    ...MockClinicalServer.fixturePersons[i % 3]!,
    personUid: `QpU${i.toString(36).padStart(5, "0")}Zk9wXy${(i * 7919).toString(36)}mN==`
  }))
/** The last one's service echoes the person's own PersonUid inside an item. */
export const persons = people(60).map((person, i) =>
  i === 59
    ? { ...person, medications: [{ ...person.medications[0]!, Name: `Echo of ${person.personUid}` }] }
    : person
)

export const everything = () => RedisServer.contents(redis.port)

/** A worker's client over the mock, the token shared through this Redis. */
export const clientLayer = (settings?: Partial<ClinicalConfig.Options>) =>
  ClinicalClient.layerUndici({
    baseUrl: mock.url,
    applicationId: mock.applicationId,
    retryRateLimited: false,
    retryBaseDelay: "10 millis",
    ...settings
  }).pipe(
    Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(connect()), sealingKey: KEY }))
  )

/**
 * Runs `workers` Effect workers until `done` says so (or `stop` settles), each with its own client;
 * the sink's records. Every worker is closed before it returns.
 */
export const work = async (
  workers: number,
  done: (records: ReadonlyArray<ClinicalQueue.JobRecord>) => boolean,
  settings?: Partial<ClinicalConfig.Options>,
  options?: Partial<ClinicalQueue.WorkerOptions> & {
    readonly operation?: PersonData.Operation | ReadonlyArray<PersonData.Operation>
  },
  stop?: Promise<unknown>
): Promise<Array<ClinicalQueue.JobRecord>> => {
  const records: Array<ClinicalQueue.JobRecord> = []
  let finish: () => void
  const finished = new Promise<void>((resolve) => (finish = resolve))
  void stop?.then(() => finish())
  const sink = (record: ClinicalQueue.JobRecord) => {
    records.push(record)
    if (done(records)) finish()
  }
  const one = Effect.scoped(
    Effect.zipRight(
      ClinicalQueue.worker({ ...queueOptions(), operation: PersonData.medications, sink, concurrency: 4, ...options }),
      Effect.promise(() => finished)
    )
  ).pipe(Effect.provide(clientLayer(settings)))
  await Effect.runPromise(Effect.all(Array.from({ length: workers }, () => one), { concurrency: "unbounded" }))
  return records
}

/** An enqueue of `uids` (named `inputId`) whose input fails once its first 5 persons are in Redis; its outcome. */
export const diesAfterFive = async (uids: ReadonlyArray<string>, inputId: string) => {
  let fail: () => void
  const failing = new Promise<void>((resolve) => (fail = resolve))
  const dying = (async function*() {
    for (const uid of uids.slice(0, 5)) yield uid
    await failing
    throw new Error("the disk went away")
  })()
  const died = Effect.runPromise(Effect.either(
    ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications, inputId }, dying)
  ))
  await eventually(async () => (await status()).waiting === 5)
  fail!()
  return died
}
