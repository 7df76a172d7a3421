#!/usr/bin/env bash
# tests/e2e/uring.sh PROGRAM TEST [ARGS...]: run one end-to-end test with
# every mount on FUSE-over-io_uring (ZONEFUSE_TRANSPORT=uring), so that the
# suites cover both transports. SKIP (77) with the reason where this
# kernel does not have it on; scripts/test.sh turns it on where it may.
p=/sys/module/fuse/parameters/enable_uring
if [ ! -e "$p" ]; then
	echo "SKIP: this kernel has no FUSE-over-io_uring ($p is missing): the test runs on /dev/fuse only"
	exit 77
fi
v=$(<"$p")
case $v in
Y | 1) ;;
*)
	echo "SKIP: FUSE-over-io_uring is off ($p is $v; scripts/test.sh turns it on)"
	exit 77
	;;
esac
export ZONEFUSE_TRANSPORT=uring
exec "$@"
