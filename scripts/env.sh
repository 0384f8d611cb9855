# Sourced by the other scripts: one build directory, Debian's python3 first.
# Debian's python3 carries python3-torch / numpy / scipy; a pyenv or venv
# python earlier on PATH would not, so the shipped workloads would fail.
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PERFGATE_BUILD_DIR:-$repo_root/build}
export PATH=/usr/bin:/bin:$PATH
jobs=${PERFGATE_JOBS:-2}

configure_and_build() {
  cmake -S "$repo_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPython3_EXECUTABLE=/usr/bin/python3 "$@" >/dev/null
  cmake --build "$build_dir" -j"$jobs"
}
