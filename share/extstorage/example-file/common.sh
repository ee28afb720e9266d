# Shared by the scripts of the example-file ExtStorage provider: volumes
# are image files in one directory, optionally attached as loop devices.
# shellcheck shell=sh

set -eu

fail() {
  echo "example-file: $*" >&2
  exit 1
}

# EXTP_DIR: where the volume files are (a directory every node mounts makes
# the volumes shared); by default below the node's root
VOL_DIR=${EXTP_DIR:-${GANETI_ROOTDIR:-}/srv/ganeti/extstorage-volumes/example-file}
# EXTP_LOOP: "yes" to attach volumes as loop devices, "no" for the file
LOOP=${EXTP_LOOP:-no}

need_volume() {
  [ -n "${VOL_NAME:-}" ] || fail "VOL_NAME is not set"
  case "$VOL_NAME" in
    */*|.*) fail "invalid volume name '$VOL_NAME'" ;;
  esac
  VOL_FILE=$VOL_DIR/$VOL_NAME
}

# The loop devices backed by the volume file, one per line
loop_devices() {
  losetup -j "$VOL_FILE" | cut -d: -f1
}
