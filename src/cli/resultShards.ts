/**
 * The command line's sink for queue workers, and its merge. Each worker process appends one
 * results line per person (the `batch` command's line, with the operation read: the input
 * position, the outcome, the items or the error; never the PersonUid) to a shard of its own for
 * each run, in a shared directory; `collect` merges a run's shards into one file, each person once,
 * in input order, and says who is missing.
 *
 * A line is done only once it is whole on disk (`wholeLines`, durable): the job is marked done in
 * Redis after that. Delivery is at least once (a worker killed between writing a line and marking
 * its job done leaves the job to another), and a person whose job failed can be retried later: for
 * each position, `collect` keeps the first success, else the last failure. Every line is checked
 * whole (`JsonSyntax`): one cut short, two glued together, a stranger's, are counted unreadable.
 */
import { randomBytes } from "node:crypto"
import { readSync, writeSync } from "node:fs"
import { type FileHandle, lstat, mkdir, readdir, unlink } from "node:fs/promises"
import { hostname } from "node:os"
import * as Path from "node:path"
import { resultLine } from "../../core/checkpoint.js"
import { createNew, openToRead, OWNER_ONLY } from "../../core/files.js"
import { JsonSyntax } from "../../core/jsonSyntax.js"
import { wholeLines } from "../../core/wholeLines.js"

/**
 * The directory of the shards, as an absolute path without a trailing slash (with one, `lstat`
 * would follow a link): made owner-only when missing; refused when it is a link or not a directory.
 */
export const shardDirectory = async (directory: string): Promise<string> => {
  const path = Path.resolve(directory)
  await mkdir(path, { recursive: true, mode: 0o700 })
  // Not a directory to lstat: a link (mkdir followed it) as much as anything else.
  if (!(await lstat(path)).isDirectory()) {
    throw Object.assign(new Error(`${path} is not a directory`), { code: "ENOTDIR" })
  }
  return path
}

/**
 * What starts the name of a run's shards: the queue, the run's number and its id (a number comes
 * again when a queue's records are lost; an id never), so that shards of other queues or runs in the
 * same directory are never taken for this run's.
 */
export const runPrefix = (queue: string, run: number, runId?: string): string => `${queue}.run-${run}-${runId ?? ""}`

/** A shard's name: its run, then this process (host, pid, and a random part). */
const SHARD_NAME = /^([A-Za-z0-9_.-]{1,64})\.run-(\d{1,15})-([0-9a-f]{16})\.[A-Za-z0-9_.-]+\.ndjson$/

/** A shard of this process for a run: a new file (never one that exists, a link included), owner-only. */
export const openShard = async (directory: string, queue: string, run: number, runId: string) => {
  const process_ = `${hostname().replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40)}-${process.pid}-${
    randomBytes(4).toString("hex")
  }`
  const path = Path.join(await shardDirectory(directory), `${runPrefix(queue, run, runId)}.${process_}.ndjson`)
  const handle = await createNew(path)
  // Durable: a line reported written is on disk, since its job then leaves Redis.
  return { path, handle, lines: wholeLines(handle, { durable: true }) }
}

/**
 * A worker's result as the shard's line: `batch`'s line with the operation read, and a failure's
 * time (`collect` keeps the latest failure of a person, whichever worker's shard holds it).
 */
export const shardLine = (
  index: number,
  operation: string,
  outcome: { readonly items: ReadonlyArray<unknown> } | { readonly error: Record<string, unknown>; readonly at: number }
): string =>
  "items" in outcome
    ? resultLine(index, { outcome: "Success", operation, items: outcome.items })
    : resultLine(index, { outcome: "Failure", operation, at: outcome.at, error: outcome.error })

/** What `collect` did. */
export interface Collected {
  /** Shards of the run read. */
  readonly shards: number
  /** Persons the run enqueued: the positions expected. */
  readonly persons: number
  readonly succeeded: number
  readonly failed: number
  /** Positions no readable line holds. */
  readonly missing: number
  /** Lines of a position already kept (at-least-once delivery, or a retried failure). */
  readonly duplicates: number
  /**
   * Whole lines of the run naming a position past its size: the size given (or recorded) is not
   * the run's. None may be: `collect` is then wrong about who is missing.
   */
  readonly beyond: number
  /** Lines that are not whole results: cut short, two glued into one, a stranger's, another operation's. */
  readonly unreadable: number
  /** The operation the lines read. */
  readonly operation: string | undefined
}

/** What starts a results line: its position, outcome and operation, and a failure's time. */
const LINE = /^\{"index":(\d+),"outcome":"(Success|Failure)","operation":"([A-Za-z0-9_.-]{1,64})"(?:,"at":(\d{1,16}))?/

/** Bytes of a line's start kept to read it: {@link LINE} fits in them. */
const HEAD_BYTES = 160

/** Bytes read from a shard at a time. */
const READ_BYTES = 1 << 20

/** Bytes read before the event loop is let run (a SIGTERM heard) while a long merge goes on. */
const YIELD_EVERY_BYTES = 16 << 20

const yielded = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** The line kept for each position, in typed arrays (29 bytes a person), and the counts as lines come. */
class Kept {
  /** 0: none yet; 1: a failure; 2: a success. */
  readonly kind: Uint8Array
  readonly shard: Uint32Array
  readonly offset: Float64Array
  readonly length: Float64Array
  /** A kept failure's time; then, once read, where each kept line goes in the merged file. */
  readonly at: Float64Array
  duplicates = 0
  beyond = 0
  unreadable = 0
  operation: string | undefined

  constructor(readonly persons: number, operation: string | undefined) {
    this.operation = operation
    this.kind = new Uint8Array(persons)
    this.shard = new Uint32Array(persons)
    this.offset = new Float64Array(persons)
    this.length = new Float64Array(persons)
    this.at = new Float64Array(persons)
  }

  /**
   * A whole line read (its head, where it is): the first success of a position is kept, else its
   * latest failure (by the time it records; of two at one time, the one read last).
   */
  line(head: string, shard: number, offset: number, length: number): void {
    const match = LINE.exec(head)
    if (match === null || (this.operation ??= match[3]) !== match[3]) {
      this.unreadable++
      return
    }
    const index = Number(match[1])
    if (index >= this.persons) {
      this.beyond++
      return
    }
    const kind = match[2] === "Success" ? 2 : 1
    const at = Number(match[4] ?? 0)
    const before = this.kind[index]!
    if (before !== 0) this.duplicates++
    if (before === 2 || (before === 1 && kind === 1 && at < this.at[index]!)) return
    this.kind[index] = kind
    this.shard[index] = shard
    this.offset[index] = offset
    this.length[index] = length
    this.at[index] = at
  }
}

/**
 * Reads every line of the shard open at `fd`: each whole and well-formed one to `kept`, with its
 * head; the others (and a last line without its newline, cut by a crash) counted unreadable. No
 * line is held whole, however long.
 */
const readShard = async (
  fd: number,
  shard: number,
  kept: Kept,
  buffer: Buffer,
  signal: AbortSignal,
  yieldEvery: number
) => {
  const head = Buffer.alloc(HEAD_BYTES)
  let headBytes = 0
  let syntax = new JsonSyntax()
  let whole = true
  let start = 0
  let position = 0
  for (
    let read = readSync(fd, buffer, 0, buffer.length, 0);
    read > 0;
    read = readSync(fd, buffer, 0, buffer.length, position)
  ) {
    // What this read gave: past it, the buffer holds an earlier read's bytes.
    const chunk = buffer.subarray(0, read)
    let from = 0
    // Stryker disable next-line EqualityOperator: at from === read no newline is found, and the loop breaks having fed nothing
    while (from < read) {
      const newline = chunk.indexOf(0x0a, from)
      const end = newline === -1 ? read : newline
      // The head takes what room it has left (copy stops at its end).
      headBytes += chunk.copy(head, headBytes, from, end)
      whole = whole && syntax.feed(chunk, from, end)
      if (end === read) break
      const length = position + end - start
      if (whole && syntax.end()) kept.line(head.toString("latin1", 0, headBytes), shard, start, length)
      else kept.unreadable++
      headBytes = 0
      syntax = new JsonSyntax()
      whole = true
      from = end + 1
      start = position + from
    }
    position += read
    if (position % yieldEvery < read) await interruptible(signal)
  }
  if (position > start) kept.unreadable++
}

/** Lets the event loop run, then stops if the merge was interrupted (SIGTERM). */
const interruptible = async (signal: AbortSignal): Promise<void> => {
  await yielded()
  if (signal.aborted) throw Object.assign(new Error("interrupted"), { code: "EINTR" })
}

/** Writes all of `bytes` to `fd` at `position` (a write may land short). */
const writeAllAt = (fd: number, bytes: Uint8Array, position: number): void => {
  for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done, position + done)
}

/** Opens a shard to read, its name in the error when it cannot be (a link, a FIFO, gone). */
const openShardToRead = (path: string): Promise<FileHandle> =>
  openToRead(path).catch((error: NodeJS.ErrnoException) => {
    throw Object.assign(new Error(`${Path.basename(path)}: ${error.code ?? "error"}`), {
      code: error.code === "ELOOP" ? "a symbolic link" : error.code === "ENOTREG" ? "not a regular file" : error.code,
      shard: Path.basename(path)
    })
  })

/** Bytes of the merged file assembled in memory before each write. */
const REGION_BYTES = 16 << 20

/**
 * Where each kept line goes in the merged file (stored in `kept.at`, the failures' times being of
 * no more use), the kept positions grouped by shard (each group in position order), and the size.
 */
const plan = (kept: Kept, shards: number) => {
  const starts = new Uint32Array(shards + 1)
  let size = 0
  for (let index = 0; index < kept.persons; index++) {
    if (kept.kind[index] === 0) continue
    starts[kept.shard[index]! + 1]!++
    kept.at[index] = size
    size += kept.length[index]! + 1
  }
  // Stryker disable next-line EqualityOperator: starts[shards + 1] is past the typed array, so a write there is dropped
  for (let shard = 0; shard < shards; shard++) starts[shard + 1]! += starts[shard]!
  const order = new Uint32Array(starts[shards]!)
  const filled = starts.slice(0, shards)
  // Stryker disable next-line EqualityOperator: at index === persons, kept.shard[index] is undefined, which indexes neither filled nor order
  for (let index = 0; index < kept.persons; index++) {
    if (kept.kind[index] !== 0) order[filled[kept.shard[index]!]!++] = index
  }
  return { order, starts, size }
}

/**
 * The kept lines copied into `fd`, in order: the merged file is assembled a region at a time in
 * memory, each shard's lines for the region read through a window (a shard's lines come mostly in
 * order, so each is read forward), then written at once. One shard open at a time, however many
 * there are; memory bounded by the region and the window, whatever the lines.
 */
const writeMerged = async (
  paths: ReadonlyArray<string>,
  kept: Kept,
  fd: number,
  window: Buffer,
  signal: AbortSignal,
  regionBytes: number
): Promise<void> => {
  const { order, size, starts } = plan(kept, paths.length)
  const region = Buffer.allocUnsafe(Math.min(regionBytes, size))
  // Per shard, the next of its kept lines (in position order) not yet wholly copied.
  const next = starts.slice(0, paths.length)
  for (let from = 0; from < size; from += region.length) {
    const to = Math.min(from + region.length, size)
    for (const [shard, path] of paths.entries()) {
      if (next[shard] === starts[shard + 1] || kept.at[order[next[shard]!]!]! >= to) continue
      const handle = await openShardToRead(path)
      try {
        let windowStart = 0
        let windowEnd = 0
        for (; next[shard]! < starts[shard + 1]!; next[shard]!++) {
          const index = order[next[shard]!]!
          const at = kept.at[index]!
          // The line and its newline, the part of it in this region (a long line spans several).
          const last = at + kept.length[index]! + 1
          const end = Math.min(last, to)
          for (let out = Math.max(at, from); out < end;) {
            const offset = kept.offset[index]! + out - at
            if (offset < windowStart || offset >= windowEnd) {
              // A quarter of the window behind: the next line by position may stand a little before.
              windowStart = Math.max(0, offset - (window.length >> 2))
              const read = readSync(handle.fd, window, 0, window.length, windowStart)
              windowEnd = windowStart + read
              if (windowEnd <= offset) {
                throw Object.assign(new Error("a shard was cut while it was read"), { code: "ESHARD" })
              }
            }
            out += window.copy(
              region,
              out - from,
              offset - windowStart,
              Math.min(windowEnd, offset + end - out) - windowStart
            )
          }
          // Not wholly copied (or not begun: it starts past the region): the rest is the next region's.
          if (last > to) break
        }
      } finally {
        await handle.close()
      }
    }
    writeAllAt(fd, region.subarray(0, to - from), from)
    await interruptible(signal)
  }
}

/** The run's shards in `directory`: those of the queue and run named, of one run id. */
const shardsOf = async (directory: string, queue: string, run: number, runId: string | undefined) => {
  const names = (await readdir(directory)).filter((name) =>
    name.startsWith(runPrefix(queue, run, runId)) && SHARD_NAME.test(name)
  )
  // Read in name order, whatever order the directory lists them in: which line of a person is kept hangs on it.
  // Stryker disable next-line MethodExpression: on Unix, libuv's scandir already returns a directory's names sorted
  names.sort()
  const ids = new Set(names.map((name) => SHARD_NAME.exec(name)![3]))
  if (ids.size > 1) {
    throw Object.assign(new Error("shards of more than one run"), {
      code: "ERUNS",
      runs: [...ids].sort()
    })
  }
  return names
}

/**
 * Merges the shards of run `run` of `queue` in `directory` into `out` (created new, owner-only):
 * each of the run's `persons` positions once, in input order; the counts say who is missing and
 * what was unreadable. Failures name where: `out: true` on those of the merged file. Interrupted
 * (`signal`), it stops and removes what it wrote.
 */
export const collect = async (
  directory: string,
  out: string,
  { bytes, created, operation, persons, queue, run, runId, signal = new AbortController().signal }: {
    readonly queue: string
    readonly run: number
    /** The run's id, when known (from Redis): without it, the shards must all be of one run of that number. */
    readonly runId?: string | undefined
    readonly persons: number
    /** The run's operation, when known: lines of another are unreadable (else the first line's is taken). */
    readonly operation?: string | undefined
    readonly signal?: AbortSignal | undefined
    /** Told once `out` is created (its caller removes it when the merge is interrupted). */
    readonly created?: (() => void) | undefined
    /** The reading, region and yielding sizes (tests make them small, so that lines cross them). */
    readonly bytes?: { readonly read: number; readonly region: number; readonly yieldEvery: number } | undefined
  }
): Promise<Collected> => {
  const names = await shardsOf(directory, queue, run, runId)
  const paths = names.map((name) => Path.join(directory, name))
  const kept = new Kept(persons, operation)
  const buffer = Buffer.allocUnsafe(bytes?.read ?? READ_BYTES)
  for (const [shard, path] of paths.entries()) {
    const handle = await openShardToRead(path)
    try {
      await readShard(handle.fd, shard, kept, buffer, signal, bytes?.yieldEvery ?? YIELD_EVERY_BYTES)
    } finally {
      await handle.close()
    }
  }
  const output = await createNew(out).catch((error: NodeJS.ErrnoException) => {
    throw Object.assign(error, { out: true })
  })
  created?.()
  try {
    await writeMerged(paths, kept, output.fd, buffer, signal, bytes?.region ?? REGION_BYTES)
    await output.chmod(OWNER_ONLY)
  } catch (error) {
    // A merged file cut short (a full disk, an interruption) is no file at all.
    await output.close()
    await unlink(out).catch(() => undefined)
    throw Object.assign(error as object, { out: (error as { code?: string }).code !== "ESHARD" })
  }
  await output.close()
  let succeeded = 0
  let failed = 0
  for (const kind of kept.kind) {
    if (kind === 2) succeeded++
    else if (kind === 1) failed++
  }
  return {
    shards: names.length,
    persons,
    succeeded,
    failed,
    missing: persons - succeeded - failed,
    duplicates: kept.duplicates,
    beyond: kept.beyond,
    unreadable: kept.unreadable,
    operation: kept.operation
  }
}
