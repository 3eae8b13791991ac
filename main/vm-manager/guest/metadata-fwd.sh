#!/bin/sh
# Run by QEMU (guestfwd cmd) once per guest connection to 169.254.169.254:80, before any Node
# process: takes one of <max> per-VM slots (flock on <slots-dir>/md-slot.N) and runs the proxy
# while holding it. With every slot busy the connection is closed at once, so a guest holding
# many connections costs this small shell and flock, never a Node process per connection.
#   metadata-fwd.sh <slots-dir> <max> <proxy argv...>
dir=$1
max=$2
shift 2
i=1
while [ "$i" -le "$max" ]; do
  flock -n -E 75 "$dir/md-slot.$i" "$@"
  rc=$?
  [ "$rc" -ne 75 ] && exit "$rc"
  i=$((i + 1))
done
exit 0
