#!/bin/busybox sh
# POV Desk test image: PID 1 and guest agent (busybox sh). It brings up the network to the
# metadata service, quotes the initrd stage, fetches user-data, quotes the ready stage and
# reports READY, then offers a shell on the serial line (and over SSH, for the user-data's keys).
# Every step logs one "povdesk-agent:" line on the serial console.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export TPM2TOOLS_TCTI=device:/dev/tpmrm0
MD=169.254.169.254
say() { echo "povdesk-agent: $* (t=$(cut -d " " -f 1 /proc/uptime))"; }

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /sys/kernel/security /run/povdesk /tmp
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null

for m in $(cat /etc/povdesk/modules); do
  insmod "/lib/modules/$m.ko" || say "insmod $m failed"
done

# started early: a stop may come at any time. power button (QMP system_powerdown) -> clean poweroff
if [ -f /lib/modules/button.ko ]; then
  mkdir -p /etc/acpi/PWRF
  printf '#!/bin/sh\npoweroff -f\n' > /etc/acpi/PWRF/00000080
  chmod +x /etc/acpi/PWRF/00000080
  mkdir -p /var/log
  acpid -c /etc/acpi -l /run/acpid.log || say "acpid did not start"
fi
ip link set lo up
ip link set eth0 up
ip addr add 169.254.169.15/24 dev eth0
ip route add default via 169.254.169.2
say "network up $(ip -o -4 addr show eth0 | awk '{print $4}')"

# eth1: the VM's network (the manager's switch, shared with the other VMs on it): its address,
# name server and search domain come by DHCP; no default route (eth0's stays).
if [ -e /sys/class/net/eth1 ]; then
  cat > /etc/povdesk/dhcp.sh <<'EOF'
#!/bin/sh
case "$1" in
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    : > /etc/resolv.conf
    [ -n "$domain" ] && echo "search $domain" >> /etc/resolv.conf
    for s in $dns; do echo "nameserver $s" >> /etc/resolv.conf; done
    ;;
esac
EOF
  chmod +x /etc/povdesk/dhcp.sh
  ip link set eth1 up
  if udhcpc -i eth1 -n -q -t 10 -T 1 -s /etc/povdesk/dhcp.sh > /tmp/udhcpc.log 2>&1; then
    say "lan up $(ip -o -4 addr show eth1 | awk '{print $4}')"
  else
    say "lan: no DHCP answer on eth1: $(tail -n 2 /tmp/udhcpc.log | tr '\n' ' ')"
  fi
fi

# eth2 (only with the network's Internet access): the VM's own passt, NAT through the host; its
# address and the default route by DHCP (names still come from the network's gateway on eth1).
if [ -e /sys/class/net/eth2 ]; then
  cat > /etc/povdesk/dhcp-out.sh <<'EOF'
#!/bin/sh
case "$1" in
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/${mask:-24}" dev "$interface"
    for r in $router; do ip route replace default via "$r" dev "$interface"; break; done
    ;;
esac
EOF
  chmod +x /etc/povdesk/dhcp-out.sh
  ip link set eth2 up
  if udhcpc -i eth2 -n -q -t 10 -T 1 -s /etc/povdesk/dhcp-out.sh > /tmp/udhcpc-out.log 2>&1; then
    say "internet up $(ip -o -4 addr show eth2 | awk '{print $4}')"
  else
    say "internet: no DHCP answer on eth2"
  fi
fi

# http METHOD PATH [BODYFILE]: sets STATUS and writes the body to /tmp/resp.body
http() {
  if [ -n "$3" ]; then
    { printf '%s %s HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n' "$1" "$2" "$MD" "$(wc -c < "$3")"; cat "$3"; } | nc "$MD" 80 > /tmp/resp
  else
    printf '%s %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$2" "$MD" | nc "$MD" 80 > /tmp/resp
  fi
  STATUS=$(head -n 1 /tmp/resp | cut -d ' ' -f 2)
  sed '1,/^\r*$/d' /tmp/resp > /tmp/resp.body
}

# guest-quote.sh extends PCR 11 (phase words) and, at the ready stage, PCR 13 (the user-data).
quote() {
  if [ -f /etc/povdesk/guest-quote.sh ]; then
    ATTEST_PCRS=$(cat "/etc/povdesk/pcrs.$1") sh /etc/povdesk/guest-quote.sh "$1" "$MD" 80 > /tmp/quote.out 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then say "quote $1 verified"; QUOTED=1; else say "quote $1 failed (exit $rc): $(tail -n 2 /tmp/quote.out | tr '\n' ' ')"; fi
  else
    say "quote $1 skipped: no guest-quote.sh in this image"
  fi
}

if [ -e /dev/tpmrm0 ]; then say "tpm present"; else say "no tpm"; fi
QUOTED=0
quote initrd

tries=0
while :; do
  http GET /skytap/vms/self/user_data
  case "$STATUS" in
    200) cp /tmp/resp.body /run/povdesk/user-data; break ;;
    204) : > /run/povdesk/user-data; break ;;
  esac
  tries=$((tries + 1))
  [ $((tries % 10)) -eq 1 ] && say "user-data not released yet (status ${STATUS:-none}), retrying"
  # a quote lost to a manager restart (nonces are in memory) is sent again
  [ "$STATUS" = 503 ] && [ "$QUOTED" = 0 ] && [ $((tries % 5)) -eq 0 ] && quote initrd
  sleep 1
done
say "user-data $(wc -c < /run/povdesk/user-data) bytes sha256 $(sha256sum /run/povdesk/user-data | cut -d ' ' -f 1)"

# SSH (dropbear) on port 22, which vm-manager forwards from the host's 127.0.0.1: root signs in
# with the public keys the user-data lists, one per line; no keys, no sign-in (no passwords).
mkdir -p /dev/pts /etc/dropbear /root/.ssh
mount -t devpts devpts /dev/pts
echo 'root:x:0:0:root:/root:/bin/sh' > /etc/passwd
echo 'root:x:0:' > /etc/group
chmod 700 /root /root/.ssh
# The manager's own key first (exec), then the create request's keys, then the user-data's.
: > /root/.ssh/authorized_keys
http GET /povdesk/ssh-authorized-keys
[ "$STATUS" = 200 ] && grep -E '^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp[0-9]+) ' /tmp/resp.body >> /root/.ssh/authorized_keys
grep -E '^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp[0-9]+) ' /run/povdesk/user-data >> /root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
# The host key is the VM's own, kept by the manager and served after attestation: the same every
# boot, pre-trusted by the app. A manager without one (404) leaves dropbear to make a key (-R).
HOSTKEY=-R
http GET /povdesk/ssh-host-key
if [ "$STATUS" = 200 ] && base64 -d /tmp/resp.body > /etc/dropbear/dropbear_ed25519_host_key 2>/dev/null; then
  chmod 600 /etc/dropbear/dropbear_ed25519_host_key
  HOSTKEY="-r /etc/dropbear/dropbear_ed25519_host_key"
  say "ssh host key from the manager"
fi
if dropbear $HOSTKEY -s -p 22 2> /tmp/dropbear.err; then
  say "ssh server up, $(wc -l < /root/.ssh/authorized_keys) key(s)"
else
  say "ssh server failed: $(tr '\n' ' ' < /tmp/dropbear.err)"
fi

if [ -s /run/povdesk/user-data ]; then export ATTEST_USER_DATA_FILE=/run/povdesk/user-data; fi
quote ready
if [ -e /dev/tpmrm0 ]; then
  tpm2_pcrread sha256:0,1,2,3,4,5,6,7,8,9,11,13 2>/dev/null | sed -n 's/^ *\([0-9]*\) *: *0x\([0-9A-Fa-f]*\)$/povdesk-agent: pcr \1 \2/p'
fi
say "READY"
echo '{"stage":"ready"}' > /tmp/report.json
http POST /report /tmp/report.json
[ "$STATUS" = 204 ] || say "the manager did not take the READY report (status ${STATUS:-none})"

# After READY the serial line offers a root shell (the interactive console; "Type into console").
# cttyhack makes ttyS0 the shell's controlling tty so Ctrl-C works; a shell that exits is restarted.
export PS1='povdesk-test# ' HOME=/root
while :; do
  cd /root
  setsid cttyhack sh
  sleep 1
done
