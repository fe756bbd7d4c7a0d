#!/usr/bin/env bash
# Signs Sotto.app or the .dmg holding it, and notarizes the .dmg, when an identity is given
# (called by make-dmg.sh; runs on macOS only):
#   packaging/macos/sign-and-notarize.sh app PATH/Sotto.app
#   packaging/macos/sign-and-notarize.sh dmg PATH/Sotto.dmg
# Environment:
#   SOTTO_CODESIGN_IDENTITY  "Developer ID Application: NAME (TEAMID)"; without it the app is signed ad hoc
#                            (it runs on this Mac; others see Gatekeeper's warning) and nothing is notarized
#   SOTTO_NOTARY_PROFILE     a keychain profile made with `xcrun notarytool store-credentials`, or
#   SOTTO_APPLE_ID, SOTTO_APPLE_TEAM_ID, SOTTO_APPLE_APP_PASSWORD (an app-specific password)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WHAT=$1 TARGET=$2
ENTITLEMENTS=$HERE/entitlements.plist
IDENTITY=${SOTTO_CODESIGN_IDENTITY:-}
say() { printf '\033[1msotto sign:\033[0m %s\n' "$*" >&2; }

sign_app() {
  if [ -z "$IDENTITY" ]; then
    say "no signing identity (SOTTO_CODESIGN_IDENTITY is not set): $(basename "$TARGET") is signed ad hoc and will not be notarized"
    codesign --force --deep --sign - "$TARGET"
    return
  fi
  say "signing $(basename "$TARGET") as $IDENTITY (hardened runtime)"
  # inside out: every library and program first, then the app itself
  find "$TARGET/Contents" -type f \( -name '*.dylib' -o -name '*.so' -o -perm -u+x \) -print0 |
    while IFS= read -r -d '' f; do
      if file "$f" | grep -q 'Mach-O'; then
        codesign --force --timestamp --options runtime --entitlements "$ENTITLEMENTS" --sign "$IDENTITY" "$f"
      fi
    done
  codesign --force --timestamp --options runtime --entitlements "$ENTITLEMENTS" --sign "$IDENTITY" "$TARGET"
  codesign --verify --deep --strict "$TARGET"
}

notarize_dmg() {
  if [ -z "$IDENTITY" ]; then
    say "no signing identity: the disk image is not signed or notarized"
    return
  fi
  codesign --force --timestamp --sign "$IDENTITY" "$TARGET"
  if [ -n "${SOTTO_NOTARY_PROFILE:-}" ]; then
    auth=(--keychain-profile "$SOTTO_NOTARY_PROFILE")
  elif [ -n "${SOTTO_APPLE_ID:-}" ] && [ -n "${SOTTO_APPLE_TEAM_ID:-}" ] && [ -n "${SOTTO_APPLE_APP_PASSWORD:-}" ]; then
    auth=(--apple-id "$SOTTO_APPLE_ID" --team-id "$SOTTO_APPLE_TEAM_ID" --password "$SOTTO_APPLE_APP_PASSWORD")
  else
    say "no notarization credentials (SOTTO_NOTARY_PROFILE, or SOTTO_APPLE_ID with SOTTO_APPLE_TEAM_ID and SOTTO_APPLE_APP_PASSWORD): signed but not notarized"
    return
  fi
  say "notarizing $(basename "$TARGET") (this waits for Apple's answer)"
  xcrun notarytool submit "$TARGET" "${auth[@]}" --wait
  xcrun stapler staple "$TARGET"
}

[ "$(uname -s)" = Darwin ] || { say "signing needs macOS"; exit 1; }
case "$WHAT" in
  app) sign_app ;;
  dmg) notarize_dmg ;;
  *) say "usage: $0 app|dmg PATH"; exit 2 ;;
esac
