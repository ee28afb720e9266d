# Shared by the tinyimage scripts (sourced, not run).
#
# The OS API 20 environment (ganeti-os-interface) names the instance, its
# disks and the OS parameters; scripts log to stderr, which Ganeti keeps in
# the node's OS log.

set -e

log() {
  echo "tinyimage: $*" >&2
}

fail() {
  log "$*"
  exit 1
}

# Host names as Ganeti accepts them: letters, digits, dots and dashes
valid_hostname() {
  case "$1" in
    ""|*[!a-zA-Z0-9.-]*|-*|.*) return 1 ;;
  esac
  return 0
}

# A dotted-quad IPv4 address
valid_ipv4() {
  local IFS=. part count=0
  case "$1" in ""|*[!0-9.]*|.*|*.|*..*) return 1 ;; esac
  for part in $1; do
    [ "$part" -le 255 ] || return 1
    count=$((count + 1))
  done
  [ "$count" -eq 4 ]
}

# A statically linked busybox (Debian: busybox-static), empty if none;
# a dynamically linked one would not run inside the guest
find_busybox() {
  local bb
  bb=$(command -v busybox 2>/dev/null) || return 0
  # ldd fails on a static executable ("not a dynamic executable")
  if ldd "$bb" >/dev/null 2>&1; then
    return 0
  fi
  echo "$bb"
}

# The first disk, which create and rename work on
first_disk() {
  if [ -z "$DISK_COUNT" ] || [ "$DISK_COUNT" -lt 1 ]; then
    fail "instance $INSTANCE_NAME has no disk to install on"
  fi
  if [ "$DISK_0_ACCESS" = "ro" ]; then
    fail "disk 0 of $INSTANCE_NAME is read-only"
  fi
  [ -n "$DISK_0_PATH" ] || fail "DISK_0_PATH is not set"
  echo "$DISK_0_PATH"
}

instance_hostname() {
  echo "${OSP_HOSTNAME:-$INSTANCE_NAME}"
}
