/**
 * The command line's queue results: the shards the workers append to, and `collect`'s merge, on
 * real files. What users rely on: each position once, in input order, a success over a failure,
 * nothing but whole lines, and no hostile shard (a huge position, a huge line, a link, a FIFO)
 * costing unbounded memory or being followed.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { appender, collect, openShard, shardLine } from "../src/cli/resultShards.js"

let dir: string
beforeEach(() => {
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shards-"))
})
afterEach(() => {
  Fs.rmSync(dir, { recursive: true, force: true })
})

const shards = () => Path.join(dir, "shards")
const write = (name: string, text: string) => {
  Fs.mkdirSync(shards(), { recursive: true })
  Fs.writeFileSync(Path.join(shards(), name), text)
}
const success = (index: number, name = "A") => shardLine(index, { items: [{ Name: name }] })
const failure = (index: number, tag = "ServerError") => shardLine(index, { error: { _tag: tag } })
const merged = async () => {
  const out = Path.join(dir, "out.ndjson")
  const collected = await collect(shards(), out)
  return { collected, lines: Fs.readFileSync(out, "utf8").split("\n").slice(0, -1), mode: Fs.statSync(out).mode }
}

describe("collect", () => {
  it("each position once, in input order: the first success, else the last failure; an owner-only file", async () => {
    write("a.ndjson", success(2, "first") + failure(0, "First") + success(3))
    write("b.ndjson", failure(0, "Last") + success(2, "second") + failure(1) + success(1))
    const { collected, lines, mode } = await merged()
    expect(lines).toEqual([
      failure(0, "Last").trimEnd(),
      success(1).trimEnd(),
      success(2, "first").trimEnd(),
      success(3).trimEnd()
    ])
    expect(collected).toEqual({
      shards: 2,
      persons: 4,
      succeeded: 3,
      failed: 1,
      duplicates: 3,
      missing: 0,
      unreadable: 0
    })
    expect(mode & 0o777).toBe(0o600)
  })

  it("a line cut by a crash (no newline at the end of a shard) is left out; a stranger's line is counted", async () => {
    write("a.ndjson", success(0) + "not ours\n" + success(1).trimEnd())
    const { collected, lines } = await merged()
    expect(lines).toEqual([success(0).trimEnd()])
    expect(collected).toMatchObject({ persons: 1, unreadable: 1, missing: 0 })
  })

  it("a hostile position of 10^15 costs what any line does; a position past a safe integer is not read", async () => {
    write(
      "a.ndjson",
      success(0) + `{"index":999999999999999,"outcome":"Success","items":[]}\n` +
        `{"index":99999999999999999999,"outcome":"Success","items":[]}\n`
    )
    const { collected, lines } = await merged()
    expect(lines).toHaveLength(2)
    expect(collected).toMatchObject({ persons: 2, unreadable: 1, missing: 999999999999998 })
  })

  it("a line of 24 MiB is copied whole, a MiB at a time", async () => {
    const big = shardLine(0, { items: [{ Name: "x".repeat(24 * 1024 * 1024) }] })
    write("a.ndjson", big + success(1))
    const { lines } = await merged()
    expect(lines[0]).toBe(big.trimEnd())
    expect(lines[1]).toBe(success(1).trimEnd())
  })

  it("a shard that is a link, or a FIFO, is refused by name, never followed or waited on", async () => {
    write("a.ndjson", success(0))
    Fs.writeFileSync(Path.join(dir, "elsewhere"), success(5))
    Fs.symlinkSync(Path.join(dir, "elsewhere"), Path.join(shards(), "b.ndjson"))
    await expect(merged()).rejects.toMatchObject({ code: "a symbolic link", shard: "b.ndjson" })
    Fs.unlinkSync(Path.join(shards(), "b.ndjson"))
    execFileSync("mkfifo", [Path.join(shards(), "c.ndjson")])
    await expect(merged()).rejects.toMatchObject({ code: "not a regular file", shard: "c.ndjson" })
  })

  it("an existing output (a file or a link) is never written through", async () => {
    write("a.ndjson", success(0))
    Fs.writeFileSync(Path.join(dir, "target"), "keep")
    Fs.symlinkSync(Path.join(dir, "target"), Path.join(dir, "out.ndjson"))
    await expect(merged()).rejects.toMatchObject({ code: "EEXIST" })
    expect(Fs.readFileSync(Path.join(dir, "target"), "utf8")).toBe("keep")
  })
})

describe("a worker's shard", () => {
  it("is a new owner-only file in an owner-only directory; lines appended at once land whole", async () => {
    const { handle, path } = await openShard(shards())
    const append = appender(handle)
    await Promise.all(Array.from({ length: 200 }, (_, i) => append(success(i, "y".repeat(5000)))))
    await handle.close()
    expect(Fs.statSync(path).mode & 0o777).toBe(0o600)
    expect(Fs.statSync(shards()).mode & 0o777).toBe(0o700)
    const { collected } = await merged()
    expect(collected).toMatchObject({ persons: 200, unreadable: 0, missing: 0 })
  })

  it("a shards directory that is a link is refused", async () => {
    Fs.mkdirSync(Path.join(dir, "real"))
    Fs.symlinkSync(Path.join(dir, "real"), shards())
    await expect(openShard(shards())).rejects.toMatchObject({ code: "ENOTDIR" })
  })
})
