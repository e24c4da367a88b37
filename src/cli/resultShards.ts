/**
 * The command line's sink for queue workers, and its merge. Each worker process appends one
 * results line per person (the `batch` command's line: the input position, the outcome, the items
 * or the error; never the PersonUid) to a shard of its own in a shared directory; `collect` merges
 * the shards into one file, each person once, in input order.
 *
 * Delivery is at least once (a worker killed between writing a line and marking its job done
 * leaves the job to another), and a person whose job failed can be retried later: for each
 * position, `collect` keeps the first success, else the last failure. A line cut by a crash (no
 * newline at the end of a shard) is skipped.
 */
import { randomBytes } from "node:crypto"
import { type FileHandle, lstat, mkdir, readdir } from "node:fs/promises"
import { hostname } from "node:os"
import * as Path from "node:path"
import { createInterface } from "node:readline"
import { resultLine } from "./checkpoint.js"
import { createNew, openToRead, OWNER_ONLY } from "./files.js"

/** The directory of the shards: made owner-only when missing; refused when it is a link or not a directory. */
export const shardDirectory = async (directory: string): Promise<void> => {
  await mkdir(directory, { recursive: true, mode: 0o700 })
  const found = await lstat(directory)
  if (found.isSymbolicLink() || !found.isDirectory()) {
    throw Object.assign(new Error(`${directory} is not a directory`), { code: "ENOTDIR" })
  }
}

/** A shard of this process: a new file (never one that exists, a link included), owner-only. */
export const openShard = async (directory: string): Promise<{ readonly path: string; readonly handle: FileHandle }> => {
  await shardDirectory(directory)
  const name = `${hostname().replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40)}-${process.pid}-${
    randomBytes(4).toString("hex")
  }.ndjson`
  const path = Path.join(directory, name)
  return { path, handle: await createNew(path) }
}

/** A worker's result as the shard's line. */
export const shardLine = (
  index: number,
  outcome: { readonly items: ReadonlyArray<unknown> } | { readonly error: Record<string, unknown> }
): string =>
  "items" in outcome
    ? resultLine(index, { outcome: "Success", items: outcome.items })
    : resultLine(index, { outcome: "Failure", error: outcome.error })

/** What `collect` did. */
export interface Collected {
  readonly shards: number
  readonly persons: number
  readonly succeeded: number
  readonly failed: number
  /** Lines of a position already kept (at-least-once delivery, or a retried failure). */
  readonly duplicates: number
  /** Positions below the highest one that no shard holds. */
  readonly missing: number
  /** Lines that are not results (a cut last line, a stranger's). */
  readonly unreadable: number
}

const LINE = /^\{"index":(\d+),"outcome":"(Success|Failure)"/

/**
 * Where each position's kept line is, as growable typed arrays: 15 bytes a person, so that a
 * million persons take 15 MB whatever their lines hold.
 */
class Positions {
  shard = new Uint16Array(1024)
  offset = new Float64Array(1024)
  length = new Uint32Array(1024)
  /** 0: none; 1: a failure; 2: a success. */
  kind = new Uint8Array(1024)
  highest = -1

  private grow(index: number): void {
    let size = this.kind.length
    while (size <= index) size *= 2
    if (size === this.kind.length) return
    const grown = <T extends Uint16Array | Float64Array | Uint32Array | Uint8Array>(old: T, make: (n: number) => T) => {
      const next = make(size)
      next.set(old as never)
      return next
    }
    this.shard = grown(this.shard, (n) => new Uint16Array(n))
    this.offset = grown(this.offset, (n) => new Float64Array(n))
    this.length = grown(this.length, (n) => new Uint32Array(n))
    this.kind = grown(this.kind, (n) => new Uint8Array(n))
  }

  /** Records a line; whether the position had one already. */
  record(index: number, kind: 1 | 2, shard: number, offset: number, length: number): boolean {
    this.grow(index)
    const before = this.kind[index]!
    this.highest = Math.max(this.highest, index)
    // The first success stays; a failure is replaced by a success or by a later failure.
    if (before !== 2) {
      this.kind[index] = kind
      this.shard[index] = shard
      this.offset[index] = offset
      this.length[index] = length
    }
    return before !== 0
  }
}

/** A shard's lines with their byte offsets; a last line without its newline is not given. */
async function* linesWithOffsets(handle: FileHandle): AsyncGenerator<readonly [string, number, number]> {
  // latin1: a character per byte, so lengths are byte counts (results lines escape non-ASCII anyway).
  const lines = createInterface({
    input: handle.createReadStream({ encoding: "latin1", autoClose: false }),
    crlfDelay: Infinity
  })
  const { size } = await handle.stat()
  let offset = 0
  for await (const line of lines) {
    const end = offset + line.length
    if (end < size) yield [line, offset, line.length]
    offset = end + 1
  }
}

/** Merges every `*.ndjson` shard of `directory` into `out` (created new, owner-only), in input order. */
export const collect = async (directory: string, out: string): Promise<Collected> => {
  const names = (await readdir(directory)).filter((name) => name.endsWith(".ndjson")).sort()
  if (names.length > 65_535) throw Object.assign(new Error("more than 65535 shards"), { code: "E2BIG" })
  const positions = new Positions()
  const shards: Array<FileHandle> = []
  let duplicates = 0
  let unreadable = 0
  try {
    for (const name of names) {
      const handle = await openToRead(Path.join(directory, name))
      shards.push(handle)
      for await (const [line, offset, length] of linesWithOffsets(handle)) {
        const match = LINE.exec(line)
        if (match === null) {
          unreadable++
          continue
        }
        if (positions.record(Number(match[1]), match[2] === "Success" ? 2 : 1, shards.length - 1, offset, length)) {
          duplicates++
        }
      }
    }
    const output = await createNew(out)
    let succeeded = 0
    let failed = 0
    let missing = 0
    try {
      let pending: Array<Buffer> = []
      let pendingBytes = 0
      for (let index = 0; index <= positions.highest; index++) {
        const kind = positions.kind[index]!
        if (kind === 0) {
          missing++
          continue
        }
        if (kind === 2) succeeded++
        else failed++
        const line = Buffer.alloc(positions.length[index]! + 1)
        await shards[positions.shard[index]!]!.read(line, 0, line.length - 1, positions.offset[index]!)
        line[line.length - 1] = 0x0a
        pending.push(line)
        pendingBytes += line.length
        if (pendingBytes > 1 << 20) {
          await output.write(Buffer.concat(pending))
          pending = []
          pendingBytes = 0
        }
      }
      await output.write(Buffer.concat(pending))
      await output.chmod(OWNER_ONLY)
    } finally {
      await output.close()
    }
    return {
      shards: names.length,
      persons: succeeded + failed,
      succeeded,
      failed,
      duplicates,
      missing,
      unreadable
    }
  } finally {
    for (const handle of shards) await handle.close()
  }
}

/** Opens a shard for appending lines, one write at a time so that each line lands whole. */
export const appender = (handle: FileHandle) => {
  let last: Promise<unknown> = Promise.resolve()
  return (line: string): Promise<void> => {
    const next = last.then(() => handle.write(line))
    last = next.catch(() => undefined)
    return next.then(() => undefined)
  }
}
