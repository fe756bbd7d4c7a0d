#!/usr/bin/env bash
# Builds Sotto's installers for this system under dist/, quick the second time:
#   Linux: sotto_<version>_amd64.deb and sotto-<version>-linux-x86_64.tar.gz
#   macOS: Sotto-<version>-macos-<arch>.dmg (Sotto.app; signed and notarized when the SOTTO_*
#          variables of packaging/macos/sign-and-notarize.sh are set)
#   (Windows: packaging/build.ps1)
# Usage: packaging/build.sh [--formats deb,tar|dmg,app]
# Steps: the developer setup (packaging/setup.sh: .venv, pinned dependencies, the bundled models in
# the model store), the build tools (packaging/build-requirements.txt), the bundled models staged
# and sha256-checked, one PyInstaller onedir bundle (packaging/sotto.spec), then the packages.
# Everything is kept in .cache/bundle/<hash of the inputs>/ (sources, assets, packaging, installed
# packages): the same inputs again only copy the packages to dist/.
# Environment: SOTTO_BUNDLE_TORCH=1 ships PyTorch (the speculative speech engine; ~700 MB more),
# SOTTO_DEB_COMPRESSION (zstd, the default: 9 s for the ~1 GB bundle where gzip -9 takes minutes;
# gzip, xz, none), SOTTO_MODELS_DIR (the model store the models are prepared in; default .cache/models).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
say() { printf '\033[1msotto build:\033[0m %s\n' "$*" >&2; }
START=$SECONDS

case "$(uname -s)" in
  Linux) OS=linux; FORMATS=deb,tar ;;
  Darwin) OS=macos; FORMATS=dmg ;;
  *) say "on Windows run packaging/build.ps1"; exit 1 ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    --formats) FORMATS=$2; shift 2 ;;
    --formats=*) FORMATS=${1#--formats=}; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) say "unknown option $1 (see --help)"; exit 2 ;;
  esac
done

# --- 1. the developer setup and the build tools --------------------------------------------------
export SOTTO_MODELS_DIR=${SOTTO_MODELS_DIR:-$ROOT/.cache/models}
bash packaging/setup.sh app
want=$(sha256sum packaging/build-requirements.txt | cut -c1-16)
if [ "$(cat .venv/.sotto-build 2>/dev/null)" != "$want" ]; then
  say "installing the build tools (packaging/build-requirements.txt)"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r packaging/build-requirements.txt
  echo "$want" > .venv/.sotto-build
fi
VERSION=$(.venv/bin/python -c 'import core; print(core.__version__)')
if [ "$OS" = linux ] && ! ldconfig -p | grep -q 'libportaudio\.so\.2'; then
  say "PortAudio (libportaudio2) must be installed before building: the bundle carries it"; exit 1
fi

# --- 2. the bundle, cached by a hash of its inputs -------------------------------------------------
hash_files() {  # the contents of the files under the paths given
  find "$@" -type f ! -path '*/__pycache__/*' ! -name '*.pyc' ! -path 'packaging/macos/build/*' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum
}
HASH=$({
  hash_files core app assets packaging/pyinstaller packaging/sotto.spec packaging/setup.sh \
    packaging/build-requirements.txt packaging/macos/sotto-audiotap packaging/macos/Info.plist.fragment \
    pyproject.toml requirements.lock
  .venv/bin/python -m pip freeze --all --disable-pip-version-check 2>/dev/null | grep -v '^-e '
  uname -sm
  echo "torch=${SOTTO_BUNDLE_TORCH:-0}"
} | sha256sum | cut -c1-16)
CACHE=$ROOT/.cache/bundle/$HASH
if [ -f "$CACHE/.done" ]; then
  say "the bundle for these inputs is already built ($CACHE)"
else
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  say "staging the bundled models (sha256-checked)"
  .venv/bin/python packaging/pyinstaller/stage_models.py build/bundle-models
  if [ "$OS" = macos ]; then
    bash packaging/macos/build-audiotap.sh build/audiotap
    export SOTTO_AUDIOTAP_BIN=$ROOT/build/audiotap/sotto-audiotap
  fi
  say "PyInstaller onedir bundle (about a minute or two)"
  SOTTO_BUNDLE_MODELS=$ROOT/build/bundle-models .venv/bin/python -m PyInstaller --noconfirm --log-level WARN \
    --distpath "$CACHE/pyinstaller" --workpath build/pyinstaller packaging/sotto.spec
  mv "$CACHE/pyinstaller/sotto" "$CACHE/sotto"
  [ "$OS" = macos ] && mv "$CACHE/pyinstaller/Sotto.app" "$CACHE/Sotto.app"
  rm -rf "$CACHE/pyinstaller" build/bundle-models
  # keep only this bundle: each is about a gigabyte
  find "$ROOT/.cache/bundle" -mindepth 1 -maxdepth 1 -type d ! -name "$HASH" -exec rm -rf {} +
  touch "$CACHE/.done"
  say "bundle built: $(du -sh "$CACHE/sotto" | cut -f1) in $CACHE/sotto"
fi

# --- 3. the packages, cached by the bundle and the packaging scripts --------------------------------
PACKAGES=$CACHE/packages-$({ hash_files packaging/build.sh packaging/linux packaging/macos/*.sh \
  packaging/macos/entitlements.plist; echo "${SOTTO_DEB_COMPRESSION:-}"; } | sha256sum | cut -c1-12)
mkdir -p dist "$PACKAGES"
deliver() {  # the cached package $1 → dist/ (a hard link where possible)
  ln -f "$PACKAGES/$1" "dist/$1" 2>/dev/null || cp -f "$PACKAGES/$1" "dist/$1"
  say "dist/$1 ($(du -h "dist/$1" | cut -f1))"
}
IFS=, read -r -a wanted <<< "$FORMATS"
for format in "${wanted[@]}"; do
  case "$OS/$format" in
    linux/deb)
      name=sotto_${VERSION}_amd64.deb
      [ -f "$PACKAGES/$name" ] || bash packaging/linux/make-deb.sh "$CACHE/sotto" "$VERSION" "$PACKAGES/$name"
      deliver "$name" ;;
    linux/tar)
      name=sotto-${VERSION}-linux-x86_64.tar.gz
      if [ ! -f "$PACKAGES/$name" ]; then
        say "packing $name"  # gzip -1: the models (half the bundle) hardly compress anyway
        tar -C "$CACHE" --owner=0 --group=0 -cf - sotto | gzip -1 > "$PACKAGES/$name.part"
        mv "$PACKAGES/$name.part" "$PACKAGES/$name"
      fi
      deliver "$name" ;;
    macos/app)
      rm -rf dist/Sotto.app && cp -R "$CACHE/Sotto.app" dist/Sotto.app && say "dist/Sotto.app" ;;
    macos/dmg)
      name=Sotto-${VERSION}-macos-$(uname -m).dmg
      [ -f "$PACKAGES/$name" ] || bash packaging/macos/make-dmg.sh "$CACHE/Sotto.app" "$PACKAGES/$name"
      deliver "$name" ;;
    *) say "no format '$format' on $OS (linux: deb, tar; macos: dmg, app)"; exit 2 ;;
  esac
done
say "done in $((SECONDS - START)) s"
