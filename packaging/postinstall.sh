#!/bin/sh
# After install or upgrade: make old world-readable config files root's alone,
# let systemd see the unit, restart a running (or enabled) server.
set -e
# Packages before 0600 installed these 0644; they may hold tokens and passwords.
for f in /etc/default/queue /etc/queue/queue.toml; do
  if [ -f "$f" ] && [ "$(stat -c %a "$f")" = 644 ]; then
    chmod 600 "$f"
  fi
done
if [ -d /run/systemd/system ]; then
  systemctl --system daemon-reload >/dev/null 2>&1 || true
  if [ -n "$2" ] && command -v deb-systemd-invoke >/dev/null 2>&1; then
    # An upgrade: restart the server if it runs or is enabled (policy-rc.d respected).
    deb-systemd-invoke restart queue.service >/dev/null 2>&1 || true
  else
    echo "queue installed: start it with  sudo systemctl enable --now queue"
  fi
fi
