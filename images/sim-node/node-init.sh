#!/bin/sh
# Boot of a simulated node: the admin sshd, with the host key the sim playbook generated and
# bind-mounted read-only with the admin public key (/root/.ssh/authorized_keys).
set -eu

mkdir -p /run/sshd
exec /usr/sbin/sshd -D -e -h /etc/ssh/admin_host_ed25519_key \
  -o PermitRootLogin=prohibit-password -o PasswordAuthentication=no
