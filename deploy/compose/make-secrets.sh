#!/bin/sh
# Writes the compose demo's secrets (random, owner-only) unless they exist:
# the pseudonym key, the OTLP receiver token, the incidents API token and the session store's
# PostgreSQL password with the connection string that carries it.
set -eu
dir="$(dirname "$0")/secrets"
umask 077
mkdir -p "$dir"
for name in deid-key otlp-token api-token postgres-password; do
  if [ ! -s "$dir/$name" ]; then
    python3 -c "import secrets; print(secrets.token_urlsafe(32))" > "$dir/$name"
    # Compose mounts file secrets with their host mode; the image runs as uid 10001, so the
    # files are world-readable and the directory (0700) is what keeps them private on the host.
    chmod 644 "$dir/$name"
  fi
done
if [ ! -s "$dir/session-store-dsn" ]; then
  printf 'postgresql://turnwatch:%s@postgres:5432/turnwatch\n' "$(cat "$dir/postgres-password")" \
    > "$dir/session-store-dsn"
  chmod 644 "$dir/session-store-dsn"
fi
echo "secrets in $dir"
