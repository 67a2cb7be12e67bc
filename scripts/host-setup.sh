#!/usr/bin/env bash
# Make this machine able to run the simulated cluster: a running Docker engine and debootstrap. With the argument
# `browser`, only Chromium, in which the unit tests open a run's report.html headless (make browser); with
# `shellcheck`, only ShellCheck, which make lint runs on every script the collection generates (make shellcheck). The
# demo needs neither. Idempotent: does nothing when all are already there. Needs root (or sudo) for the installs.
set -euo pipefail

log() { printf '[host-setup] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  log "installing from the distribution: $*"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null
}

if [ "${1:-}" = browser ]; then
  command -v chromium >/dev/null || apt_install --no-install-recommends chromium
  # Debian's package version (its chromium wrapper prints shell noise of its own on --version).
  log "chromium $(dpkg-query -W -f '${Version}' chromium 2>/dev/null || echo present)"
  exit 0
fi

if [ "${1:-}" = shellcheck ]; then
  command -v shellcheck >/dev/null || apt_install shellcheck
  log "$(shellcheck --version | sed -n 's/^version: /shellcheck /p')"
  exit 0
fi

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

if ! docker info >/dev/null 2>&1; then
  if [ -d /run/systemd/system ]; then
    log "starting docker.service"
    as_root systemctl start docker
  else
    log "no systemd: starting dockerd in the background (log: /var/log/dockerd.log)"
    as_root sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not come up; see /var/log/dockerd.log"; exit 1; }
fi
log "docker engine $(docker version -f '{{.Server.Version}}') is running"
