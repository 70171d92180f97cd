#!/usr/bin/env bash
# The real coding agents for the end-to-end hook tests, pinned.
#
#   eval "$(bash .ci/agents.sh)"   # prints: export NIA_AGENTS_DIR=...
#
# Installs node/npm with apt-get when missing, then Claude Code and Codex (pinned versions, native
# binaries inside the npm packages) with npm into a cache folder (NIA_AGENTS_DIR, default
# ~/.cache/nia-agents). A second run with the same versions does nothing. Only the export line goes
# to stdout; progress goes to stderr. tests/real_agents/harness.py finds the binaries through
# $NIA_AGENTS_DIR/node_modules/.bin.
set -euo pipefail

CLAUDE_CODE_VERSION="2.1.328"
CODEX_VERSION="0.169.0"
DIR="${NIA_AGENTS_DIR:-$HOME/.cache/nia-agents}"

log() { echo "agents.sh: $*" >&2; }

install_node() {
    command -v apt-get >/dev/null || { log "no node/npm and no apt-get to install them"; exit 1; }
    local sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    log "installing node and npm with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq >&2
    $sudo apt-get install -y -qq --no-install-recommends nodejs npm >&2
}

installed_version() {  # package name -> its version in DIR, or nothing
    local manifest="$DIR/node_modules/$1/package.json"
    [[ -f "$manifest" ]] || return 0
    node -e 'process.stdout.write(require(process.argv[1]).version)' "$manifest" 2>/dev/null || true
}

command -v npm >/dev/null && command -v node >/dev/null || install_node
mkdir -p "$DIR"
if [[ "$(installed_version @anthropic-ai/claude-code)" != "$CLAUDE_CODE_VERSION" \
   || "$(installed_version @openai/codex)" != "$CODEX_VERSION" \
   || ! -x "$DIR/node_modules/.bin/claude" || ! -x "$DIR/node_modules/.bin/codex" ]]; then
    log "installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION @openai/codex@$CODEX_VERSION into $DIR"
    npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
        "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
fi
log "claude $("$DIR/node_modules/.bin/claude" --version 2>/dev/null || echo '?'), $("$DIR/node_modules/.bin/codex" --version 2>/dev/null || echo 'codex ?')"
echo "export NIA_AGENTS_DIR=$DIR"
