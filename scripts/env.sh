# Sourced by the other scripts: one build directory, Debian's python3 first.
# Debian's python3 carries python3-torch / numpy / scipy; a pyenv or venv
# python earlier on PATH would not, so the shipped workloads would fail.
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PERFGATE_BUILD_DIR:-$repo_root/build}
export PATH=/usr/bin:/bin:$PATH
jobs=${PERFGATE_JOBS:-2}

# ccache keyed by paths relative to the checkout (base_dir) and not by the
# build folder (no hash_dir), so a clean clone in another folder reuses what an
# earlier build compiled. The cache itself lives in ccache's default place
# (~/.cache/ccache) unless CCACHE_DIR says otherwise.
launcher=()
if command -v ccache >/dev/null 2>&1 && [ "${PERFGATE_CCACHE:-1}" != 0 ]; then
  export CCACHE_BASEDIR=$repo_root CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

configure_and_build() {
  cmake -S "$repo_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPython3_EXECUTABLE=/usr/bin/python3 "${launcher[@]}" "$@" >/dev/null
  cmake --build "$build_dir" -j"$jobs"
}
