#!/bin/sh
# Before removal: stop the server (its data in /var/lib/queue stays).
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
  systemctl disable --now queue >/dev/null 2>&1 || true
fi
