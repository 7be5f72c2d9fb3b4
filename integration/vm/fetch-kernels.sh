#!/bin/bash
# fetch-kernels.sh - (adapted for sbx from the shared VM tools) download Debian kernels (no install, no /etc changes) and
# keep only OUTDIR/<version>/{vmlinuz,config} for run-kernel-matrix.sh.
#
# usage: fetch-kernels.sh OUTDIR [SUITE[:METAPACKAGE]...]
#   default suites: bullseye-security bookworm-security bookworm-backports
#                   trixie-security trixie-backports      (sid works too)
#   METAPACKAGE defaults to linux-image-amd64; e.g. bookworm-security:linux-image-6.12-amd64
# Uses a private apt state under OUTDIR/.apt (sources, lists, cache), so only
# Debian's archive ($MIRROR; default: the first Debian URI in this machine's apt sources) must be reachable.
# It prints the sandbox-relevant CONFIG_ lines of each kernel.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,10s/^# \{0,1\}//p' "$0"; exit 2; }
OUT=$(realpath -m "$1"); shift
SUITES=${*:-bullseye-security bookworm-security bookworm-backports trixie-security trixie-backports}
# (grep exits 2 when /etc/apt/sources.list is missing, as on deb822-only systems)
MIRROR=${MIRROR:-$( { grep -rhoE '(URIs:|deb) +https?://[^ ]+/debian\b' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null || true; } | head -1 | sed -E 's/^(URIs:|deb) +//; s#/debian$##')}
[ -n "$MIRROR" ] || { echo 'set MIRROR to a Debian archive base URL' >&2; exit 2; }
A=$OUT/.apt; mkdir -p "$A"/lists/partial "$A"/cache/archives/partial "$A"/prefs "$A/dl"
chmod 755 "$OUT" "$A" "$A/dl"; chown _apt "$A/dl" 2>/dev/null || true  # let apt's sandbox user write

# One sources line per suite; *-security lives under /debian-security.
: > "$A/sources.list"
for s in $(printf '%s\n' $SUITES | sed 's/:.*//' | sort -u); do
  case $s in *-security) u=$MIRROR/debian-security ;; *) u=$MIRROR/debian ;; esac
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $u $s main" >> "$A/sources.list"
done
APTO=(-o Dir::Etc::SourceList="$A/sources.list" -o Dir::Etc::SourceParts=/nonexistent
      -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache" -o Dir::State::status=/dev/null
      -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts="$A/prefs" -o APT::Get::List-Cleanup=0)
apt-get "${APTO[@]}" -qq update

for spec in $SUITES; do
  s=${spec%%:*}; meta=linux-image-amd64; [ "$spec" = "$s" ] || meta=${spec#*:}
  # metapackage -> concrete linux-image-<ver> of that suite
  pkg=$(apt-cache "${APTO[@]}" -t "$s" depends "$meta" 2>/dev/null \
        | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -1) || true
  [ -n "$pkg" ] || { echo "$s: no $meta" >&2; continue; }
  ver=${pkg#linux-image-}
  if [ -s "$OUT/$ver/vmlinuz" ]; then echo "$s: $ver already present"; continue; fi
  (cd "$A/dl" && apt-get "${APTO[@]}" -qq -t "$s" download "$pkg")
  # Since 7.x the image package is a stub; vmlinuz/config live in linux-binary/linux-base.
  if ! dpkg-deb -c "$A"/dl/"$pkg"_*.deb | grep vmlinuz >/dev/null; then  # no -q: SIGPIPE+pipefail
    (cd "$A/dl" && apt-get "${APTO[@]}" -qq -t "$s" download "linux-binary-$ver" "linux-base-$ver")
  fi
  mkdir -p "$OUT/$ver" "$A/x"
  for d in "$A"/dl/*.deb; do dpkg-deb -x "$d" "$A/x"; done
  find "$A/x" -type f \( -name "vmlinuz-$ver" -o -path "*/modules/$ver/vmlinuz" \) -exec cp {} "$OUT/$ver/vmlinuz" \;
  find "$A/x" -type f \( -name "config-$ver" -o -path "*/modules/$ver/config" \) -exec cp {} "$OUT/$ver/config" \;
  echo "$s: $ver $(apt-cache "${APTO[@]}" -t "$s" show "$pkg" | sed -n 's/^Version: //p' | head -1)" \
       "vmlinuz=$(du -h "$OUT/$ver/vmlinuz" | cut -f1) debs=$(du -ch "$A"/dl/*.deb | tail -1 | cut -f1)"
  grep -E '^CONFIG_(SECURITY_LANDLOCK|SECCOMP_FILTER|USER_NS|NET_NS|LSM)=' "$OUT/$ver/config" | sed 's/^/    /'
  grep -q '^CONFIG_SECURITY_LANDLOCK=y' "$OUT/$ver/config" || echo "    CONFIG_SECURITY_LANDLOCK is not set"
  rm -rf "$A/x" "$A"/dl/*.deb     # keep only vmlinuz + config
done
rm -rf "$A/cache"
