/**
 * Lines appended to a results file land whole or not at all, on a real file system that runs out of
 * space (a small tmpfs): the kernel writes what fits, Node calls that a success, and a cut line with
 * the next one glued to it would be a person lost and a line nobody can read.
 */
import * as Fs from "node:fs"
import type { FileHandle } from "node:fs/promises"
import { open } from "node:fs/promises"
import * as Path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { wholeLines } from "../core/wholeLines.js"
import * as Tmpfs from "./support/Tmpfs.js"

let disk: Tmpfs.Tmpfs
beforeAll(() => {
  disk = Tmpfs.mount(256)
})
afterAll(() => disk?.unmount())
afterEach(() => {
  disk.free()
  for (const name of Fs.readdirSync(disk.path)) Fs.rmSync(Path.join(disk.path, name))
})

const line = (index: number, size: number) => `{"index":${index},"outcome":"Success","items":["${"x".repeat(size)}"]}\n`

describe("whole lines on a full disk", () => {
  it("a line that fits only in part fails, the file keeps its whole lines, and the next line starts after them", async () => {
    const path = Path.join(disk.path, "shard.ndjson")
    const handle = await open(path, "wx")
    const lines = wholeLines(handle)
    await lines.append(line(0, 100))
    // Two pages left (and the rest of the shard's first): the next line of 20,000 bytes lands short.
    disk.fill(8_192)
    const failure = await lines.append(line(1, 20_000)).then(() => undefined, (error: NodeJS.ErrnoException) => error)
    expect(failure?.code).toBe("ENOSPC")
    expect(Fs.readFileSync(path, "utf8")).toBe(line(0, 100))
    disk.free()
    await lines.append(line(2, 100))
    await handle.close()
    const text = Fs.readFileSync(path, "utf8")
    expect(text).toBe(line(0, 100) + line(2, 100))
    for (const each of text.trimEnd().split("\n")) expect(() => JSON.parse(each)).not.toThrow()
  })

  it("a run of lines as a disk fills: every line in the file is whole, and each one that failed is absent", async () => {
    const path = Path.join(disk.path, "many.ndjson")
    const handle = await open(path, "wx")
    const lines = wholeLines(handle)
    disk.fill(20_000)
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, i) => lines.append(line(i, 200 + (i * 37) % 400)).then(() => true, () => false))
    )
    await handle.close()
    disk.free()
    const written = Fs.readFileSync(path, "utf8").trimEnd().split("\n").map((each) => JSON.parse(each).index)
    expect(written).toEqual(outcomes.flatMap((ok, i) => (ok ? [i] : [])))
    expect(outcomes).toContain(false)
    expect(outcomes).toContain(true)
  })
})

describe("whole lines, one at a time", () => {
  it("appends that are not awaited land one after another, in order, none overwritten", async () => {
    const path = Path.join(disk.path, "order.ndjson")
    const handle = await open(path, "wx")
    const lines = wholeLines(handle)
    await Promise.all(Array.from({ length: 300 }, (_, i) => lines.append(line(i, (i * 13) % 90))))
    await handle.close()
    expect(Fs.readFileSync(path, "utf8")).toBe(Array.from({ length: 300 }, (_, i) => line(i, (i * 13) % 90)).join(""))
  })

  it("durable: each append resolves after an fdatasync begun after its write; waiting appends share one", async () => {
    const events: Array<string> = []
    let syncs = 0
    const pending: Array<() => void> = []
    const handle = {
      write: async (buffer: Buffer, offset: number, length: number) => {
        events.push(`write ${buffer.subarray(offset, offset + length).toString().trim()}`)
        return { bytesWritten: length, buffer }
      },
      truncate: async () => {},
      datasync: () => {
        const n = ++syncs
        events.push(`sync ${n} begins`)
        return new Promise<void>((resolve) =>
          pending.push(() => {
            events.push(`sync ${n} ends`)
            resolve()
          })
        )
      }
    } as unknown as FileHandle
    const lines = wholeLines(handle, { durable: true })
    const resolved: Array<string> = []
    const append = (name: string) => lines.append(`${name}\n`).then(() => void resolved.push(name))
    const first = append("a")
    await new Promise((resolve) => setImmediate(resolve))
    const rest = ["b", "c", "d"].map(append)
    await new Promise((resolve) => setImmediate(resolve))
    expect(resolved).toEqual([])
    pending.shift()!()
    await first
    expect(resolved).toEqual(["a"])
    await new Promise((resolve) => setImmediate(resolve))
    // b, c and d were written while sync 1 ran: they wait for sync 2, one for the three.
    expect(syncs).toBe(2)
    pending.shift()!()
    await Promise.all(rest)
    expect(resolved).toEqual(["a", "b", "c", "d"])
    expect(events).toEqual([
      "write a",
      "sync 1 begins",
      "write b",
      "write c",
      "write d",
      "sync 1 ends",
      "sync 2 begins",
      "sync 2 ends"
    ])
  })
})

/**
 * A file handle that takes `takes[i]` bytes at its i-th write (the rest of what it was given when
 * there is no such entry), records what lands where, and cuts as told (or fails to, with `cutFails`).
 */
const fakeHandle = (takes: ReadonlyArray<number>, cutFails?: Error) => {
  const writes: Array<{ readonly at: number; readonly bytes: string }> = []
  const cuts: Array<number> = []
  let syncs = 0
  const handle = {
    write: (buffer: Buffer, offset: number, length: number, position: number) => {
      const taken = Math.min(takes[writes.length] ?? length, length)
      writes.push({ at: position, bytes: buffer.subarray(offset, offset + taken).toString("utf8") })
      return Promise.resolve({ bytesWritten: taken, buffer })
    },
    truncate: (length: number) => {
      cuts.push(length)
      return cutFails === undefined ? Promise.resolve() : Promise.reject(cutFails)
    },
    datasync: () => {
      syncs++
      return Promise.resolve()
    }
  }
  return { handle: handle as unknown as FileHandle, writes, cuts, syncs: () => syncs }
}

describe("whole lines, at each step a disk may refuse", () => {
  it("a write that takes nothing is a full disk (ENOSPC); the piece that landed before it is cut off", async () => {
    const disk = fakeHandle([4, 2, 0])
    const lines = wholeLines(disk.handle, { length: 10 })
    await expect(lines.append("{\"index\":1}\n")).rejects.toMatchObject({
      code: "ENOSPC",
      message: "no space left on the device"
    })
    // Each write went on where the last one stopped; the file was cut back to its whole lines.
    expect(disk.writes.map((each) => each.at)).toEqual([10, 14, 16])
    expect(disk.cuts).toEqual([10])
    expect(lines.length()).toBe(10)
  })

  it("a refused write with nothing landed cuts nothing, and the next line starts where the whole ones end", async () => {
    const disk = fakeHandle([0])
    const lines = wholeLines(disk.handle)
    await expect(lines.append("a\n")).rejects.toMatchObject({ code: "ENOSPC" })
    expect(disk.cuts).toEqual([])
    await lines.append("bé\n")
    expect(disk.writes.at(-1)).toEqual({ at: 0, bytes: "bé\n" })
    // Bytes, not characters: "é" takes two.
    expect(lines.length()).toBe(4)
  })

  it("a file that cannot be cut back is written no more: each later append fails with why", async () => {
    const cause = Object.assign(new Error("read-only file system"), { code: "EROFS" })
    const disk = fakeHandle([3, 0], cause)
    const lines = wholeLines(disk.handle)
    await expect(lines.append("{\"index\":1}\n")).rejects.toMatchObject({ code: "ENOSPC" })
    const writes = disk.writes.length
    await expect(lines.append("{\"index\":2}\n")).rejects.toBe(cause)
    expect(disk.writes.length).toBe(writes)
  })

  it("not durable unless asked: no fdatasync; durable: one for an append that waited for none", async () => {
    const plain = fakeHandle([])
    await wholeLines(plain.handle).append("a\n")
    expect(plain.syncs()).toBe(0)
    const durable = fakeHandle([])
    await wholeLines(durable.handle, { durable: true }).append("a\n")
    expect(durable.syncs()).toBe(1)
  })
})
