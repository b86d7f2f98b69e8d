#!/usr/bin/env bash
# Installs (or reuses) the real node's Debian packages (testenv/realnode): containerd and
# runc (the container runtime), the CNI plugins (the pods' bridge), dnsmasq (cluster DNS) and
# iptables (the kubernetes Service's DNAT rule), with the libraries they need beyond the base
# system. Like tinyproxy, they are downloaded and unpacked into ~/.cache, keyed by the list
# below; nothing is installed into the system and no service is started. Prints the folder
# holding the unpacked usr/ tree (progress goes to stderr). Its own lock: two sessions never
# install at once.
set -euo pipefail
packages=(
  containerd runc containernetworking-plugins dnsmasq-base
  iptables libxtables12 libip4tc2 libnftnl11
  # dnsmasq's libraries that a base system lacks
  libnetfilter-conntrack3 libnfnetlink0 libnftables1 libjansson4
)
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
key=$(printf '%s\n' "${packages[@]}" | md5sum | cut -c1-12)
out="$cache/node-packages-$key"
mkdir -p "$cache"
exec 9>"$cache/.node-packages.lock"
flock 9
if [ -f "$out/.complete" ]; then
  echo "$out"
  exit 0
fi
echo "downloading the real node's packages from Debian's archive: ${packages[*]}" >&2
start=$SECONDS
tmp=$(mktemp -d "$cache/.node-packages.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download -q "${packages[@]}" >&2 2>/dev/null); then
  apt-get update -q >&2
  (cd "$tmp" && apt-get download -q "${packages[@]}" >&2)
fi
rm -rf "$out"
mkdir -p "$out"
for deb in "$tmp"/*.deb; do
  dpkg-deb -x "$deb" "$out"
  dpkg-deb -f "$deb" Package Version | paste -sd' ' >>"$out/versions.txt"
done
# Each binary must run from here, with the unpacked libraries.
libs="$out/usr/lib/x86_64-linux-gnu"
for binary in usr/bin/containerd usr/sbin/runc usr/sbin/dnsmasq usr/sbin/xtables-nft-multi; do
  if LD_LIBRARY_PATH=$libs ldd "$out/$binary" | grep 'not found' >&2; then
    echo "install_node_packages.sh: $binary lacks a library" >&2
    exit 1
  fi
done
LD_LIBRARY_PATH=$libs "$out/usr/sbin/runc" --version | head -1 >&2
"$out/usr/bin/containerd" --version >&2
touch "$out/.complete"
echo "installed the real node's packages in $((SECONDS - start))s" >&2
echo "$out"
