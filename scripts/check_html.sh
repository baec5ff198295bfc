#!/usr/bin/env bash
# Opens an HTML summary in headless Chromium: fails if the page's script did not run to
# its end (a script error), if the console reports an error, or if the screenshot is
# blank. Usage: check_html.sh REPORT.html SCREENSHOT.png
set -euo pipefail
html=$(realpath "$1")
png=$2
chrome=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chrome" ]; then
  echo "check_html: chromium not found" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
       --user-data-dir="$work/profile" --enable-logging=stderr --v=0)
timeout 120 "$chrome" "${flags[@]}" --dump-dom "file://$html" >"$work/dom.html" 2>"$work/dom.log" || true
if ! grep -q 'data-ready="1"' "$work/dom.html"; then
  echo "check_html: the page's script did not finish (script error?)" >&2
  grep -i "console\|uncaught" "$work/dom.log" >&2 || true
  exit 1
fi
if grep -E 'CONSOLE.*(Uncaught|Error)' "$work/dom.log" >&2; then
  echo "check_html: errors on the console" >&2
  exit 1
fi
timeout 120 "$chrome" "${flags[@]}" --window-size=1280,1800 --screenshot="$work/shot.png" "file://$html" \
  >/dev/null 2>"$work/shot.log" || true
[ -s "$work/shot.png" ] || { echo "check_html: no screenshot" >&2; exit 1; }
python3 - "$work/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        width = struct.unpack(">I", body[:4])[0]
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
# Filtered scanlines: count bytes that differ from white; a blank page has almost none.
ink = sum(1 for b in raw if b not in (0, 255))
share = ink / max(len(raw), 1)
print(f"check_html: screenshot {width} px wide, {share:.1%} non-white bytes")
if share < 0.005:
    sys.exit("check_html: the screenshot is blank")
PY
cp "$work/shot.png" "$png"
echo "check_html: ok ($html)"
