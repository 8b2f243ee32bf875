#!/bin/sh
# After install or upgrade: let systemd see the unit; restart a running server.
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
  if systemctl is-active --quiet queue; then
    systemctl restart queue || true
  else
    echo "queue installed: start it with  systemctl enable --now queue"
  fi
fi
