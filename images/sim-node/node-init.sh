#!/bin/sh
# Boot of a simulated node: the admin sshd, with the host key the sim playbook generated and
# bind-mounted read-only with the admin public key (/root/.ssh/authorized_keys).
set -eu

# A real node boots with an empty /run (a tmpfs); this container keeps it across a restart. What the last boot's
# daemons left there (pid files, sockets) would make a restarted Docker engine wait for a containerd that is gone.
rm -rf /run/docker /run/docker.pid /run/docker.sock /run/containerd
mkdir -p /run/sshd
exec /usr/sbin/sshd -D -e -h /etc/ssh/admin_host_ed25519_key \
  -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no
