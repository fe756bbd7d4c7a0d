#!/usr/bin/env bash
# The disk image of Sotto.app (called by packaging/build.sh on macOS):
#   packaging/macos/make-dmg.sh PATH/Sotto.app OUT.dmg
# A copy of the app is signed (sign-and-notarize.sh: with SOTTO_CODESIGN_IDENTITY, else ad hoc),
# put next to a link to /Applications in a compressed image, and the image is notarized when
# credentials are given.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
APP=$1 OUT=$2
say() { printf '\033[1msotto build:\033[0m %s\n' "$*" >&2; }
[ "$(uname -s)" = Darwin ] || { say "a .dmg is made on macOS"; exit 1; }
/usr/libexec/PlistBuddy -c 'Print :NSAudioCaptureUsageDescription' "$APP/Contents/Info.plist" >/dev/null
/usr/libexec/PlistBuddy -c 'Print :NSMicrophoneUsageDescription' "$APP/Contents/Info.plist" >/dev/null

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
ditto "$APP" "$STAGE/Sotto.app"
ln -s /Applications "$STAGE/Applications"
bash "$HERE/sign-and-notarize.sh" app "$STAGE/Sotto.app"
say "making $(basename "$OUT")"
rm -f "$OUT"
hdiutil create -volname Sotto -srcfolder "$STAGE" -fs HFS+ -format UDZO -ov "$OUT.part.dmg" >/dev/null
mv "$OUT.part.dmg" "$OUT"
bash "$HERE/sign-and-notarize.sh" dmg "$OUT"
