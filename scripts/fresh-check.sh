#!/usr/bin/env bash
# Tries README's two set-up commands as a new user would, on a machine where
# nothing was installed before: makes a fresh Debian 12 root with debootstrap,
# clones the committed tree (HEAD, not the work tree) into it, runs
# scripts/demo.sh and then scripts/test.sh inside it, and prints what broke.
#
# Not part of CI: it downloads a Debian base system and every package the
# project needs, and takes 20-30 minutes on a quiet 2-core machine. Needs
# root (debootstrap, chroot, mounts). The root is removed at the end unless
# --keep.
#
#   scripts/fresh-check.sh [--keep] [--root DIR] [--mirror URL] [--only demo|test] [--busy N] [--again]
#
# --busy N   N busy loops run beside the whole check (a machine of this kind
#            busy with other work; docs/testing.md records --busy 4)
# --again    then runs both commands a second time in the same root: the warm
#            times (packages installed, build folder and ccache filled)
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
root=/var/tmp/perfgate-fresh
mirror=http://deb.debian.org/debian
keep=0
only=""
busy=0
again=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) keep=1 ;;
    --root) root=$2; shift ;;
    --mirror) mirror=$2; shift ;;
    --only) only=$2; shift ;;
    --busy) busy=$2; shift ;;
    --again) again=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "fresh-check: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-check: needs root (debootstrap, chroot and mounts)" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "fresh-check: installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

mounts=()
hogs=()
cleanup() {
  local i
  if [ ${#hogs[@]} -gt 0 ]; then kill "${hogs[@]}" 2>/dev/null || true; fi
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[$i]}" 2>/dev/null || true; done
  # Daemons a test started inside the root and did not stop would hold its files.
  if [ -d "$root" ]; then
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null || true
    done
  fi
  if [ "$keep" = 0 ]; then rm -rf --one-file-system "$root"; else echo "fresh-check: kept $root"; fi
}
trap cleanup EXIT

rm -rf --one-file-system "$root"
mkdir -p "$root"
started=$(date +%s)
for ((i = 0; i < busy; i++)); do
  (x=0; while :; do x=$(((x + 1) % 1000003)); done) &
  hogs+=($!)
done
[ "$busy" -gt 0 ] && echo "fresh-check: $busy busy loops run beside the check"
echo "fresh-check: debootstrap bookworm into $root"
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
  echo "fresh-check: debootstrap failed; see $root.debootstrap.log" >&2
  exit 3
}
mv "$root.debootstrap.log" "$root/debootstrap.log"
echo "deb $mirror bookworm main" >"$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# What a booted machine has mounted: slurmd (the fleet tests' one-node
# cluster) refuses to start without a cgroup filesystem.
for m in proc sys sys/fs/cgroup dev dev/pts dev/shm; do
  mkdir -p "$root/$m"
  case "$m" in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    sys/fs/cgroup) mount --rbind /sys/fs/cgroup "$root/sys/fs/cgroup" ;;
    dev) mount --bind /dev "$root/dev" ;;
    dev/pts) mount -t devpts devpts "$root/dev/pts" ;;
    dev/shm) mount -t tmpfs shm "$root/dev/shm" ;;
  esac
  mounts+=("$root/$m")
done

# The committed tree only: what CI and a new user get.
git clone -q --no-hardlinks "$repo_root" "$root/src"
commit=$(git -C "$root/src" rev-parse --short HEAD)
echo "fresh-check: cloned $commit into $root/src"

# A fresh Debian has no git, sudo or compilers: the README commands must bring them.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"
}

steps=(demo test)
[ "$again" = 1 ] && steps+=(demo-again test-again)
declare -A rc secs
for step in "${steps[@]}"; do
  script=${step%-again}
  [ -n "$only" ] && [ "$only" != "$script" ] && continue
  t0=$(date +%s)
  echo "fresh-check: scripts/$script.sh (log: $root/$step.log)"
  set +e
  in_root "cd /src && scripts/$script.sh" >"$root/$step.log" 2>&1
  rc[$step]=$?
  set -e
  secs[$step]=$(($(date +%s) - t0))
  cp "$root/$step.log" "/var/tmp/perfgate-fresh-$step.log"
  if [ "$step" = demo ]; then
    packages=$(chroot "$root" dpkg-query -W -f='${Status}\n' | grep -c 'install ok installed' || true)
    disk=$(du -sxm "$root" | cut -f1)
  fi
done

echo
echo "fresh-check of $commit ($(($(date +%s) - started)) s in all, debootstrap included; $busy busy loops beside it; load average now $(cut -d' ' -f1-3 /proc/loadavg))"
[ -n "${packages:-}" ] && echo "  after the demo: $packages Debian packages installed in the root, $disk MiB used (base system, build and results included)"
status=0
for step in "${steps[@]}"; do
  [ -z "${rc[$step]+x}" ] && continue
  printf '  scripts/%s.sh%s: exit %d after %d min %02d s\n' "${step%-again}" "$([ "$step" != "${step%-again}" ] && echo ' (again)')" \
    "${rc[$step]}" $((secs[$step] / 60)) $((secs[$step] % 60))
  grep -E "^(setup|build|test): " "/var/tmp/perfgate-fresh-$step.log" | sed 's/^/      /' || true
  if [ "${rc[$step]}" -ne 0 ]; then
    status=1
    echo "  --- what broke (last lines of /var/tmp/perfgate-fresh-$step.log):"
    # ctest names the failed entries; otherwise the end of the log says what stopped.
    if grep -q "tests failed out of" "/var/tmp/perfgate-fresh-$step.log"; then
      sed -n '/tests failed out of/,$p' "/var/tmp/perfgate-fresh-$step.log" | sed 's/^/    /'
    else
      tail -n 25 "/var/tmp/perfgate-fresh-$step.log" | sed 's/^/    /'
    fi
  fi
  if [ "${step%-again}" = test ]; then
    grep -E "tests passed|Total Test time" "/var/tmp/perfgate-fresh-$step.log" | sed 's/^/      /' || true
  fi
done
exit $status
