#!/usr/bin/env bash
# The Debian package of a onedir bundle (called by packaging/build.sh):
#   packaging/linux/make-deb.sh BUNDLE_DIR VERSION OUT.deb
# Installs the bundle to /opt/sotto/ (/opt/sotto/sotto the executable), links /usr/bin/sotto, and
# adds the launcher (usr/share/applications/sotto.desktop) and the icon (usr/share/icons/hicolor/).
# Depends: packaging/linux/depends.txt. Compression: SOTTO_DEB_COMPRESSION (zstd, the default; gzip, xz, none).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUNDLE=$1 VERSION=$2 OUT=$3
COMPRESSION=${SOTTO_DEB_COMPRESSION:-zstd}  # dpkg 1.21.18+: Debian 12, Ubuntu 21.10 and later
say() { printf '\033[1msotto build:\033[0m %s\n' "$*" >&2; }
[ -x "$BUNDLE/sotto" ] || { say "$BUNDLE holds no sotto executable"; exit 1; }

STAGE=$(mktemp -d "$(dirname "$OUT")/deb-stage.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
install -d -m755 "$STAGE/DEBIAN" "$STAGE/opt" "$STAGE/usr/bin" "$STAGE/usr/share/applications" \
  "$STAGE/usr/share/icons/hicolor/256x256/apps" "$STAGE/usr/share/icons/hicolor/scalable/apps" \
  "$STAGE/usr/share/doc/sotto"
cp -al "$BUNDLE" "$STAGE/opt/sotto" 2>/dev/null || cp -a "$BUNDLE" "$STAGE/opt/sotto"  # hard links: no copy of 1 GB
chmod -R u+rwX,go+rX,go-w "$STAGE/opt/sotto"
ln -s /opt/sotto/sotto "$STAGE/usr/bin/sotto"
install -m644 "$HERE/sotto.desktop" "$STAGE/usr/share/applications/sotto.desktop"
install -m644 "$ROOT/assets/sotto.png" "$STAGE/usr/share/icons/hicolor/256x256/apps/sotto.png"
install -m644 "$ROOT/assets/sotto.svg" "$STAGE/usr/share/icons/hicolor/scalable/apps/sotto.svg"
cat > "$STAGE/usr/share/doc/sotto/copyright" <<'EOF'
Sotto: MIT licence. Bundled models: Whisper (MIT), Gemma 3 (Gemma Terms of Use).
The demo sample (JFK's inaugural address) is public domain. The bundled Python packages and
libraries keep their own licences (see /opt/sotto/_internal/*.dist-info).
EOF

depends=$(grep -v '^\s*#' "$HERE/depends.txt" | sed '/^\s*$/d' | paste -sd, - | sed 's/,/, /g')
size_kb=$(du -sk --apparent-size "$STAGE/opt" "$STAGE/usr" | awk '{s += $1} END {print s}')
cat > "$STAGE/DEBIAN/control" <<EOF
Package: sotto
Version: $VERSION
Architecture: amd64
Maintainer: Sotto developers <noreply@sotto.invalid>
Installed-Size: $size_kb
Depends: $depends
Section: sound
Priority: optional
Description: live captions and translation of speech, on your own machine
 Sotto captions what your microphone hears and what your computer plays (a
 meeting, a video) or a recording, and translates it, in a steady caption
 overlay. Speech recognition (Whisper) and translation (Gemma 3) run locally
 with the models included in this package; nothing is sent anywhere.
EOF

say "packing $(basename "$OUT") ($COMPRESSION)"
dpkg-deb --root-owner-group -Z"$COMPRESSION" --build "$STAGE" "$OUT.part" >/dev/null
mv "$OUT.part" "$OUT"
