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
import { JsonSyntax } from "../internal/jsonSyntax.js"
import { resultLine } from "./checkpoint.js"
import { createNew, openToRead, OWNER_ONLY } from "./files.js"
import { wholeLines } from "./wholeLines.js"

/**
 * The directory of the shards, as an absolute path without a trailing slash (with one, `lstat`
 * would follow a link): made owner-only when missing; refused when it is a link or not a directory.
 */
export const shardDirectory = async (directory: string): Promise<string> => {
  const path = Path.resolve(directory)
  await mkdir(path, { recursive: true, mode: 0o700 })
  const found = await lstat(path)
  if (found.isSymbolicLink() || !found.isDirectory()) {
    throw Object.assign(new Error(`${path} is not a directory`), { code: "ENOTDIR" })
  }
  return path
}

/** The end of a shard's name: which run its lines belong to. */
const runSuffix = (run: number): string => `.run-${run}.ndjson`

/** A shard of this process for `run`: a new file (never one that exists, a link included), owner-only. */
export const openShard = async (directory: string, run: number) => {
  const path = Path.join(
    await shardDirectory(directory),
    `${hostname().replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40)}-${process.pid}-${randomBytes(4).toString("hex")}${
      runSuffix(run)
    }`
  )
  const handle = await createNew(path)
  // Durable: a line reported written is on disk, since its job then leaves Redis.
  return { path, handle, lines: wholeLines(handle, { durable: true }) }
}

/** A worker's result as the shard's line. */
export const shardLine = (
  index: number,
  operation: string,
  outcome: { readonly items: ReadonlyArray<unknown> } | { readonly error: Record<string, unknown> }
): string =>
  "items" in outcome
    ? resultLine(index, { outcome: "Success", operation, items: outcome.items })
    : resultLine(index, { outcome: "Failure", operation, error: outcome.error })

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
   * Lines that are not whole results of this run: cut short, two glued into one, a stranger's, a
   * position beyond the run's, another operation's.
   */
  readonly unreadable: number
  /** The operation the lines read. */
  readonly operation: string | undefined
}

/** What starts a results line: its position, outcome and operation. */
const LINE = /^\{"index":(\d+),"outcome":"(Success|Failure)","operation":"([A-Za-z0-9_.-]{1,64})"/

/** Bytes of a line's start kept to read it: {@link LINE} fits in them. */
const HEAD_BYTES = 128

/** Bytes read from a shard at a time. */
const READ_BYTES = 1 << 20

/** The line kept for each position, in typed arrays (17 bytes a person), and the counts as lines come. */
class Kept {
  readonly kind: Uint8Array
  readonly shard: Uint32Array
  readonly offset: Float64Array
  readonly length: Float64Array
  duplicates = 0
  unreadable = 0
  operation: string | undefined

  constructor(readonly persons: number, operation: string | undefined) {
    this.operation = operation
    /** 0: none yet; 1: a failure; 2: a success. */
    this.kind = new Uint8Array(persons)
    this.shard = new Uint32Array(persons)
    this.offset = new Float64Array(persons)
    this.length = new Float64Array(persons)
  }

  /** A whole line read (its head, where it is): the first success of a position is kept, else the last failure. */
  line(head: string, shard: number, offset: number, length: number): void {
    const match = LINE.exec(head)
    const index = match === null ? -1 : Number(match[1])
    if (match === null || index >= this.persons || (this.operation ??= match[3]) !== match[3]) {
      this.unreadable++
      return
    }
    const kind = match[2] === "Success" ? 2 : 1
    const before = this.kind[index]!
    if (before !== 0) this.duplicates++
    if (before === 2) return
    this.kind[index] = kind
    this.shard[index] = shard
    this.offset[index] = offset
    this.length[index] = length
  }
}

/**
 * Reads every line of the shard open at `fd`: each whole and well-formed one to `kept`, with its
 * head; the others (and a last line without its newline, cut by a crash) counted unreadable. No
 * line is held whole, however long.
 */
const readShard = (fd: number, shard: number, kept: Kept, buffer: Buffer): void => {
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
    let from = 0
    while (from < read) {
      const newline = buffer.indexOf(0x0a, from)
      const end = newline === -1 || newline >= read ? read : newline
      if (headBytes < HEAD_BYTES) {
        headBytes += buffer.copy(head, headBytes, from, Math.min(end, from + HEAD_BYTES - headBytes))
      }
      whole = whole && syntax.feed(buffer, from, end)
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
  }
  if (position > start) kept.unreadable++
}

/** Most shards kept open at once while the merged file is written (the rest reopened as needed). */
const OPEN_SHARDS = 128
/** Bytes of each open shard read ahead: its lines come mostly in order. */
const WINDOW_BYTES = 256 * 1024
/** Bytes of the merged file gathered before a write. */
const OUT_BYTES = 1 << 20

/** Writes all of `bytes` to `fd` (a write may land short). */
const writeAll = (fd: number, bytes: Uint8Array): void => {
  for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done)
}

/** Opens a shard to read, its name in the error when it cannot be (a link, a FIFO, gone). */
const openShardToRead = (path: string): Promise<FileHandle> =>
  openToRead(path).catch((error: NodeJS.ErrnoException) => {
    throw Object.assign(new Error(`${Path.basename(path)}: ${error.code ?? "error"}`), {
      code: error.code === "ELOOP" ? "a symbolic link" : error.code === "ENOTREG" ? "not a regular file" : error.code,
      shard: Path.basename(path)
    })
  })

/** The shards' lines copied into `fd` in the order of positions, read through a window per shard. */
const writeMerged = async (paths: ReadonlyArray<string>, kept: Kept, fd: number): Promise<void> => {
  const windows = new Map<number, { handle: FileHandle; buffer: Buffer; start: number; end: number }>()
  const out = Buffer.alloc(OUT_BYTES)
  let used = 0
  const put = (bytes: Uint8Array) => {
    if (used + bytes.length > out.length) {
      writeAll(fd, out.subarray(0, used))
      used = 0
    }
    if (bytes.length > out.length) writeAll(fd, bytes)
    else {
      out.set(bytes, used)
      used += bytes.length
    }
  }
  const windowOf = async (shard: number) => {
    let window = windows.get(shard)
    if (window === undefined) {
      let buffer: Buffer | undefined
      if (windows.size >= OPEN_SHARDS) {
        const [oldest, evicted] = windows.entries().next().value!
        windows.delete(oldest)
        await evicted.handle.close()
        buffer = evicted.buffer
      }
      const handle = await openShardToRead(paths[shard]!)
      window = { handle, buffer: buffer ?? Buffer.allocUnsafe(WINDOW_BYTES), start: 0, end: 0 }
      windows.set(shard, window)
    }
    return window
  }
  try {
    for (let index = 0; index < kept.persons; index++) {
      if (kept.kind[index] === 0) continue
      const window = await windowOf(kept.shard[index]!)
      const offset = kept.offset[index]!
      const end = offset + kept.length[index]!
      for (let at = offset; at < end;) {
        if (at < window.start || at >= window.end) {
          const read = readSync(window.handle.fd, window.buffer, 0, window.buffer.length, at)
          if (read === 0) throw Object.assign(new Error("a shard was cut while it was read"), { code: "ESHARD" })
          window.start = at
          window.end = at + read
        }
        const to = Math.min(end, window.end)
        put(window.buffer.subarray(at - window.start, to - window.start))
        at = to
      }
      put(NEWLINE)
    }
    writeAll(fd, out.subarray(0, used))
  } finally {
    for (const { handle } of windows.values()) await handle.close()
  }
}

const NEWLINE = Buffer.from("\n")

/**
 * Merges the shards of `run` in `directory` into `out` (created new, owner-only): each of the run's
 * `persons` positions once, in input order; the counts say who is missing and what was unreadable.
 * Failures name where: `out: true` on those of the merged file.
 */
export const collect = async (
  directory: string,
  out: string,
  { operation, persons, run }: {
    readonly run: number
    readonly persons: number
    /** The run's operation, when known: lines of another are unreadable (else the first line's is taken). */
    readonly operation?: string | undefined
  }
): Promise<Collected> => {
  const names = (await readdir(directory)).filter((name) => name.endsWith(runSuffix(run))).sort()
  const paths = names.map((name) => Path.join(directory, name))
  const kept = new Kept(persons, operation)
  const buffer = Buffer.alloc(READ_BYTES)
  for (const [shard, path] of paths.entries()) {
    const handle = await openShardToRead(path)
    try {
      readShard(handle.fd, shard, kept, buffer)
    } finally {
      await handle.close()
    }
  }
  const output = await createNew(out).catch((error: NodeJS.ErrnoException) => {
    throw Object.assign(error, { out: true })
  })
  try {
    await writeMerged(paths, kept, output.fd)
    await output.chmod(OWNER_ONLY)
  } catch (error) {
    // A merged file cut short (a full disk) is no file at all.
    await output.close()
    await unlink(out).catch(() => undefined)
    throw Object.assign(error as object, { out: true })
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
    unreadable: kept.unreadable,
    operation: kept.operation
  }
}
