#!/usr/bin/env bash
# Builds the shared dom0/domU root image and the boot files of the real-Xen e2e harness.
#
#   build.sh OUTDIR
#
# OUTDIR must not exist yet. On success it holds:
#   root.img      raw ext4 root filesystem (dom0 and domU both boot from qcow2 overlays of it)
#   xen.elf       the uncompressed hypervisor (QEMU's multiboot loader needs it uncompressed)
#   vmlinuz       the Linux kernel (dom0 and domU run the same one)
#   initrd.img    the harness's own busybox initramfs (also in the image as /boot/xpv-initrd.img)
#   manifest.txt  the Debian packages installed in the image, with versions
#
# Called by run.sh under an exclusive lock, in a temporary directory renamed on success.
# Needs root (debootstrap, chroot, device nodes). Uses the host's Debian apt sources.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${1:?usage: build.sh OUTDIR}
SUITE=bookworm
ROOTFS=$OUT/rootfs

# Modules the initramfs loads to find the root disk: virtio (dom0 in QEMU), xen-blkfront (domU).
INITRAMFS_MODULES=(virtio_pci virtio_blk xen-blkfront crc32c_generic ext4)

# DPDK's EAL dlopen()s every driver in its plugin directory at start-up: about 130 in Debian,
# which takes minutes under emulation. The image keeps only these autoloaded; every other driver
# is still installed and loads with -d /usr/lib/x86_64-linux-gnu/librte_<name>.so.23.
DPDK_AUTOLOAD_DRIVERS=(bus_pci bus_vdev mempool_ring mempool_stack net_af_packet net_null net_ring net_tap net_pcap)

say() { printf 'build: %s\n' "$*"; }
die() { printf 'build: error: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "must run as root"
[[ ! -e $OUT ]] || die "$OUT already exists"

mounted=()
unmount_all() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -l "${mounted[i]}" 2>/dev/null || true
    done
    mounted=()
}
trap unmount_all EXIT

chroot_mount() { # TYPE DIR
    mount -t "$1" "$1" "$ROOTFS/$2"
    mounted+=("$ROOTFS/$2")
}

# --- apt sources: the host's Debian suites (bookworm, -updates, -security), main only ---
mapfile -t sources < <(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' \
    'Identifier: Packages' 'Architecture: amd64' 'Component: main' |
    awk -v s="$SUITE" '$2 == s || $2 == s "-updates" || $2 == s "-security"' | sort -u)
mirror=$(printf '%s\n' "${sources[@]}" | awk -v s="$SUITE" '$2 == s { print $1; exit }')
[[ -n $mirror ]] || die "no '$SUITE main' source in the host's apt sources (run apt-get update?)"

mapfile -t packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$HERE/packages.txt")

mkdir -p "$OUT"
say "debootstrap $SUITE from $mirror"
debootstrap --variant=minbase "$SUITE" "$ROOTFS" "$mirror" > "$OUT/debootstrap.log" 2>&1 ||
    { tail -n 30 "$OUT/debootstrap.log" >&2; die "debootstrap failed (log: $OUT/debootstrap.log)"; }

printf 'deb %s main\n' "${sources[@]}" > "$ROOTFS/etc/apt/sources.list"
cat > "$ROOTFS/etc/apt/apt.conf.d/90xpv" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Languages "none";
EOF
cat > "$ROOTFS/etc/dpkg/dpkg.cfg.d/90xpv-nodoc" <<'EOF'
path-exclude=/usr/share/doc/*
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
EOF
# No service may start inside the chroot.
printf '#!/bin/sh\nexit 101\n' > "$ROOTFS/usr/sbin/policy-rc.d"
chmod 755 "$ROOTFS/usr/sbin/policy-rc.d"

chroot_mount proc proc
chroot_mount sysfs sys
say "apt-get install ${#packages[@]} packages"
# INITRD=No: skip Debian's initramfs; the harness makes its own below.
chroot "$ROOTFS" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive INITRD=No \
    sh -c 'apt-get -q update && apt-get -q -y install "$@" && apt-get clean' apt "${packages[@]}" \
    > "$OUT/apt.log" 2>&1 ||
    { tail -n 30 "$OUT/apt.log" >&2; die "apt-get install in the image failed (log: $OUT/apt.log)"; }
chroot "$ROOTFS" dpkg-query -W -f '${Package} ${Version}\n' > "$OUT/manifest.txt"
unmount_all
rm -f "$ROOTFS/usr/sbin/policy-rc.d"
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/boot/initrd.img-*

# --- trim what DPDK's EAL autoloads ---
# Debian keeps the drivers' real files (librte_X.so.23.0) in the plugin directory pmds-23.0,
# which is also the RUNPATH of the DPDK programs, and EAL loads every *.so and *.so.23.0 there.
# The real files move to drivers-23.0; pmds-23.0 keeps the SONAME links (librte_X.so.23, which
# the dynamic linker needs and EAL ignores) and the *.so links of the autoloaded drivers only.
pmd_dirs=("$ROOTFS"/usr/lib/x86_64-linux-gnu/dpdk/pmds-*)
[[ ${#pmd_dirs[@]} == 1 && -d ${pmd_dirs[0]} ]] || die "expected one DPDK driver directory, found: ${pmd_dirs[*]}"
pmd_dir=${pmd_dirs[0]}
abi=${pmd_dir##*/pmds-}
store=${pmd_dir%/*}/drivers-$abi
mkdir -p "$store"
for f in "$pmd_dir"/librte_*.so."$abi"; do
    base=${f##*/}
    name=${base#librte_}
    name=${name%%.so*}
    mv "$f" "$store/"
    ln -sfn "../drivers-$abi/$base" "$pmd_dir/${base%.*}"
    [[ " ${DPDK_AUTOLOAD_DRIVERS[*]} " == *" $name "* ]] || rm -f "$pmd_dir/librte_$name.so"
done
for l in "$ROOTFS"/usr/lib/x86_64-linux-gnu/librte_*.so."$abi"; do
    target=$(readlink "$l") || continue
    [[ $target == dpdk/pmds-"$abi"/* ]] && ln -sfn "dpdk/drivers-$abi/${target##*/}" "$l"
done
say "DPDK autoloads: $(cd "$pmd_dir" && ls -- *.so | sed 's/^librte_//; s/\.so$//' | tr '\n' ' ')"

# --- harness files in the image ---
install -m 755 "$HERE/dom0-init" "$ROOTFS/usr/sbin/xpv-dom0-init"
install -m 755 "$HERE/domu-init" "$ROOTFS/usr/sbin/xpv-domu-init"
install -D -m 644 "$HERE/init-common.sh" "$ROOTFS/usr/lib/xpv/init-common.sh"
mkdir -p "$ROOTFS/xpv" "$ROOTFS/var/log/xen/console"
# Kernel netfront must never bind a vif by itself: the checks load it explicitly when they want it
# (an explicit 'modprobe xen-netfront' ignores blacklists; nothing runs udev anyway).
echo 'blacklist xen-netfront' > "$ROOTFS/etc/modprobe.d/xpv-no-netfront.conf"
# xenconsoled keeps each domU's console in /var/log/xen/console/guest-NAME.log (dom0 streams it).
echo 'XENCONSOLED_ARGS="--log=guest --log-dir=/var/log/xen/console"' >> "$ROOTFS/etc/default/xen"
: > "$ROOTFS/etc/fstab"

# --- boot files ---
kvers=("$ROOTFS"/lib/modules/*)
[[ ${#kvers[@]} == 1 && -d ${kvers[0]} ]] || die "expected exactly one kernel in the image, found: ${kvers[*]##*/}"
kver=${kvers[0]##*/}
cp "$ROOTFS/boot/vmlinuz-$kver" "$OUT/vmlinuz"
xen_gz=$(ls "$ROOTFS"/boot/xen-4.17*-amd64.gz 2>/dev/null | head -n 1)
[[ -n $xen_gz ]] || die "no /boot/xen-4.17*-amd64.gz in the image"
zcat "$xen_gz" > "$OUT/xen.elf"

say "initramfs for kernel $kver"
ird=$OUT/initramfs
mkdir -p "$ird"/{bin,dev,proc,sys,newroot,modules}
cp "$ROOTFS/usr/bin/busybox" "$ird/bin/busybox"
install -m 755 "$HERE/initramfs-init" "$ird/init"
mknod "$ird/dev/console" c 5 1
: > "$ird/modules/order"
for m in "${INITRAMFS_MODULES[@]}"; do
    while read -r kind path _; do
        [[ $kind == insmod ]] || continue              # "builtin NAME": nothing to load
        [[ $path == "$ROOTFS"/* ]] || path=$ROOTFS$path
        name=$(basename "$path"); name=${name%%.ko*}.ko
        grep -qxF "$name" "$ird/modules/order" && continue
        case $path in
            *.ko.xz) xz -dc "$path" > "$ird/modules/$name" ;;
            *.ko.zst) zstd -qdc "$path" > "$ird/modules/$name" ;;
            *.ko.gz) gzip -dc "$path" > "$ird/modules/$name" ;;
            *) cp "$path" "$ird/modules/$name" ;;
        esac
        echo "$name" >> "$ird/modules/order"
    done < <(modprobe -d "$ROOTFS" -S "$kver" --show-depends "$m")
done
say "initramfs modules: $(tr '\n' ' ' < "$ird/modules/order")"
(cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 > "$OUT/initrd.img"
cp "$OUT/initrd.img" "$ROOTFS/boot/xpv-initrd.img"
rm -rf "$ird"

# --- the root filesystem image: contents plus 1 GiB of room for what the guests write ---
used_mb=$(du -sm "$ROOTFS" | cut -f1)
size_mb=$((used_mb * 5 / 4 + 1024))
say "root.img: ${used_mb} MiB of files in a ${size_mb} MiB ext4"
# Inode tables and journal zeroed now: otherwise every boot's ext4lazyinit thread writes them
# again, in dom0 and in the domU, through the emulated disks.
mke2fs -q -t ext4 -L xpv-root -E lazy_itable_init=0,lazy_journal_init=0 \
    -d "$ROOTFS" "$OUT/root.img" "${size_mb}M" > /dev/null
rm -rf --one-file-system "$ROOTFS"
say "done"
