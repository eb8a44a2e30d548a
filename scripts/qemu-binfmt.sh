#!/usr/bin/env bash
# qemu-binfmt.sh registers Debian's qemu-user emulator for aarch64 with the
# kernel's binfmt_misc, so that linux/arm64 binaries run on this machine as
# if they were its own: make test-arm64 needs it for the arm64 binaries its
# tests build and start (drama, the engine plugins, the stand-in engine).
# As root: loads and mounts binfmt_misc where the kernel has it and it is
# not mounted, then registers the entry unless one for aarch64 is there.
#
#   scripts/qemu-binfmt.sh           # register (root)
#   scripts/qemu-binfmt.sh --check   # say what is missing, exit 1 if anything is
set -euo pipefail

dir=/proc/sys/fs/binfmt_misc
# An ELF header of a 64-bit little-endian aarch64 executable (e_machine
# 183), and the bits of it that must match: those of qemu's own
# qemu-binfmt-conf.sh.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
hexmagic=7f454c460201010000000000000000000200b700

# registered reports whether an enabled binfmt_misc entry runs aarch64
# executables (ours, or one qemu-user-binfmt or systemd-binfmt made).
registered() {
	[ -e "$dir/register" ] || return 1
	grep -qx enabled "$dir/status" 2>/dev/null || return 1
	local f
	for f in "$dir"/*; do
		case ${f##*/} in register | status) continue ;; esac
		if grep -qx enabled "$f" 2>/dev/null && grep -qx "magic $hexmagic" "$f" 2>/dev/null; then
			return 0
		fi
	done
	return 1
}

qemu=$(command -v qemu-aarch64 || true)
if [ "${1:-}" = --check ]; then
	ok=0
	if [ -z "$qemu" ]; then
		echo "qemu-binfmt: no qemu-aarch64 on PATH: install Debian's qemu-user (apt-get install qemu-user)" >&2
		ok=1
	fi
	if ! registered; then
		echo "qemu-binfmt: binfmt_misc runs no aarch64 executables here: run scripts/qemu-binfmt.sh as root" >&2
		ok=1
	fi
	exit $ok
fi

if [ -z "$qemu" ]; then
	echo "qemu-binfmt: no qemu-aarch64 on PATH: install Debian's qemu-user (apt-get install qemu-user)" >&2
	exit 1
fi
if registered; then
	echo "qemu-binfmt: aarch64 already registered"
	exit 0
fi
if [ ! -e "$dir/register" ]; then
	modprobe binfmt_misc 2>/dev/null || true
	if ! grep -qw binfmt_misc /proc/filesystems; then
		echo "qemu-binfmt: this kernel has no binfmt_misc: arm64 binaries cannot run here" >&2
		exit 1
	fi
	mount -t binfmt_misc binfmt_misc "$dir"
fi
grep -qx enabled "$dir/status" || echo 1 >"$dir/status"
if [ -e "$dir/qemu-aarch64" ]; then
	echo -1 >"$dir/qemu-aarch64" # a disabled or different entry of that name
fi
# F: the kernel opens the interpreter now, so it is found in any mount
# namespace or chroot later.
printf '%s' ":qemu-aarch64:M::$magic:$mask:$qemu:F" >"$dir/register"
echo "qemu-binfmt: registered $qemu for aarch64 executables"
