#!/usr/bin/env bash
# The real coding agents for the end-to-end hook tests, pinned.
#
#   eval "$(bash .ci/agents.sh)"   # prints: export NIA_AGENTS_DIR=...
#
# Installs node/npm with apt-get when missing, then the six agents nia serves (pinned versions) with
# npm into a cache folder (NIA_AGENTS_DIR, default ~/.cache/nia-agents): Claude Code, Codex, Gemini CLI,
# OpenCode, GitHub Copilot CLI and Qwen Code. A second run with the same versions does nothing. Only the
# export line goes to stdout; progress goes to stderr. tests/real_agents/harness.py finds the binaries
# through $NIA_AGENTS_DIR/node_modules/.bin. npm warns that Qwen Code asks for node >= 22 and that
# Gemini CLI's optional native packages ran no install script: both run on node 20 as they are.
set -euo pipefail

# package@version and the binary it puts in node_modules/.bin: one pinned list for every test and bench.
AGENTS=(
    "@anthropic-ai/claude-code@2.1.328 claude"
    "@openai/codex@0.169.0 codex"
    "@google/gemini-cli@0.61.0 gemini"
    "opencode-ai@1.18.33 opencode"
    "@github/copilot@1.0.102 copilot"
    "@qwen-code/qwen-code@0.24.4 qwen"
)
DIR="${NIA_AGENTS_DIR:-$HOME/.cache/nia-agents}"

log() { echo "agents.sh: $*" >&2; }

if [[ -t 1 ]]; then  # stdout is a terminal, not eval's $(...): the export line below would only be printed
    log "run it as: eval \"\$(bash .ci/agents.sh)\" (the tests find the agents through the NIA_AGENTS_DIR it exports)"
fi

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
missing=()
for entry in "${AGENTS[@]}"; do
    spec=${entry% *} bin=${entry##* }
    package=${spec%@*} version=${spec##*@}
    if [[ "$(installed_version "$package")" != "$version" || ! -x "$DIR/node_modules/.bin/$bin" ]]; then
        missing+=("$spec")
    fi
done
if ((${#missing[@]})); then
    log "installing ${missing[*]} into $DIR"
    npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "${missing[@]}" >&2
fi
for entry in "${AGENTS[@]}"; do
    bin=${entry##* }
    log "$bin $("$DIR/node_modules/.bin/$bin" --version 2>/dev/null | head -n 1 || echo '?')"
done
echo "export NIA_AGENTS_DIR=$DIR"
