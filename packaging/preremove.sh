#!/bin/sh
# Before removal: stop the server and disable it (its data in /var/lib/queue stays).
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
  if command -v deb-systemd-invoke >/dev/null 2>&1; then
    deb-systemd-invoke stop queue.service >/dev/null 2>&1 || true
  fi
  if command -v deb-systemd-helper >/dev/null 2>&1; then
    deb-systemd-helper disable queue.service >/dev/null 2>&1 || true
  fi
fi
