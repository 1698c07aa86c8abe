#!/usr/bin/env bash
# Copies what the bare GPU machine lacks into .carry/ (git-ignored), to be
# carried along with the working tree: GoogleTest's sources from Debian.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry
if [[ ! -d .carry/googletest ]]; then
  cp -r /usr/src/googletest .carry/googletest
fi
du -sh .carry
