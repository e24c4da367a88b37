/**
 * The queue's runs in Redis (see `runRecord` for what they are): read, started, and written by the
 * enqueue; each person's outcome recorded by the worker that finished it, in one atomic script, so
 * that the counts stay exact whatever dies when.
 *
 * Everything sits under the queue's own prefix, so `queue.obliterate()` removes it with the rest.
 * A run's keys expire 30 days after their last write, and a new run removes the run three before
 * it: a queue keeps its last three runs.
 */
import { createHash } from "node:crypto"
import type { IoredisClient, Settings } from "./queueSettings.js"
import {
  countOf,
  fingerprint,
  type Outcome,
  runNumberOf,
  type RunRecord,
  runRecordOf,
  signed,
  SLOT_BYTES,
  verified
} from "./runRecord.js"

/** How long a run's records are kept after their last write. */
export const RUN_TTL_SECONDS = 30 * 24 * 3600

/** Runs a queue keeps records of (a new run removes the oldest). */
export const KEPT_RUNS = 3

/** Longest record read back: ours are a few hundred bytes, whatever someone else wrote there. */
const RECORD_BYTES = 4096

/** A Lua script, sent whole the first time a Redis sees it and by its SHA-1 after. */
const script = (text: string) => {
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
 * For each job of a chunk (KEYS: the run's slots, then each job's key; ARGV: each position, then
 * each fingerprint), whether it is there already: its job is in the queue, or its slot says done.
 */
const present = script(`
local n = #KEYS - 1
local found = {}
for i = 1, n do
  local there = redis.call('EXISTS', KEYS[i + 1]) == 1
  if not there then
    local at = tonumber(ARGV[i]) * ${SLOT_BYTES}
    there = redis.call('GETRANGE', KEYS[1], at, at + ${SLOT_BYTES - 1}) == ARGV[n + i] .. 'D'
  end
  found[i] = there and 1 or 0
end
return found
`)

/**
 * Records how a position ended (KEYS: the run's record, counts and slots; ARGV: the position, the
 * job's fingerprint, D or F, the TTL), keeping the counts exact: a job recorded twice counts once,
 * a success is never undone, a failure retried into a success moves from one count to the other,
 * and a run no longer recorded (removed, expired) is left alone.
 */
const outcome = script(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local at = tonumber(ARGV[1]) * ${SLOT_BYTES}
local old = redis.call('GETRANGE', KEYS[3], at, at + ${SLOT_BYTES - 1})
local new = ARGV[2] .. ARGV[3]
if old == new then return 0 end
local was = string.sub(old, ${SLOT_BYTES}, ${SLOT_BYTES})
if string.sub(old, 1, ${SLOT_BYTES - 1}) == ARGV[2] and was == 'D' then return 0 end
if was == 'D' then redis.call('HINCRBY', KEYS[2], 'done', -1) end
if was == 'F' then redis.call('HINCRBY', KEYS[2], 'failed', -1) end
redis.call('SETRANGE', KEYS[3], at, new)
redis.call('HINCRBY', KEYS[2], ARGV[3] == 'D' and 'done' or 'failed', 1)
redis.call('EXPIRE', KEYS[2], ARGV[4])
redis.call('EXPIRE', KEYS[3], ARGV[4])
return 1
`)

const readRecord = async (settings: Settings, key: string, where: string): Promise<unknown> =>
  verified(
    settings.keys,
    where,
    await settings.connection.call("GETRANGE", key, "0", String(RECORD_BYTES - 1))
  )

/** Where records are signed for: the key's name under the queue's meta key. */
const whereOf = (settings: Settings, key: string): string => key.slice(settings.metaKey.length)

/** The run the queue started last, when its record verifies. */
export const latestRun = async (settings: Settings): Promise<number | undefined> => {
  const text = await settings.connection.call("HGET", settings.metaKey, "run")
  return runNumberOf(verified(settings.keys, ":run", text))
}

/** A run's record and counts, or `undefined` when it is not recorded (never was, expired, forged). */
export interface RunState {
  readonly run: number
  readonly record: RunRecord
  readonly done: number
  readonly failed: number
}

export const readRun = async (settings: Settings, run: number): Promise<RunState | undefined> => {
  const key = settings.runKey(run)
  const record = runRecordOf(await readRecord(settings, key, whereOf(settings, key)))
  if (record === undefined) return undefined
  const [done, failed] = await settings.connection.call("HMGET", settings.countKey(run), "done", "failed") as [
    unknown,
    unknown
  ]
  return { run, record, done: countOf(done), failed: countOf(failed) }
}

/** The run an input's enqueue went into, when recorded. */
export const runOfInput = async (settings: Settings, inputHash: string): Promise<number | undefined> => {
  const key = settings.inputKey(inputHash)
  return runNumberOf(await readRecord(settings, key, whereOf(settings, key)))
}

/** Writes a run's record, and keeps its counts and slots for another {@link RUN_TTL_SECONDS}. */
export const writeRun = async (settings: Settings, run: number, record: RunRecord): Promise<void> => {
  const key = settings.runKey(run)
  const ttl = String(RUN_TTL_SECONDS)
  await settings.connection.call("SET", key, signed(settings.keys, whereOf(settings, key), record), "EX", ttl)
  await settings.connection.call("EXPIRE", settings.countKey(run), ttl)
  await settings.connection.call("EXPIRE", settings.slotsKey(run), ttl)
}

/**
 * Starts a run of the input `inputHash`: the next number (never one whose records exist: a counter
 * someone set back is passed over), recorded as the input's run and the queue's latest; the run
 * {@link KEPT_RUNS} before it removed. Called under the enqueue lock.
 */
export const startRun = async (settings: Settings, inputHash: string, record: RunRecord): Promise<number> => {
  const { connection, keys } = settings
  const counted = Number(await connection.call("HINCRBY", settings.metaKey, "runs", "1"))
  const run = Math.max(Number.isSafeInteger(counted) ? counted : 0, ((await latestRun(settings)) ?? 0) + 1)
  await connection.call("HSET", settings.metaKey, "runs", String(run), "run", signed(keys, ":run", run))
  await connection.call("DEL", settings.countKey(run), settings.slotsKey(run))
  await writeRun(settings, run, record)
  const inputKey = settings.inputKey(inputHash)
  await connection.call("SET", inputKey, signed(keys, whereOf(settings, inputKey), run), "EX", String(RUN_TTL_SECONDS))
  if (run > KEPT_RUNS) {
    const old = run - KEPT_RUNS
    await connection.call("DEL", settings.runKey(old), settings.countKey(old), settings.slotsKey(old))
  }
  return run
}

/** Which jobs of a chunk of `run` are there already (in the queue, or done). */
export const presentOf = async (
  settings: Settings,
  run: number,
  jobs: ReadonlyArray<{ readonly id: string; readonly index: number }>
): Promise<Array<boolean>> => {
  const found = await present(
    settings.connection,
    [settings.slotsKey(run), ...jobs.map((job) => `${settings.prefix}:${settings.name}:${job.id}`)],
    [...jobs.map((job) => String(job.index)), ...jobs.map((job) => fingerprint(job.id))]
  ) as ReadonlyArray<number>
  return jobs.map((_, i) => found[i] === 1)
}

/** Records that the job `id` at `index` of `run` ended so (see {@link outcome}). */
export const recordOutcome = (
  settings: Settings,
  run: number,
  index: number,
  id: string,
  ended: Outcome
): Promise<unknown> =>
  outcome(
    settings.connection,
    [settings.runKey(run), settings.countKey(run), settings.slotsKey(run)],
    [String(index), fingerprint(id), ended, String(RUN_TTL_SECONDS)]
  )
