// nia's OpenCode plugin, written by `nia hook install opencode` and removed by `nia hook uninstall opencode`
// (only while it is exactly as nia wrote it). At each prompt OpenCode calls "chat.message"; the plugin runs nia,
// which answers with the project's context: the baseline once, then only what changed, or nothing. nia's text
// becomes a part of the user's message, stored with it and re-sent unchanged. A nia that fails, hangs, or
// prints too much adds nothing: the prompt waits at most 10 s beyond nia's own deadline (NIA_HOOK_DEADLINE).
import { spawn } from "node:child_process"

const PROGRAM = __NIA_PROGRAM__
const MAX_BYTES = 16 * 1024 * 1024

function deadlineMs() {
  const seconds = Number(process.env.NIA_HOOK_DEADLINE)
  return ((Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 600) : 20) + 10) * 1000
}

function nia(input, cwd) {
  return new Promise((resolve) => {
    const out = []
    let size = 0
    let settled = false
    let child = null
    const settle = (text) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(text)
    }
    const stop = () => {
      // nia runs in a process group of its own: whatever it started goes too, and the pipes close
      try {
        if (child?.pid) process.kill(-child.pid, "SIGKILL")
      } catch {}
      child?.stdout?.destroy()
    }
    const timer = setTimeout(() => {
      stop()
      settle("")
    }, deadlineMs())
    try {
      child = spawn(PROGRAM, ["hook", "opencode"], { cwd, stdio: ["pipe", "pipe", "ignore"], detached: true })
    } catch {
      settle("")
      return
    }
    child.on("error", () => settle(""))
    child.stdout.on("data", (chunk) => {
      size += chunk.length
      if (size > MAX_BYTES) {
        stop()
        settle("")
      } else out.push(chunk)
    })
    child.on("close", (code) => settle(code === 0 ? Buffer.concat(out).toString("utf8") : ""))
    child.on("exit", (code) => {
      // what nia printed is read when its stdout closes; a process it left behind holding stdout is ended
      if (code !== 0) settle("")
      setTimeout(stop, 1000).unref()
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(input))
  })
}

export const NiaContext = async ({ directory }) => ({
  "chat.message": async (input, output) => {
    const parts = output?.parts
    const last = Array.isArray(parts) ? parts[parts.length - 1] : undefined
    if (!last || typeof input?.sessionID !== "string") return
    const answer = await nia(
      {
        hook_event_name: "chat.message",
        session_id: input.sessionID,
        cwd: directory,
        message_id: last.messageID,
        agent: input.agent ?? null,
      },
      directory,
    )
    let text = ""
    try {
      text = JSON.parse(answer).additionalContext
    } catch {}
    if (typeof text !== "string" || !text) return
    parts.push({
      id: last.id + "nia",
      sessionID: last.sessionID,
      messageID: last.messageID,
      type: "text",
      text,
      synthetic: true,
      metadata: { nia: true },
    })
  },
})
