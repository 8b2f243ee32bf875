#!/bin/sh
# After install or upgrade: make old world-readable config files root's alone,
# let systemd see the unit, restart a running server.
set -e
# Packages before 0600 installed these 0644; they may hold tokens and passwords.
for f in /etc/default/queue /etc/queue/queue.toml; do
  if [ -f "$f" ] && [ "$(stat -c %a "$f")" = 644 ]; then
    chmod 600 "$f"
  fi
done
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
  if systemctl is-active --quiet queue; then
    systemctl restart queue || true
  else
    echo "queue installed: start it with  systemctl enable --now queue"
  fi
fi
