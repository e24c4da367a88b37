/**
 * The command line's queue results: the shards the workers append to, and `collect`'s merge, on
 * real files. What users rely on: each position of the run once, in input order, a success over a
 * failure, nothing but whole lines, who is missing (the last position too), and no hostile shard (a
 * huge position, a huge line, a link, a FIFO, glued lines) costing unbounded memory or being
 * followed or passed off as a result; a failure (a full disk, a shard cut, an interruption) leaving
 * no merged file and saying which side failed.
 */
import { FastCheck as fc } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest"
import { collect, openShard, shardLine } from "../src/cli/resultShards.js"
import * as Tmpfs from "./support/Tmpfs.js"

// The host a shard is named after, set by the test of its name.
vi.mock("node:os", async (importOriginal) => {
  const os = await importOriginal<typeof import("node:os")>()
  return { ...os, hostname: vi.fn(os.hostname) }
})

let dir: string
beforeEach(() => {
  dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shards-"))
})
afterEach(() => {
  Fs.rmSync(dir, { recursive: true, force: true })
})

const shards = () => Path.join(dir, "shards")
const RUN_ID = "0123456789abcdef"
/** A shard of queue q's run 1 (`q.run-1-<id>.<name>.ndjson`), or named whole when the name ends with .ndjson. */
const write = (name: string, text: string) => {
  Fs.mkdirSync(shards(), { recursive: true })
  Fs.writeFileSync(Path.join(shards(), name.endsWith(".ndjson") ? name : `q.run-1-${RUN_ID}.${name}.ndjson`), text)
}
const success = (index: number, name = "A", operation = "medications") =>
  shardLine(index, operation, { items: [{ Name: name }] })
const failure = (index: number, tag = "ServerError", at = 1_000) =>
  shardLine(index, "medications", { error: { _tag: tag }, at })
const merged = async (
  persons: number,
  options: {
    readonly run?: number
    readonly runId?: string | undefined
    readonly operation?: string
    readonly queue?: string
  } = {}
) => {
  const out = Path.join(dir, "out.ndjson")
  const collected = await collect(shards(), out, {
    queue: options.queue ?? "q",
    run: options.run ?? 1,
    runId: "runId" in options ? options.runId : RUN_ID,
    persons,
    operation: options.operation
  })
  return { collected, lines: Fs.readFileSync(out, "utf8").split("\n").slice(0, -1), mode: Fs.statSync(out).mode }
}

describe("collect", { timeout: 120_000 }, () => {
  it("each position once, in input order: the first success, else the last failure; an owner-only file", async () => {
    write("a", success(2, "first") + failure(0, "First", 1_000) + success(3))
    write("b", failure(0, "Last", 2_000) + success(2, "second") + failure(1) + success(1))
    const { collected, lines, mode } = await merged(4)
    expect(lines).toEqual([
      failure(0, "Last", 2_000).trimEnd(),
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
      beyond: 0,
      unreadable: 0,
      operation: "medications"
    })
    expect(mode & 0o777).toBe(0o600)
  })

  it("knows the run's size: positions no shard holds are missing, the last ones too", async () => {
    write("a", success(0) + success(2))
    const { collected, lines } = await merged(5)
    expect(lines).toEqual([success(0).trimEnd(), success(2).trimEnd()])
    expect(collected).toMatchObject({ persons: 5, succeeded: 2, missing: 3 })
  })

  it("a line cut by a full disk with the next glued onto it: unreadable, whatever its start says, and both persons missing", async () => {
    write("a", success(0) + success(1).slice(0, 40) + success(2) + success(3))
    const { collected, lines } = await merged(4)
    expect(lines).toEqual([success(0).trimEnd(), success(3).trimEnd()])
    expect(collected).toMatchObject({ unreadable: 1, missing: 2, succeeded: 2 })
    // Cut inside its items, past what its start says.
    Fs.rmSync(Path.join(dir, "out.ndjson"))
    write("b", success(4, "x".repeat(100)).slice(0, 90) + success(5))
    expect((await merged(6)).collected).toMatchObject({ unreadable: 2, missing: 4 })
  })

  it("a cut last line, a stranger's line, another operation's: counted unreadable, never copied", async () => {
    write(
      "a",
      success(0) + "not ours\n" + `{"note":"whole JSON, but no result"}\n` +
        // A result's start, whole as far as it goes, then a line break.
        `{"index":3,"outcome":"Success","operation":"medications","items":[\n` +
        success(1, "A", "ethnicities") + success(2).trimEnd()
    )
    const { collected, lines } = await merged(4, { operation: "medications" })
    expect(lines).toEqual([success(0).trimEnd()])
    expect(collected).toMatchObject({ unreadable: 5, missing: 3, operation: "medications" })
  })

  it("positions past the run's size (a hostile 10^15, 16 digits, 20 digits, or a size given too small) are counted apart and cost nothing", async () => {
    write(
      "a",
      success(0) + success(2) + success(999999999999999) + success(1234567890123456) +
        `{"index":99999999999999999999,"outcome":"Success","operation":"medications","items":[]}\n`
    )
    const { collected, lines } = await merged(2)
    expect(lines).toEqual([success(0).trimEnd()])
    // The first past the end too (2 of 2 positions, 0 and 1).
    expect(collected).toMatchObject({ persons: 2, beyond: 4, duplicates: 0, unreadable: 0, missing: 1 })
  })

  it("the latest failure of a person is kept, whichever shard holds it and however the shards are named", async () => {
    write("zeta", failure(0, "Earlier", 1_000))
    write("alpha", failure(0, "Later", 5_000))
    expect((await merged(1)).lines).toEqual([failure(0, "Later", 5_000).trimEnd()])
  })

  it("which of a person's lines is kept does not hang on the directory's listing order: shards are read by name", async () => {
    // Created out of order: each shard has a success of position 0 and a failure of position 1 at one time.
    for (const name of ["c", "a", "e", "b", "d"]) write(name, success(0, name) + failure(1, name, 3_000))
    const { collected, lines } = await merged(2)
    // The first success read, the failure of that time read last.
    expect(lines).toEqual([success(0, "a").trimEnd(), failure(1, "e", 3_000).trimEnd()])
    expect(collected).toMatchObject({ shards: 5, succeeded: 1, failed: 1, duplicates: 8 })
  })

  it("reads only the shards of the queue and run asked for: another queue's, another run's, another id's are left", async () => {
    write("a", success(0, "one"))
    write(`q.run-2-${RUN_ID}.a.ndjson`, success(0, "two") + success(1, "two"))
    write(`other.run-1-${RUN_ID}.a.ndjson`, success(1, "another queue"))
    write(`q.run-1-fedcba9876543210.a.ndjson`, success(1, "another run numbered 1"))
    write("old.run-1.ndjson", success(1, "old"))
    const { collected, lines } = await merged(2)
    expect(lines).toEqual([success(0, "one").trimEnd()])
    expect(collected).toMatchObject({ shards: 1, missing: 1 })
    Fs.rmSync(Path.join(dir, "out.ndjson"))
    expect((await merged(2, { run: 2 })).lines).toEqual([success(0, "two").trimEnd(), success(1, "two").trimEnd()])
  })

  it("without the run's id, shards of two runs of one number are refused, each id named", async () => {
    write("a", success(0, "one"))
    write(`q.run-1-fedcba9876543210.a.ndjson`, success(0, "two"))
    await expect(merged(1, { runId: undefined })).rejects.toMatchObject({
      message: "shards of more than one run",
      code: "ERUNS",
      runs: ["0123456789abcdef", "fedcba9876543210"]
    })
  })

  it("interrupted mid-merge, it removes the merged file", async () => {
    let text = ""
    for (let index = 0; index < 200_000; index++) text += success(index, "x".repeat(80))
    write("a", text)
    const controller = new AbortController()
    const out = Path.join(dir, "interrupted.ndjson")
    let created = false
    const collecting = collect(shards(), out, {
      queue: "q",
      run: 1,
      runId: RUN_ID,
      persons: 200_000,
      signal: controller.signal,
      created: () => {
        created = true
        controller.abort()
      }
    })
    await expect(collecting).rejects.toMatchObject({ message: "interrupted", code: "EINTR", out: true })
    expect(created).toBe(true)
    expect(Fs.existsSync(out)).toBe(false)
  })

  it("interrupted while it reads the shards, it stops there, before creating the merged file", async () => {
    let text = ""
    for (let index = 0; index < 50; index++) text += success(index)
    write("a", text)
    const controller = new AbortController()
    controller.abort()
    const out = Path.join(dir, "interrupted.ndjson")
    let created = false
    await expect(collect(shards(), out, {
      queue: "q",
      run: 1,
      runId: RUN_ID,
      persons: 50,
      signal: controller.signal,
      created: () => (created = true),
      // Reads bigger than the stretch after which it looks at the signal: it looks after each.
      bytes: { read: 256, region: 256, yieldEvery: 64 }
    })).rejects.toMatchObject({ message: "interrupted", code: "EINTR" })
    expect(created).toBe(false)
    expect(Fs.existsSync(out)).toBe(false)
  })

  it("a shard cut between its reading and the merge: refused as the shards' fault, no merged file left", async () => {
    write("a", success(0) + success(1))
    const out = Path.join(dir, "out.ndjson")
    const collecting = collect(shards(), out, {
      queue: "q",
      run: 1,
      runId: RUN_ID,
      persons: 2,
      // Once read, and before the merge copies it: cut inside its second line.
      created: () => Fs.truncateSync(Path.join(shards(), `q.run-1-${RUN_ID}.a.ndjson`), success(0).length + 5)
    })
    await expect(collecting).rejects.toMatchObject({
      message: "a shard was cut while it was read",
      code: "ESHARD",
      out: false
    })
    expect(Fs.existsSync(out)).toBe(false)
  })

  it("a full disk under the merged file: refused as the merged file's fault (ENOSPC), no file left", async () => {
    // About 16 KB to merge, in regions of 10,000 bytes, onto 12 KiB of space: the second region lands short.
    let text = ""
    for (let index = 0; index < 100; index++) text += success(index, "x".repeat(80))
    expect(text.length).toBeGreaterThan(12 * 1024)
    expect(text.length).toBeLessThan(20_000)
    write("a", text)
    const disk = Tmpfs.mount(256)
    try {
      disk.fill(12 * 1024)
      const out = Path.join(disk.path, "out.ndjson")
      const collecting = collect(shards(), out, {
        queue: "q",
        run: 1,
        runId: RUN_ID,
        persons: 100,
        bytes: { read: 1 << 16, region: 10_000, yieldEvery: 1 << 20 }
      })
      await expect(collecting).rejects.toMatchObject({ code: "ENOSPC", out: true })
      expect(Fs.existsSync(out)).toBe(false)
    } finally {
      disk.unmount()
    }
  })

  // Its own time limit: a merge that never ends fails here rather than at the suite's.
  it(
    "a run none of whose lines is readable: an empty merged file, every person missing",
    { timeout: 20_000 },
    async () => {
      write("a", "not ours\n")
      const { collected, lines } = await merged(3)
      expect(lines).toEqual([])
      expect(collected).toMatchObject({ shards: 1, succeeded: 0, failed: 0, missing: 3, unreadable: 1 })
    }
  )

  it("a first shard none of whose lines is kept: the next shard's are copied all the same", async () => {
    write("a", "not ours\n" + failure(0, "Earlier", 1_000))
    write("b", success(0) + success(1))
    const { collected, lines } = await merged(2)
    expect(lines).toEqual([success(0).trimEnd(), success(1).trimEnd()])
    expect(collected).toMatchObject({ succeeded: 2, duplicates: 1, unreadable: 1 })
  })

  it("leaves no shard open, in the reading or in the merge", async () => {
    for (let shard = 0; shard < 20; shard++) write(`w${String(shard).padStart(2, "0")}`, success(shard))
    const open = () => Fs.readdirSync("/proc/self/fd").length
    const before = open()
    const out = Path.join(dir, "out.ndjson")
    await collect(shards(), out, {
      queue: "q",
      run: 1,
      runId: RUN_ID,
      persons: 20,
      bytes: { read: 64, region: 64, yieldEvery: 1 << 20 }
    })
    // At most as many (a handle an earlier test dropped may be closed meanwhile, by the garbage collector).
    expect(open()).toBeLessThanOrEqual(before)
    expect(Fs.readFileSync(out, "utf8")).toBe(Array.from({ length: 20 }, (_, i) => success(i)).join(""))
  })

  it("a line of 24 MiB is copied whole, through a window of a fraction of it", async () => {
    const big = shardLine(0, "medications", { items: [{ Name: "x".repeat(24 * 1024 * 1024) }] })
    write("a", big + success(1))
    const { lines } = await merged(2)
    expect(lines[0]).toBe(big.trimEnd())
    expect(lines[1]).toBe(success(1).trimEnd())
  })

  it("many shards whose lines interleave: each line copied from its own shard", async () => {
    // 300 shards, each holding every 300th position: the merge takes each line from its own shard.
    for (let shard = 0; shard < 300; shard++) {
      let text = ""
      for (let index = shard; index < 3_000; index += 300) text += success(index, `s${shard}`)
      write(`w${String(shard).padStart(3, "0")}`, text)
    }
    const { collected, lines } = await merged(3_000)
    expect(collected).toMatchObject({ shards: 300, succeeded: 3_000, missing: 0 })
    expect(lines).toEqual(Array.from({ length: 3_000 }, (_, i) => success(i, `s${i % 300}`).trimEnd()))
  })

  it("a shard that is a link, or a FIFO, is refused by name, never followed or waited on", async () => {
    write("a", success(0))
    Fs.writeFileSync(Path.join(dir, "elsewhere"), success(5))
    const link = `q.run-1-${RUN_ID}.b.ndjson`
    Fs.symlinkSync(Path.join(dir, "elsewhere"), Path.join(shards(), link))
    await expect(merged(1)).rejects.toMatchObject({ message: `${link}: ELOOP`, code: "a symbolic link", shard: link })
    Fs.unlinkSync(Path.join(shards(), link))
    const fifo = `q.run-1-${RUN_ID}.c.ndjson`
    execFileSync("mkfifo", [Path.join(shards(), fifo)])
    await expect(merged(1)).rejects.toMatchObject({
      message: `${fifo}: ENOTREG`,
      code: "not a regular file",
      shard: fifo
    })
  })

  it("an existing output (a file or a link) is never written through; one in a missing directory is named as the output", async () => {
    write("a", success(0))
    Fs.writeFileSync(Path.join(dir, "target"), "keep")
    Fs.symlinkSync(Path.join(dir, "target"), Path.join(dir, "out.ndjson"))
    await expect(merged(1)).rejects.toMatchObject({ code: "EEXIST", out: true })
    expect(Fs.readFileSync(Path.join(dir, "target"), "utf8")).toBe("keep")
    await expect(collect(shards(), Path.join(dir, "nowhere", "out.ndjson"), { queue: "q", run: 1, persons: 1 }))
      .rejects
      .toMatchObject({ code: "ENOENT", out: true })
  })
})

describe("a worker's shard", () => {
  it("is a new owner-only file of its run in an owner-only directory; lines appended at once land whole", async () => {
    const { handle, lines, path } = await openShard(shards(), "q", 7, RUN_ID)
    expect(Path.basename(path)).toMatch(new RegExp(`^q\\.run-7-${RUN_ID}\\..+\\.ndjson$`))
    // Durable: each line is on disk (fdatasync) before its append resolves, the waiting ones sharing a sync.
    const datasync = vi.spyOn(handle, "datasync")
    await Promise.all(Array.from({ length: 200 }, (_, i) => lines.append(success(i, "y".repeat(5000)))))
    expect(datasync.mock.calls.length).toBeGreaterThan(0)
    expect(datasync.mock.calls.length).toBeLessThan(200)
    await handle.close()
    expect(Fs.statSync(path).mode & 0o777).toBe(0o600)
    expect(Fs.statSync(shards()).mode & 0o777).toBe(0o700)
    const { collected } = await merged(200, { run: 7 })
    expect(collected).toMatchObject({ persons: 200, unreadable: 0, missing: 0 })
  })

  it("is named after its host, pid and a random part: what a file name cannot hold as _, at most 40 of the host's characters", async () => {
    // A space, a slash, a colon, a letter beyond ASCII, and far more than 255 characters in all.
    vi.mocked(Os.hostname).mockReturnValueOnce(`ci runner/7:é${"h".repeat(300)}`)
    const { handle, lines, path } = await openShard(shards(), "q", 7, RUN_ID)
    expect(Path.basename(path)).toMatch(
      new RegExp(`^q\\.run-7-${RUN_ID}\\.ci_runner_7__${"h".repeat(27)}-${process.pid}-[0-9a-f]{8}\\.ndjson$`)
    )
    await lines.append(success(0))
    await handle.close()
    expect((await merged(1, { run: 7 })).collected).toMatchObject({ shards: 1, succeeded: 1, missing: 0 })
  })

  it("a shards directory that is a link is refused, named with a trailing slash too", async () => {
    Fs.mkdirSync(Path.join(dir, "real"))
    Fs.symlinkSync(Path.join(dir, "real"), shards())
    await expect(openShard(shards(), "q", 1, RUN_ID)).rejects.toMatchObject({
      message: `${shards()} is not a directory`,
      code: "ENOTDIR"
    })
    await expect(openShard(`${shards()}/`, "q", 1, RUN_ID)).rejects.toMatchObject({ code: "ENOTDIR" })
    await expect(openShard(`${shards()}//`, "q", 1, RUN_ID)).rejects.toMatchObject({ code: "ENOTDIR" })
    expect(Fs.readdirSync(Path.join(dir, "real"))).toEqual([])
  })
})

describe("collect, its buffers small enough that lines cross them", { timeout: 120_000 }, () => {
  /** A run of `persons` spread over shards as workers write them: in any order, some twice, some failing first, some missing, some lines unreadable. */
  const run = fc.record({
    persons: fc.integer({ min: 1, max: 40 }),
    lines: fc.array(
      fc.record({
        index: fc.nat(),
        shard: fc.integer({ min: 0, max: 2 }),
        kind: fc.constantFrom("success", "failure", "unreadable"),
        name: fc.string({ minLength: 0, maxLength: 200 }),
        at: fc.integer({ min: 1, max: 9_999 })
      }),
      { maxLength: 80 }
    ),
    bytes: fc.record({
      read: fc.integer({ min: 1, max: 400 }),
      region: fc.integer({ min: 1, max: 400 }),
      yieldEvery: fc.integer({ min: 1, max: 1_000 })
    }),
    cutLast: fc.boolean()
  })

  it("merges byte for byte what it merges with its full-size buffers, with the same counts", async () => {
    let round = 0
    await fc.assert(
      fc.asyncProperty(run, async ({ bytes, cutLast, lines, persons }) => {
        const directory = Path.join(dir, `round-${round++}`)
        Fs.mkdirSync(directory)
        const texts = ["", "", ""]
        for (const line of lines) {
          const index = line.index % persons
          texts[line.shard] += line.kind === "success"
            ? success(index, line.name)
            : line.kind === "failure"
            ? failure(index, "ServerError", line.at)
            : `{"index":${index},"outcome":"Success","operation":"medications","items":[\n`
        }
        if (cutLast) texts[0] += `{"index":0,"outcome":"Succ`
        for (const [i, text] of texts.entries()) {
          Fs.writeFileSync(Path.join(directory, `q.run-1-${RUN_ID}.w${i}.ndjson`), text)
        }
        const options = { queue: "q", run: 1, runId: RUN_ID, persons }
        const whole = await collect(directory, Path.join(directory, "whole.out"), options)
        const small = await collect(directory, Path.join(directory, "small.out"), { ...options, bytes })
        expect(small).toEqual(whole)
        expect(Fs.readFileSync(Path.join(directory, "small.out"), "utf8")).toBe(
          Fs.readFileSync(Path.join(directory, "whole.out"), "utf8")
        )
      }),
      { seed: 37, numRuns: 150 }
    )
  })
})
