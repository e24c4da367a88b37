/**
 * What a BullMQ queue on a real Redis says of itself, read as it happens: when the fleet's pause
 * was set, and how many jobs were taken while it held. Tests of a pause judge by these events,
 * not by time since the first 429 (a worker on a busy machine may take a while to set it).
 */
import { Redis } from "ioredis"

/** The limiter's own counter lives in the same key; a pause holds BullMQ's MAX_SAFE_INTEGER. */
const PAUSED = String(Number.MAX_SAFE_INTEGER)

/**
 * When queue `queue`'s pause (BullMQ's limiter key, 2 s) was set, bounded from its remaining time
 * as Redis reports it: polled until it appears (a later 429 that renews it moves it later).
 */
export const fleetPause = async (
  port: number,
  queue: string,
  millis = 2_000
): Promise<{ readonly setNoEarlierThan: number; readonly setNoLaterThan: number }> => {
  const client = new Redis(port, "127.0.0.1")
  try {
    for (const giveUp = Date.now() + 30_000; Date.now() < giveUp;) {
      const asked = Date.now()
      const [held, left] = (await client.eval(
        "return { redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]) }",
        1,
        `bull:${queue}:limiter`
      )) as [string | null, number]
      const answered = Date.now()
      if (held === PAUSED && left > 0) {
        return { setNoEarlierThan: asked - (millis - left), setNoLaterThan: answered - (millis - left) }
      }
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    throw new Error("the fleet was never paused")
  } finally {
    client.disconnect()
  }
}

/**
 * How many jobs BullMQ moved to active in queue `queue` from `from` to `to` (epoch ms: Redis's
 * clock is this machine's), read from the queue's events as they come (the stream is trimmed, so
 * not afterwards).
 */
export const jobsTakenBetween = async (port: number, queue: string, from: number, to: number): Promise<number> => {
  const client = new Redis(port, "127.0.0.1")
  try {
    let cursor = `${from}-0`
    let taken = 0
    while (Date.now() < to + 30_000) {
      const read = await client.xread("BLOCK", 100, "STREAMS", `bull:${queue}:events`, cursor)
      for (const [, entries] of read ?? []) {
        for (const [id, fields] of entries) {
          if (Number(id.split("-")[0]) >= to) return taken
          cursor = id
          if (fields[0] === "event" && fields[1] === "active") taken++
        }
      }
    }
    throw new Error("the queue's events stopped before the pause ended")
  } finally {
    client.disconnect()
  }
}

/**
 * When (epoch ms) BullMQ took jobs back from a worker that stopped renewing their locks in queue
 * `queue`, from `from` on: the time of each `stalled` event, read as they come until `until` (or
 * once `done` says so).
 */
export const stalledBetween = async (
  port: number,
  queue: string,
  from: number,
  until: number,
  done: () => boolean = () => false
): Promise<ReadonlyArray<number>> => {
  const client = new Redis(port, "127.0.0.1")
  try {
    let cursor = `${from}-0`
    const stalled: Array<number> = []
    while (Date.now() < until && !done()) {
      const read = await client.xread("BLOCK", 100, "STREAMS", `bull:${queue}:events`, cursor)
      for (const [, entries] of read ?? []) {
        for (const [id, fields] of entries) {
          cursor = id
          if (fields[0] === "event" && fields[1] === "stalled") stalled.push(Number(id.split("-")[0]))
        }
      }
    }
    return stalled
  } finally {
    client.disconnect()
  }
}
