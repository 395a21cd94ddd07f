#!/bin/sh
# Writes the compose demo's secrets (random, owner-only) unless they exist:
# the pseudonym key, the OTLP receiver token and the incidents API token.
set -eu
dir="$(dirname "$0")/secrets"
umask 077
mkdir -p "$dir"
for name in deid-key otlp-token api-token; do
  if [ ! -s "$dir/$name" ]; then
    python3 -c "import secrets; print(secrets.token_urlsafe(32))" > "$dir/$name"
    # Compose mounts file secrets with their host mode; the image runs as uid 10001, so the
    # files are world-readable and the directory (0700) is what keeps them private on the host.
    chmod 644 "$dir/$name"
  fi
done
echo "secrets in $dir"
