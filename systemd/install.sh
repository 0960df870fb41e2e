#!/usr/bin/env bash
# Installs pulsa-bridge as a systemd service on a Raspberry Pi (or any Debian-like host with Node.js >= 20).
# Run from the project folder, as root:  sudo ./systemd/install.sh
# Idempotent: re-running upgrades the code and keeps /etc/pulsa-bridge/config.json and the spool.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "run as root (sudo $0)"; exit 1; }
command -v node >/dev/null || { echo "Node.js >= 20 is required (apt-get install nodejs)"; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || { echo "Node.js >= 20 is required, found $(node --version)"; exit 1; }

id pulsa-bridge >/dev/null 2>&1 || useradd --system --home /var/lib/pulsa-bridge --shell /usr/sbin/nologin --groups dialout pulsa-bridge
usermod -aG dialout pulsa-bridge

npm ci --no-audit --no-fund
npm run build
npm prune --omit=dev --no-audit --no-fund

install -d -m 0755 /opt/pulsa-bridge
cp -r dist bin node_modules package.json README.md config.example.json /opt/pulsa-bridge/
install -d -m 0750 -o root -g pulsa-bridge /etc/pulsa-bridge
if [ ! -f /etc/pulsa-bridge/config.json ]; then
  sed 's#"dir": "./spool"#"dir": "/var/lib/pulsa-bridge/spool"#' config.example.json > /etc/pulsa-bridge/config.json
  chgrp pulsa-bridge /etc/pulsa-bridge/config.json; chmod 0640 /etc/pulsa-bridge/config.json
  echo "wrote /etc/pulsa-bridge/config.json: edit webhook.baseUrl, modems[].port and senders, then: systemctl restart pulsa-bridge"
fi
ln -sf /opt/pulsa-bridge/bin/pulsa-bridge /usr/local/bin/pulsa-bridge
install -m 0644 systemd/99-pulsa-bridge.rules /etc/udev/rules.d/99-pulsa-bridge.rules
udevadm control --reload 2>/dev/null || true
udevadm trigger --subsystem-match=tty 2>/dev/null || true
install -m 0644 systemd/pulsa-bridge.service /etc/systemd/system/pulsa-bridge.service
systemctl daemon-reload
/usr/local/bin/pulsa-bridge config check /etc/pulsa-bridge/config.json >/dev/null && systemctl enable --now pulsa-bridge \
  || echo "config check failed: fix /etc/pulsa-bridge/config.json, then: systemctl enable --now pulsa-bridge"
systemctl --no-pager status pulsa-bridge || true
