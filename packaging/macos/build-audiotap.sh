#!/usr/bin/env bash
# Builds the system audio helper: packaging/macos/build/sotto-audiotap, a universal (arm64 + x86_64)
# command-line program from sotto-audiotap/main.swift. Needs macOS with the Xcode command line tools
# and a macOS SDK of 14.2 or newer (the process tap API); the program itself starts on macOS 12 and
# newer and says "needs macOS 14.2" (exit code 3) below 14.2.
#   packaging/macos/build-audiotap.sh [OUTPUT_DIR]
# Signing: ad hoc by default; set SOTTO_CODESIGN_IDENTITY ("Developer ID Application: ...") to sign
# with the hardened runtime for notarisation (the app bundle that embeds it is signed the same way).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:-$HERE/build}
SRC=$HERE/sotto-audiotap/main.swift
MIN_MACOS=12.0
say() { printf '\033[1mbuild-audiotap:\033[0m %s\n' "$*" >&2; }

[ "$(uname -s)" = Darwin ] || { say "this builds a macOS program: run it on a Mac"; exit 1; }
command -v xcrun >/dev/null || { say "install the Xcode command line tools: xcode-select --install"; exit 1; }
SDK=$(xcrun --sdk macosx --show-sdk-path)
SDK_VERSION=$(xcrun --sdk macosx --show-sdk-version)
if [ "$(printf '%s\n' 14.2 "$SDK_VERSION" | sort -V | head -n1)" != 14.2 ]; then
  say "the macOS SDK is $SDK_VERSION; the process tap API needs the 14.2 SDK or newer (Xcode 15.1+)"; exit 1
fi

mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for arch in arm64 x86_64; do
  say "compiling for $arch (macOS $MIN_MACOS+, SDK $SDK_VERSION)"
  xcrun swiftc -O -swift-version 5 -target "$arch-apple-macos$MIN_MACOS" -sdk "$SDK" \
    -framework CoreAudio -framework AudioToolbox -o "$TMP/sotto-audiotap-$arch" "$SRC"
done
lipo -create -output "$OUT/sotto-audiotap" "$TMP/sotto-audiotap-arm64" "$TMP/sotto-audiotap-x86_64"
if [ -n "${SOTTO_CODESIGN_IDENTITY:-}" ]; then
  codesign --force --timestamp --options runtime --sign "$SOTTO_CODESIGN_IDENTITY" "$OUT/sotto-audiotap"
else
  codesign --force --sign - "$OUT/sotto-audiotap"
fi
"$OUT/sotto-audiotap" --version >/dev/null
say "built $OUT/sotto-audiotap ($(lipo -archs "$OUT/sotto-audiotap"))"
