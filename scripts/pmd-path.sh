# Sourced by scripts that run DPDK applications with `-d librte_net_xenpv.so`.
#
# xpv_pmd_path SO: prints a path of the PMD that DPDK's EAL will load. EAL
# refuses a plugin when any directory on its path is world-writable ("directory
# path /tmp is world-writable and insecure"), which a checkout under /tmp or
# /var/tmp always is. Then the library is copied into a private cache
# directory (/var/cache/xpv/pmd as root, ~/.cache/xpv/pmd otherwise) and that
# copy's path is printed instead.
xpv_pmd_path() {
  local so dir d
  so=$(realpath -e "$1") || { echo "xpv_pmd_path: $1 does not exist" >&2; return 1; }
  d=$(dirname "$so")
  while :; do
    if [[ -n $(find "$d" -maxdepth 0 -perm -o+w 2>/dev/null) ]]; then
      if [[ $(id -u) == 0 ]]; then dir=/var/cache/xpv/pmd; else dir=${XDG_CACHE_HOME:-$HOME/.cache}/xpv/pmd; fi
      # One directory per source path (builds do not overwrite each other's copy), and
      # the copy renamed into place: a process that has the old one mapped keeps it.
      dir=$dir/$(printf '%s' "$so" | md5sum | cut -c1-12)
      mkdir -p "$dir" && chmod 700 "${dir%/*}" "$dir" && cp -f "$so" "$dir/.new.$$" &&
        mv -f "$dir/.new.$$" "$dir/$(basename "$so")" ||
        { echo "xpv_pmd_path: cannot copy $so to $dir" >&2; return 1; }
      echo "note: $d is world-writable, which DPDK refuses for plugins; loading a copy from $dir" >&2
      echo "$dir/$(basename "$so")"
      return 0
    fi
    [[ $d == / ]] && break
    d=$(dirname "$d")
  done
  echo "$so"
}
