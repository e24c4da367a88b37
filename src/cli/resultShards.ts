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

/** What starts a results line: its position (15 digits at most: a safe integer) and its outcome. */
const LINE = /^\{"index":(\d{1,15}),"outcome":"(Success|Failure)"/

/** Bytes of a line's start kept to read it: {@link LINE} fits in them. */
const HEAD_BYTES = 64

/**
 * Every results line read, where it is and what it says, in growable typed arrays: 29 bytes a
 * line, and 4 more to sort them, whatever the line holds and whatever position it claims (a hostile shard's index of
 * 10^15 costs what any other line does).
 */
class Lines {
  count = 0
  index = new Float64Array(1024)
  offset = new Float64Array(1024)
  length = new Float64Array(1024)
  shard = new Uint32Array(1024)
  /** 1: a failure; 2: a success. */
  kind = new Uint8Array(1024)

  add(index: number, kind: 1 | 2, shard: number, offset: number, length: number): void {
    if (this.count === this.kind.length) {
      const size = this.count * 2
      const grown = <T extends Float64Array | Uint32Array | Uint8Array>(old: T, next: T): T => {
        next.set(old as never)
        return next
      }
      this.index = grown(this.index, new Float64Array(size))
      this.offset = grown(this.offset, new Float64Array(size))
      this.length = grown(this.length, new Float64Array(size))
      this.shard = grown(this.shard, new Uint32Array(size))
      this.kind = grown(this.kind, new Uint8Array(size))
    }
    const at = this.count++
    this.index[at] = index
    this.kind[at] = kind
    this.shard[at] = shard
    this.offset[at] = offset
    this.length[at] = length
  }

  /**
   * The lines in the order they are kept: by position; for each, the first success (in the order
   * read), else the last failure. The first line of each position is the one kept.
   */
  order(): Uint32Array {
    const order = new Uint32Array(this.count)
    for (let i = 0; i < this.count; i++) order[i] = i
    return order.sort((a, b) =>
      this.index[a]! - this.index[b]! || this.kind[b]! - this.kind[a]! || (this.kind[a] === 2 ? a - b : b - a)
    )
  }
}

/**
 * A shard's whole lines: for each, its start (the first {@link HEAD_BYTES} bytes, as latin1), its
 * offset and its length. Read in chunks: no line is held whole, however long. A last line without
 * its newline (cut by a crash) is not given.
 */
async function* linesOf(handle: FileHandle): AsyncGenerator<readonly [string, number, number]> {
  let head: Array<Buffer> = []
  let headBytes = 0
  let start = 0
  let position = 0
  for await (const chunk of handle.createReadStream({ autoClose: false }) as AsyncIterable<Buffer>) {
    let from = 0
    while (from < chunk.length) {
      const newline = chunk.indexOf(0x0a, from)
      const end = newline === -1 ? chunk.length : newline
      if (headBytes < HEAD_BYTES) {
        const kept = chunk.subarray(from, Math.min(end, from + HEAD_BYTES - headBytes))
        head.push(kept)
        headBytes += kept.length
      }
      if (newline === -1) break
      yield [Buffer.concat(head).toString("latin1"), start, position + newline - start]
      head = []
      headBytes = 0
      from = newline + 1
      start = position + from
    }
    position += chunk.length
  }
}

/** Most shards kept open at once while the merged file is written (the rest reopened as needed). */
const OPEN_SHARDS = 128

/** Copies `length` bytes at `offset` of `from` to `to`, a MiB at a time. */
const copyRange = async (from: FileHandle, offset: number, length: number, to: FileHandle): Promise<void> => {
  const buffer = Buffer.alloc(Math.min(length, 1 << 20))
  for (let done = 0; done < length;) {
    const { bytesRead } = await from.read(buffer, 0, Math.min(buffer.length, length - done), offset + done)
    if (bytesRead === 0) throw Object.assign(new Error("a shard was cut while it was read"), { code: "ESHARD" })
    await to.write(buffer.subarray(0, bytesRead))
    done += bytesRead
  }
}

/** Opens a shard to read, its name in the error when it cannot be (a link, a FIFO, gone). */
const openShardToRead = (path: string): Promise<FileHandle> =>
  openToRead(path).catch((error: NodeJS.ErrnoException) => {
    throw Object.assign(new Error(`${Path.basename(path)}: ${error.code ?? "error"}`), {
      code: error.code === "ELOOP" ? "a symbolic link" : error.code === "ENOTREG" ? "not a regular file" : error.code,
      shard: Path.basename(path)
    })
  })

/** Merges every `*.ndjson` shard of `directory` into `out` (created new, owner-only), in input order. */
export const collect = async (directory: string, out: string): Promise<Collected> => {
  const names = (await readdir(directory)).filter((name) => name.endsWith(".ndjson")).sort()
  const paths = names.map((name) => Path.join(directory, name))
  const lines = new Lines()
  let unreadable = 0
  for (const [shard, path] of paths.entries()) {
    const handle = await openShardToRead(path)
    try {
      for await (const [head, offset, length] of linesOf(handle)) {
        const match = LINE.exec(head)
        if (match === null) unreadable++
        else lines.add(Number(match[1]), match[2] === "Success" ? 2 : 1, shard, offset, length)
      }
    } finally {
      await handle.close()
    }
  }
  const order = lines.order()
  const open = new Map<number, FileHandle>()
  const shardAt = async (shard: number): Promise<FileHandle> => {
    const found = open.get(shard)
    if (found !== undefined) return found
    if (open.size >= OPEN_SHARDS) {
      const [oldest, handle] = open.entries().next().value!
      open.delete(oldest)
      await handle.close()
    }
    const handle = await openShardToRead(paths[shard]!)
    open.set(shard, handle)
    return handle
  }
  const output = await createNew(out)
  let succeeded = 0
  let failed = 0
  let duplicates = 0
  let highest = -1
  try {
    for (const line of order) {
      const index = lines.index[line]!
      if (index === highest) {
        duplicates++
        continue
      }
      highest = index
      if (lines.kind[line] === 2) succeeded++
      else failed++
      await copyRange(await shardAt(lines.shard[line]!), lines.offset[line]!, lines.length[line]!, output)
      await output.write("\n")
    }
    await output.chmod(OWNER_ONLY)
  } finally {
    await output.close()
    for (const handle of open.values()) await handle.close()
  }
  const persons = succeeded + failed
  return {
    shards: names.length,
    persons,
    succeeded,
    failed,
    duplicates,
    missing: highest + 1 - persons,
    unreadable
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
