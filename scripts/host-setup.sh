#!/usr/bin/env bash
# Make this machine able to run the simulated cluster: a running Docker engine and debootstrap; and Chromium, in
# which the tests open a run's report.html headless. Idempotent: does nothing when all are already there. Needs
# root (or sudo) for the installs.
set -euo pipefail

log() { printf '[host-setup] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} from the distribution"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi
if ! command -v chromium >/dev/null; then
  log "installing chromium from the distribution (the report test opens report.html in it, headless)"
  [ ${#missing[@]} -gt 0 ] || as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium >/dev/null
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
