/**
 * The queue's runs in Redis (see `runRecord` for what they are): read, started, and written by the
 * enqueue; each person's outcome recorded by the worker that finished it, in one atomic script, so
 * that the counts stay exact whatever dies when.
 *
 * A named run (an input with an `inputId`: the command line's files) counts by position: a slot of
 * 9 bytes per position. The unnamed run (an application enqueueing persons as they come) counts by
 * person: sets of 8-byte fingerprints of who is enqueued, done and failed, so that a person enqueued
 * again is not read again, wherever they stood in each list.
 *
 * Everything sits under the queue's own prefix, so `queue.obliterate()` removes it with the rest.
 * A run's keys expire 30 days after their last write. A new run compacts the run three before it
 * once that one is complete (its slots removed, its record and counts kept): a queue keeps the
 * slots of its last three runs, and of every run still at work.
 */
import { createHash } from "node:crypto"
import type { IoredisClient, Settings } from "./queueSettings.js"
import {
  countOf,
  fingerprint,
  type InputRecord,
  inputRecordOf,
  newRunId,
  type Outcome,
  type RunRecord,
  runRecordOf,
  signed,
  SLOT_BYTES,
  verified
} from "./runRecord.js"

/** How long a run's records are kept after their last write. */
export const RUN_TTL_SECONDS = 30 * 24 * 3600

/** How often the outcomes of a named run renew its keys' TTL. */
const TTL_RENEWED_EVERY_SECONDS = 60

/** Runs a queue keeps the slots of, at least (a new run compacts the oldest, once it is complete). */
export const KEPT_RUNS = 3

/** Longest record read back: ours are a few hundred bytes, whatever someone else wrote there. */
const RECORD_BYTES = 4096

/** Run numbers tried past one whose keys exist (someone else's, or a queue whose meta was lost). */
const RUN_NUMBERS_TRIED = 1_000

/** A Lua script, sent whole the first time a Redis sees it and by its SHA-1 after. */
export const script = (text: string) => {
  const sha = createHash("sha1").update(text).digest("hex")
  return async (
    connection: IoredisClient,
    keys: ReadonlyArray<string>,
    args: ReadonlyArray<string | Buffer>
  ): Promise<unknown> => {
    const all = [String(keys.length), ...keys, ...args]
    try {
      return await connection.call("EVALSHA", sha, ...all)
    } catch (error) {
      if (!String((error as Error)?.message).startsWith("NOSCRIPT")) throw error
      return connection.call("EVAL", text, ...all)
    }
  }
}

/**
 * For each job of a chunk (KEYS: the run's slots, its persons and done sets, then each job's key;
 * ARGV: whether the run is named, then each position, each job's fingerprint, each person's
 * fingerprint), whether it is there already: its job is in the queue, or it is done in the run (by
 * its slot in a named run), or its person was enqueued or done (in the unnamed run).
 */
const present = script(`
local n = #KEYS - 3
local found = {}
for i = 1, n do
  local there = redis.call('EXISTS', KEYS[i + 3]) == 1
  if not there then
    if ARGV[1] == '1' then
      local at = tonumber(ARGV[i + 1]) * ${SLOT_BYTES}
      there = redis.call('GETRANGE', KEYS[1], at, at + ${SLOT_BYTES - 1}) == ARGV[n + i + 1] .. 'D'
    else
      local person = ARGV[2 * n + i + 1]
      there = redis.call('SISMEMBER', KEYS[2], person) == 1 or redis.call('SISMEMBER', KEYS[3], person) == 1
    end
  end
  found[i] = there and 1 or 0
end
return found
`)

/**
 * Records how a person ended (KEYS: the run's counts, slots, done and failed sets; ARGV: the run's
 * id, the position, the job's fingerprint, the person's, D or F, the TTL, the time in seconds),
 * keeping the counts exact: an outcome recorded twice counts once, a success is never undone, a
 * failure retried into a success moves from one count to the other. A run no longer recorded,
 * compacted, or of another id (its number used again) is left alone.
 *
 * A named run's keys have their TTL renewed once a minute ({@link TTL_RENEWED_EVERY_SECONDS}), not
 * at every person (two commands of the script's seven): the first outcome of a run, which creates
 * its slots, always renews it (no renewal is recorded yet). The time is the worker's: a clock far
 * ahead only delays a renewal of a 30-day TTL.
 */
const outcome = script(`
local run = redis.call('HMGET', KEYS[1], 'id', 'compacted', 'named', 'renewAt')
if run[1] ~= ARGV[1] then return 0 end
if run[2] then return 0 end
if run[3] ~= '1' then
  if ARGV[5] == 'D' then
    redis.call('SREM', KEYS[4], ARGV[4])
    redis.call('SADD', KEYS[3], ARGV[4])
  elseif redis.call('SISMEMBER', KEYS[3], ARGV[4]) == 0 then
    redis.call('SADD', KEYS[4], ARGV[4])
  end
  redis.call('EXPIRE', KEYS[1], ARGV[6])
  redis.call('EXPIRE', KEYS[3], ARGV[6])
  redis.call('EXPIRE', KEYS[4], ARGV[6])
  return 1
end
local at = tonumber(ARGV[2]) * ${SLOT_BYTES}
local old = redis.call('GETRANGE', KEYS[2], at, at + ${SLOT_BYTES - 1})
local new = ARGV[3] .. ARGV[5]
if old == new then return 0 end
local was = string.sub(old, ${SLOT_BYTES}, ${SLOT_BYTES})
if string.sub(old, 1, ${SLOT_BYTES - 1}) == ARGV[3] and was == 'D' then return 0 end
if was == 'D' then redis.call('HINCRBY', KEYS[1], 'done', -1) end
if was == 'F' then redis.call('HINCRBY', KEYS[1], 'failed', -1) end
redis.call('SETRANGE', KEYS[2], at, new)
redis.call('HINCRBY', KEYS[1], ARGV[5] == 'D' and 'done' or 'failed', 1)
local now = tonumber(ARGV[7])
local renewAt = tonumber(run[4])
if not renewAt or renewAt <= now then
  redis.call('EXPIRE', KEYS[1], ARGV[6])
  redis.call('EXPIRE', KEYS[2], ARGV[6])
  redis.call('HSET', KEYS[1], 'renewAt', now + ${TTL_RENEWED_EVERY_SECONDS})
end
return 1
`)

const readRecord = async (settings: Settings, key: string): Promise<unknown> =>
  verified(
    settings.keys,
    whereOf(settings, key),
    await settings.connection.call("GETRANGE", key, "0", String(RECORD_BYTES - 1))
  )

/** Where records are signed for: the key's name under the queue's meta key. */
const whereOf = (settings: Settings, key: string): string => key.slice(settings.metaKey.length)

/** Where the queue's latest run is signed for (a field of the meta hash, not a key of its own). */
const LATEST = "#latest-run"

/** A run's record and counts, or `undefined` when it is not recorded (never was, expired, forged). */
export interface RunState {
  readonly run: number
  readonly record: RunRecord
  readonly done: number
  readonly failed: number
  /** Persons enqueued: the record's positions in a named run, the persons set's size in the unnamed one. */
  readonly persons: number
}

/** Run `run`'s state, when its record verifies (and is run `id`, when given). */
export const readRun = async (settings: Settings, run: number, id?: string): Promise<RunState | undefined> => {
  const record = runRecordOf(await readRecord(settings, settings.runKey(run)))
  if (record === undefined || (id !== undefined && record.id !== id)) return undefined
  const { connection } = settings
  if (record.named) {
    const [done, failed] = await connection.call("HMGET", settings.countKey(run), "done", "failed") as [
      unknown,
      unknown
    ]
    return { run, record, done: countOf(done), failed: countOf(failed), persons: record.persons }
  }
  const [done, failed, persons] = await Promise.all(
    [settings.doneKey(run), settings.failedKey(run), settings.personsKey(run)].map((key) =>
      connection.call("SCARD", key)
    )
  )
  return { run, record, done: countOf(done), failed: countOf(failed), persons: countOf(persons) }
}

/** The run the queue started last, when its record verifies. */
export const latestRun = async (settings: Settings): Promise<RunState | undefined> => {
  const latest = inputRecordOf(
    verified(settings.keys, LATEST, await settings.connection.call("HGET", settings.metaKey, "run"))
  )
  return latest === undefined ? undefined : readRun(settings, latest.run, latest.id)
}

/** The run an input's enqueue went into, when recorded, still there, and that input's. */
export const runOfInput = async (settings: Settings, inputHash: string): Promise<RunState | undefined> => {
  const recorded: InputRecord | undefined = inputRecordOf(await readRecord(settings, settings.inputKey(inputHash)))
  if (recorded === undefined) return undefined
  const state = await readRun(settings, recorded.run, recorded.id)
  return state?.record.input === inputHash ? state : undefined
}

/** Writes a run's record, and keeps its other keys for another {@link RUN_TTL_SECONDS}. */
export const writeRun = async (settings: Settings, run: number, record: RunRecord): Promise<void> => {
  const key = settings.runKey(run)
  const ttl = String(RUN_TTL_SECONDS)
  await settings.connection.call("SET", key, signed(settings.keys, whereOf(settings, key), record), "EX", ttl)
  // Stryker disable next-line MethodExpression: the record was just set with this TTL: an EXPIRE of it too changes nothing
  for (const other of runKeysOf(settings, run).slice(1)) await settings.connection.call("EXPIRE", other, ttl)
}

/** Every key of run `run`: its record first. */
const runKeysOf = (settings: Settings, run: number): ReadonlyArray<string> => [
  settings.runKey(run),
  settings.countKey(run),
  settings.slotsKey(run),
  settings.personsKey(run),
  settings.doneKey(run),
  settings.failedKey(run)
]

/** The next run number: past the counter and the latest run, and past any number whose keys exist. */
const freeRunNumber = async (settings: Settings): Promise<number> => {
  const { connection } = settings
  const counted = Number(await connection.call("HINCRBY", settings.metaKey, "runs", "1"))
  let run = Math.max(Number.isSafeInteger(counted) ? counted : 0, ((await latestRun(settings))?.run ?? 0) + 1)
  for (let tried = 0; Number(await connection.call("EXISTS", ...runKeysOf(settings, run))) > 0; tried++) {
    if (tried === RUN_NUMBERS_TRIED) {
      throw new Error(`no free run number after ${RUN_NUMBERS_TRIED} taken ones: the queue's keys are not its own`)
    }
    run++
  }
  await connection.call("HSET", settings.metaKey, "runs", String(run))
  return run
}

/**
 * Starts a run of the input `inputHash`: a number no keys use, a new id, recorded as the input's
 * run and the queue's latest; the run {@link KEPT_RUNS} before it compacted if complete. Called
 * under the enqueue lock.
 */
export const startRun = async (
  settings: Settings,
  inputHash: string,
  terms: Pick<RunRecord, "operation" | "named">
): Promise<{ readonly run: number; readonly record: RunRecord }> => {
  const { connection, keys } = settings
  const run = await freeRunNumber(settings)
  const record: RunRecord = { ...terms, id: newRunId(), input: inputHash, persons: 0, finished: false }
  const ttl = String(RUN_TTL_SECONDS)
  await connection.call("HSET", settings.countKey(run), "id", record.id, "named", record.named ? "1" : "0")
  await writeRun(settings, run, record)
  const pointer = { run, id: record.id }
  const inputKey = settings.inputKey(inputHash)
  await connection.call("SET", inputKey, signed(keys, whereOf(settings, inputKey), pointer), "EX", ttl)
  await connection.call("HSET", settings.metaKey, "run", signed(keys, LATEST, pointer))
  if (run > KEPT_RUNS) await compact(settings, run - KEPT_RUNS)
  return { run, record }
}

/**
 * Removes a complete run's slots and person sets (its record and counts stay, for `status` and
 * `collect`, until they expire); a run with persons still at work is left whole.
 */
const compact = async (settings: Settings, run: number): Promise<void> => {
  const state = await readRun(settings, run)
  if (state === undefined || !state.record.finished || state.done + state.failed < state.persons) return
  await settings.connection.call("HSET", settings.countKey(run), "compacted", "1")
  await settings.connection.call("DEL", ...runKeysOf(settings, run).slice(2))
}

/** A job as the run's scripts know it: its id, its position, and its person's fingerprint. */
export interface JobMark {
  readonly id: string
  readonly index: number
  readonly person: Buffer
}

/** Which jobs of a chunk of `run` are there already (in the queue, or done in the run). */
export const presentOf = async (
  settings: Settings,
  run: number,
  named: boolean,
  jobs: ReadonlyArray<JobMark>
): Promise<Array<boolean>> => {
  const found = await present(
    settings.connection,
    [
      settings.slotsKey(run),
      settings.personsKey(run),
      settings.doneKey(run),
      ...jobs.map((job) => `${settings.prefix}:${settings.name}:${job.id}`)
    ],
    [
      named ? "1" : "0",
      ...jobs.map((job) => String(job.index)),
      ...jobs.map((job) => fingerprint(job.id)),
      ...jobs.map((job) => job.person)
    ]
  ) as ReadonlyArray<number>
  return jobs.map((_, i) => found[i] === 1)
}

/** Records the persons of a chunk of the unnamed run as enqueued (there already or added): one at least. */
export const enqueuedPersons = async (
  settings: Settings,
  run: number,
  persons: ReadonlyArray<Buffer>
): Promise<void> => {
  await settings.connection.call("SADD", settings.personsKey(run), ...persons)
  await settings.connection.call("EXPIRE", settings.personsKey(run), String(RUN_TTL_SECONDS))
}

/** Records that `job` of run `run` (`runId`) ended so (see {@link outcome}). */
export const recordOutcome = (
  settings: Settings,
  run: number,
  runId: string,
  job: JobMark,
  ended: Outcome
): Promise<unknown> =>
  outcome(
    settings.connection,
    [settings.countKey(run), settings.slotsKey(run), settings.doneKey(run), settings.failedKey(run)],
    [
      runId,
      String(job.index),
      fingerprint(job.id),
      job.person,
      ended,
      String(RUN_TTL_SECONDS),
      String(Math.floor(Date.now() / 1000))
    ]
  )
