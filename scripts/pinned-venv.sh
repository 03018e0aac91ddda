# Sourced by the checks that run pinned Python tools (test-clients.sh, test-openapi.sh).
# pinned_venv VENV PIN...: makes VENV with exactly these pins installed. The pins installed are
# written last and compared on the next call: importing the tools to see whether they are there
# takes seconds.
pinned_venv() {
  local venv=$1
  shift
  if [ "$(cat "$venv/installed-pins" 2>/dev/null)" != "$*" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "$@"
    echo "$*" >"$venv/installed-pins"
  fi
}
