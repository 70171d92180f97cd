"""``nia mcp`` memory under a flood: a client that never reads its answers, and one line over the limit.

Run: ``python bench/bench_mcp_memory.py [--megabytes 150] [--line 256]``.
Starts a real ``nia mcp`` (stdio) on a temporary project, handshakes, then
writes ``--megabytes`` of ``ping`` requests (1 KB each) and never reads a
single answer; then, on a fresh server, one ``--line`` MB line. It prints how
much of the input the server took and its peak resident memory (``VmHWM``),
beside the floor (the same server idle) and a client that reads every answer
(the server then handles the whole flood), in the same run, with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

NIA = [sys.executable, "-c", "from nia_core.cli import main; main()", "-p", "no:nia-date"]
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def peak_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return -1


def server(base: Path) -> subprocess.Popen[bytes]:
    project = base / "p"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    (project / "AGENTS.md").write_text("Be brief.\n")
    env = {**os.environ, "NIA_DB": str(base / "nia.db"), "XDG_CONFIG_HOME": str(base / "config")}
    process = subprocess.Popen(
        [*NIA, "mcp", "--location", str(project), "--interval", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(INIT).encode() + b"\n")
    process.stdin.flush()
    process.stdout.readline()
    process.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    process.stdin.flush()
    return process


def flood(process: subprocess.Popen[bytes], chunks: list[bytes], *, read: bool) -> tuple[int, bool]:
    """Write ``chunks`` (reading every answer or none); the bytes the pipe took, and whether it stopped taking."""
    assert process.stdin is not None and process.stdout is not None
    taken = [0]

    def write() -> None:
        try:
            for chunk in chunks:
                process.stdin.write(chunk)  # type: ignore[union-attr]
                taken[0] += len(chunk)
            process.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, ValueError):
            pass

    if read:
        threading.Thread(target=lambda: process.stdout.read(), daemon=True).start()  # type: ignore[union-attr]
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    last = -1
    while writer.is_alive() and taken[0] != last:
        last = taken[0]
        time.sleep(2.0)
    return taken[0], writer.is_alive()


def row(name: str, offered: float, taken: float, held: bool, peak: int) -> None:
    print(f"| {name} | {offered:,.0f} | {taken:,.1f} | {'yes' if held else 'no'} | {peak:,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=150)
    parser.add_argument("--line", type=int, default=256)
    options = parser.parse_args()
    pad = "x" * 1000
    pings = [
        json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping", "params": {"_meta": {"pad": pad}}}).encode() + b"\n"
        for n in range(1, options.megabytes * 1024 + 1)
    ]
    offered = sum(map(len, pings)) / 2**20
    head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"'
    line = [head, *(b"x" * 2**20 for _ in range(options.line)), b'"}}}\n']
    print(f"load average {os.getloadavg()[0]:.1f}; MB, peak resident memory (VmHWM) in MB\n")
    print("| case | offered | taken | writer held back | peak RSS |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        idle = server(base / "idle")
        time.sleep(2.0)
        row("floor: idle server", 0, 0, False, peak_mb(idle.pid))
        idle.kill()
        for name, chunks, read, size in (
            ("a client that reads every answer", pings, True, offered),
            ("a client that never reads", pings, False, offered),
            (f"one {options.line} MB line", line, True, float(options.line)),
        ):
            process = server(base / name.replace(" ", "-"))
            taken, held = flood(process, chunks, read=read)
            row(name, size, taken / 2**20, held, peak_mb(process.pid))
            process.kill()
            process.wait()


if __name__ == "__main__":
    main()
